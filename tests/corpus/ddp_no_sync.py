"""DistributedDataParallel with accumulation: only the micro-step that ends a window syncs."""
import os
from contextlib import nullcontext

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

from toy_data import RegressionSet

accum_steps = 8
epochs = 10

dist.init_process_group("nccl")
rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(rank)

train_set = RegressionSet()
sampler = DistributedSampler(train_set)
loader = DataLoader(train_set, batch_size=32, sampler=sampler, pin_memory=True)
model = DistributedDataParallel(nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 1)).cuda(rank), device_ids=[rank])
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs * len(loader) // accum_steps)
criterion = nn.MSELoss()

for epoch in range(epochs):
    sampler.set_epoch(epoch)
    model.train()
    epoch_loss = torch.zeros((), device=rank)
    for i, (x, y) in enumerate(loader):
        x, y = x.cuda(rank, non_blocking=True), y.cuda(rank, non_blocking=True)
        boundary = (i + 1) % accum_steps == 0 or (i + 1) == len(loader)
        with (nullcontext() if boundary else model.no_sync()):
            prediction = model(x)
            loss = criterion(prediction, y) / accum_steps
            loss.backward()
        epoch_loss += loss.detach()
        if boundary:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
    dist.all_reduce(epoch_loss)
    if rank == 0:
        print(f"epoch {epoch}: loss {epoch_loss.item() / dist.get_world_size():.4f}")

dist.destroy_process_group()
