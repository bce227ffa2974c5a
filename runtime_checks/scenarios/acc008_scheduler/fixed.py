"""ACC008 fixed: the scheduler steps in the step block."""
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
epochs = 3
# The schedule is sized in optimizer updates: one per window of accum_steps batches.
updates = len(loader) // accum_steps * epochs
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=updates)

for epoch in range(epochs):
    for i, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        loss = criterion(model(x), y) / accum_steps
        loss.backward()
        if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
    print(f"epoch {epoch + 1}, loss: {loss.item():.6f}")
