"""A trainer's loop over rows made from pickles: batches of BATCH rows of 784 uniform random
floats made from 36-row frames (the size the Spark feed forwards), each batch dropped when the
next one is made (`batch = take()`), 20,000 rows a pass, best of 5 passes; minor page faults
per row. argv[1]: BATCH. Run with HYDROFEED_ARENA_CACHE_MB=0 (off) and unset (on)."""
import pickle, random, resource, sys, time

import pyarrow as pa
from hydrofeed import _native

BATCH = int(sys.argv[1]); ROWS = 20000
rng = random.Random(1)
rows = [([rng.random() for _ in range(784)], i % 10) for i in range(720)]
frames = [pa.array([pickle.dumps(rows[k:k + 36], protocol=5)], pa.binary()) for k in range(0, 720, 36)]
del rows


def one_pass():
    batch, pending, made = None, [], 0
    while made < ROWS:
        while len(pending) < BATCH:
            pending.extend(_native.unpickle_frame(frames[(made // 36) % len(frames)], True))
            made += 36
        batch, pending = pending[:BATCH], pending[BATCH:]  # the last batch dropped here
        assert len(batch[0][0]) == 784
    return made


best = flt = None
for _ in range(5):
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t = time.perf_counter(); n = one_pass(); s = time.perf_counter() - t
    f = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
    if best is None or s < best:
        best, flt = s, f / n
print(f"batch {BATCH} cache {_native.arena_cache()[0]}: {best / n * 1e6:.2f} us/row, {flt:.2f} faults/row")
