"""A torch DDP trainer for test_torch_ddp.py, run by `hydrofeed launch` with no arguments to
`init_process_group`: rank, world size and the store's address come from the launcher, as under
torchrun. Learns a target computed from the fed image (left half brighter than the right), so a
falling loss means the fed rows are right. Writes `rank-<r>.json` to `OUT`."""

import json
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.utils.data import DataLoader

import hydrofeed as hf
import hydrofeed.torch as ht

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
assert rank == int(os.environ["HYDROFEED_RANK"]) and world == int(os.environ["HYDROFEED_NUM_WORKERS"])
torch.manual_seed(0)  # the same initial weights on every rank (DDP also broadcasts them)
model = torch.nn.Sequential(torch.nn.Linear(784, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))
ddp = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.5)
feed = hf.DataFeed()
ds = ht.IterableDataset(feed)
losses, rows, ids = [], 0, []
for epoch in range(int(os.environ["HYDROFEED_EPOCHS"])):
    for b in DataLoader(ds, batch_size=None):
        x = b["image"]
        y = (x[:, :392].sum(1) > x[:, 392:].sum(1)).long()
        loss = F.cross_entropy(ddp(x), y)
        opt.zero_grad()
        loss.backward()  # all-reduces the gradients across the ranks: equal steps are required
        opt.step()
        losses.append(loss.item())
        rows += len(x)
        ids.extend(b["id"].tolist())
checksum = float(sum(p.double().sum() for p in model.parameters()))
with open(os.path.join(os.environ["OUT"], f"rank-{rank}.json"), "w") as f:
    json.dump({"rank": rank, "world": world, "steps": len(losses), "rows": rows, "ids": ids,
               "first": sum(losses[:10]) / 10, "last": sum(losses[-10:]) / 10,
               "checksum": checksum}, f)
dist.destroy_process_group()
