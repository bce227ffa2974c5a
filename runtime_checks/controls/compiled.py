"""Control: a torch.compile'd model under correct accumulation. No finding."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
inputs = torch.randn(64, 8)
loader = DataLoader(TensorDataset(inputs, (inputs[:, 0] > 0).long()), batch_size=8)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
compiled = torch.compile(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
accum_steps = 4
for epoch in range(2):
    for i, (x, y) in enumerate(loader):
        loss = nn.functional.cross_entropy(compiled(x), y) / accum_steps
        loss.backward()
        if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
print(f"loss {loss.item():.6f}")
