"""Control: LBFGS with a closure that zeroes and runs backward inside the step. No finding."""
import torch
import torch.nn as nn

torch.manual_seed(0)
x = torch.randn(64, 3)
y = x @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.3
model = nn.Linear(3, 1)
optimizer = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=5)
criterion = nn.MSELoss()


def closure():
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    return loss


for step in range(8):
    loss = optimizer.step(closure)
print(f"loss {loss.item():.6f}")
