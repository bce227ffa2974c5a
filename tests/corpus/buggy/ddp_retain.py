# accumlint corpus: a buggy real-style training script. Expected findings (code@row):
# expect: ACC006@32
# expect: ACC009@32
"""DDP accumulation without no_sync, and a retain_graph left over from debugging."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

from toy_data import RegressionSet

accum_steps = 4
dist.init_process_group("nccl")
rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(rank)
train_set = RegressionSet()
sampler = DistributedSampler(train_set)
loader = DataLoader(train_set, batch_size=32, sampler=sampler)
model = DDP(nn.Linear(64, 1).cuda(rank), device_ids=[rank])
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
criterion = nn.MSELoss()

for epoch in range(5):
    sampler.set_epoch(epoch)
    for i, (x, y) in enumerate(loader):
        x, y = x.cuda(rank), y.cuda(rank)
        loss = criterion(model(x), y) / accum_steps
        loss.backward(retain_graph=True)
        if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
dist.destroy_process_group()
