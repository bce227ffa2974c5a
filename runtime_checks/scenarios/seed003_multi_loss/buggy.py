"""Seed 003: a model with several outputs whose losses are computed in a loop. Calling backward
on each loss failed ("backward through the graph a second time"); the losses are now summed
into one total, but the `retain_graph=True` added while chasing that error stayed: every
graph is kept after its only backward."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
inputs = torch.randn(96, 16)
targets = torch.stack([(inputs[:, j] > 0).long() for j in range(3)], dim=1)
loader = DataLoader(TensorDataset(inputs, targets), batch_size=8)


class MultiHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(16, 32), nn.ReLU())
        self.heads = nn.ModuleList(nn.Linear(32, 2) for _ in range(3))

    def forward(self, x):
        features = self.trunk(x)
        return [head(features) for head in self.heads]


model = MultiHead().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
criterion = nn.CrossEntropyLoss()
accum_steps = 2

for epoch in range(3):
    for i, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        outputs = model(x)
        losses = []
        for j, output in enumerate(outputs):
            losses.append(criterion(output, y[:, j]))
        total_loss = sum(losses) / accum_steps
        total_loss.backward(retain_graph=True)
        if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
    print(f"epoch {epoch + 1}, loss: {total_loss.item():.6f}")
