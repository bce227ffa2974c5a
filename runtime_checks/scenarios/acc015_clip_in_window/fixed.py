"""ACC015 fixed: the window's gradient is clipped once, in the step block, right before the step
(a norm measured with an infinite limit on every micro-step clips nothing)."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
inputs = torch.randn(128, 16)
labels = (inputs[:, :4].sum(dim=1) > 0).long() + (inputs[:, 4] > 1).long()
loader = DataLoader(TensorDataset(inputs, labels), batch_size=8)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 3)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
criterion = nn.CrossEntropyLoss()
accum_steps = 4
max_norm = 0.05

for epoch in range(3):
    for i, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        loss = criterion(model(x), y) / accum_steps
        loss.backward()
        partial_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), float("inf"))
        if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            optimizer.step()
            optimizer.zero_grad()
    print(f"epoch {epoch + 1}, loss: {loss.item():.6f}, grad norm: {grad_norm.item():.4f}")
