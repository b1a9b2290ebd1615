"""Decoder alone: 2000 rows of (784 floats, int) in frames of 16-row pickled lists, made and
dropped, best of 15. argv[1]: the directory holding the `hydrofeed` package to time; argv[2]:
`mnist` (80% of pixels 0.0, the rest k/255, as normalised MNIST) or `random` (uniform [0, 1))."""
import pickle, random, sys, time

sys.path.insert(0, sys.argv[1])
import pyarrow as pa  # noqa: E402
from hydrofeed import _native  # noqa: E402

rng = random.Random(1)


def pixel() -> float:
    if sys.argv[2] == "random":
        return rng.random()
    return 0.0 if rng.random() < 0.8 else rng.randrange(1, 256) / 255.0


rows = [([pixel() for _ in range(784)], i % 10) for i in range(2000)]
blobs = [pickle.dumps(rows[k:k + 16], protocol=5) for k in range(0, 2000, 16)]
col = pa.array(blobs, pa.binary())
out = []
for name, f in [("decoder", lambda: _native.unpickle_frame(col, True)),
                ("pickle.loads", lambda: [r for b in blobs for r in pickle.loads(b)])]:
    best = bm = 1e9
    for _ in range(15):
        t = time.perf_counter(); x = f(); t1 = time.perf_counter(); del x; t2 = time.perf_counter()
        best, bm = min(best, t2 - t), min(bm, t1 - t)
    out.append(f"{name} {best / 2000 * 1e6:.2f} us/row made+dropped ({bm / 2000 * 1e6:.2f} made)")
print(sys.argv[1], sys.argv[2], *out)
