"""Control: DistributedDataParallel (gloo, CPU) with no_sync() on the non-final micro-steps and
a divided loss. Run with `torchrun --nproc_per_node 2 -m accumlint.run ddp_no_sync.py`, or
with ACC_DDP_BUGGY=1 to drop the division (then ACC001 is expected), or with ACC_DDP_SYNC=1 to drop
no_sync() (then ACC009 is expected: four all-reduces per window). No finding otherwise."""
import contextlib
import gc
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
data = torch.randn(64, 8, generator=torch.Generator().manual_seed(rank))
labels = (data[:, 0] > 0).long()
accum_steps = 4
divide = os.environ.get("ACC_DDP_BUGGY") != "1"
sync_every_micro_step = os.environ.get("ACC_DDP_SYNC") == "1"
for i in range(16):
    x, y = data[4 * i:4 * i + 4], labels[4 * i:4 * i + 4]
    final = (i + 1) % accum_steps == 0
    with contextlib.nullcontext() if final or sync_every_micro_step else model.no_sync():
        loss = nn.functional.cross_entropy(model(x), y)
        (loss / accum_steps if divide else loss).backward()
    if final:
        optimizer.step()
        optimizer.zero_grad()
print(f"rank {rank} loss {loss.item():.6f}")
dist.barrier()  # neither rank tears gloo down while the other still talks to it
# DDP's reducer (and the last graph's hooks into it) hold on to the process group: freeing them
# before the group goes avoids gloo's abort at interpreter exit ("terminate called without an
# active exception": about 1 plain torchrun in 20 before, 0 in 70 after).
del model, optimizer, loss
gc.collect()
dist.destroy_process_group()
