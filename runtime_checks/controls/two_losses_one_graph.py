"""Control: two losses backpropagated through one shared graph (retain_graph on the first),
with accumulation over 2 micro-batches, both losses divided. No finding."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
inputs = torch.randn(64, 8)
loader = DataLoader(TensorDataset(inputs, (inputs[:, 0] > 0).long()), batch_size=8)
trunk = nn.Sequential(nn.Linear(8, 16), nn.Tanh())
head_a, head_b = nn.Linear(16, 2), nn.Linear(16, 1)
params = [*trunk.parameters(), *head_a.parameters(), *head_b.parameters()]
optimizer = torch.optim.SGD(params, lr=0.1)
accum_steps = 2
for epoch in range(2):
    for i, (x, y) in enumerate(loader):
        features = trunk(x)
        loss_a = nn.functional.cross_entropy(head_a(features), y) / accum_steps
        loss_b = head_b(features).pow(2).mean() / accum_steps
        loss_a.backward(retain_graph=True)
        loss_b.backward()
        if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
print(f"loss {loss_a.item():.6f} {loss_b.item():.6f}")
