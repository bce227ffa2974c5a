# accumlint corpus: a buggy real-style training script. Expected findings (code@row):
# expect: ACC007@21
# expect: ACC008@29
"""An AMP image classifier whose zero_grad and scaler.update run on every micro-batch."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader

from cifar import train_set

accum_steps = 4
device = "cuda"
model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 512), nn.ReLU(), nn.Linear(512, 10)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
scaler = torch.amp.GradScaler("cuda")
loader = DataLoader(train_set, batch_size=64, shuffle=True)

for epoch in range(10):
    for i, (images, labels) in enumerate(loader):
        optimizer.zero_grad()
        with torch.autocast("cuda", dtype=torch.float16):
            loss = F.cross_entropy(model(images.to(device)), labels.to(device)) / accum_steps
        scaler.scale(loss).backward()
        if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
            scaler.unscale_(optimizer)
            nn.utils.clip_grad_norm_(model.parameters(), 2.0)
            scaler.step(optimizer)
        scaler.update()
