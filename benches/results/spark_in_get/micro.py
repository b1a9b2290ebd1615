import pickle, random, time, sys, pyarrow as pa
sys.path.insert(0, sys.argv[1])
from hydrofeed import _native
rng=random.Random(1)
rows=[([rng.random() for _ in range(784)], i%10) for i in range(2000)]
blobs=[pickle.dumps(rows[k:k+16], protocol=5) for k in range(0,2000,16)]
col=pa.array(blobs, pa.binary())
out=[]
for name, f in [("native", lambda: _native.unpickle_frame(col, True)), ("pickle", lambda: [r for b in blobs for r in pickle.loads(b)])]:
    best=1e9; bm=1e9
    for _ in range(15):
        t=time.perf_counter(); x=f(); t1=time.perf_counter(); del x; t2=time.perf_counter(); best=min(best, t2-t); bm=min(bm,t1-t)
    out.append(f"{name} {best/2000*1e6:.2f} us/row make+free ({bm/2000*1e6:.2f} make)")
print(sys.argv[1].split('/')[2], *out)
