"""Seed 001: linear regression, k = 4 micro-batches of 10 against one batch of 40.

The accumulated run must end with the same weights as the batch-of-40 run; it does not,
because each micro-batch loss enters backward undivided."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
features = torch.randn(200, 2)
labels = features @ torch.tensor([[-2.0], [3.4]]) + 4.2 + 0.01 * torch.randn(200, 1)
dataset = TensorDataset(features, labels)


def make_model():
    net = nn.Sequential(nn.Linear(2, 1))
    nn.init.zeros_(net[0].weight)
    nn.init.zeros_(net[0].bias)
    return net


# one batch of 40
reference = make_model()
optimizer = torch.optim.SGD(reference.parameters(), lr=0.01)
criterion = nn.MSELoss()
for epoch in range(3):
    for X, y in DataLoader(dataset, batch_size=40, shuffle=False):
        loss = criterion(reference(X), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

# four micro-batches of 10
net = make_model()
optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
data_iter = DataLoader(dataset, batch_size=10, shuffle=False)
accum_iter = 4
for epoch in range(3):
    epoch_loss = []
    for batch_idx, (X, y) in enumerate(data_iter):
        output = net(X)
        loss = criterion(output, y)
        loss.backward()
        if ((batch_idx + 1) % accum_iter == 0) or (batch_idx + 1 == len(data_iter)):
            optimizer.step()
            optimizer.zero_grad()
        epoch_loss.append(loss.item())
    print(f"epoch {epoch + 1}, loss: {sum(epoch_loss) / len(epoch_loss):.6f}")

gap = (net[0].weight - reference[0].weight).abs().max().item()
print(f"max |w_accumulated - w_batch40| = {gap:.2e}")
