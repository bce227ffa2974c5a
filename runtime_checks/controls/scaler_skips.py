"""Control: float16 AMP whose GradScaler starts at a huge scale, so the first steps are skipped
on inf gradients (the optimizer's step never runs for them). Correct loop: no finding."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
inputs = torch.randn(96, 8)
loader = DataLoader(TensorDataset(inputs, (inputs[:, 0] > 0).long()), batch_size=8)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3)
scaler = torch.amp.GradScaler(device, init_scale=2.0 ** 40, growth_interval=1000)
accum_steps = 3
for epoch in range(2):
    for i, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        with torch.autocast(device, dtype=torch.float16):
            loss = nn.functional.cross_entropy(model(x), y) / accum_steps
        scaler.scale(loss).backward()
        if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
            scaler.unscale_(optimizer)
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            scheduler.step()
            optimizer.zero_grad()
print(f"scale {scaler.get_scale():.3g}")
