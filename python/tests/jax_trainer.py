"""A JAX trainer for test_jax.py under `hydrofeed launch --workers 2`: joins
`jax.distributed` with the launcher's coordinates, builds one global batch per step from every
process's rows, and computes on it with jit (a cross-process reduction). Writes
`rank-<r>.json` to `OUT`."""

import json
import os

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

import hydrofeed as hf
import hydrofeed.jax as hj

hj.initialize()
rank = jax.process_index()
assert rank == int(os.environ["HYDROFEED_RANK"]) and jax.process_count() == 2
mesh = Mesh(np.array(jax.devices()), ("data",))
sharding = NamedSharding(mesh, PartitionSpec("data"))
total = jax.jit(lambda x: x.sum())
steps, sums, ids = 0, [], []
for b in hj.global_batches(hf.DataFeed(), sharding):
    assert b["image"].shape == (2 * 50, 784) and b["image"].sharding == sharding
    sums.append(float(total(b["id"])))  # every process gets the global sum
    ids.extend(np.asarray(b["id"].addressable_data(0)).tolist())
    steps += 1
with open(os.path.join(os.environ["OUT"], f"rank-{rank}.json"), "w") as f:
    json.dump({"rank": rank, "steps": steps, "sums": sums, "ids": ids}, f)
jax.distributed.shutdown()
