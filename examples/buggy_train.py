"""A small training script with four gradient-accumulation bugs.

    accumlint check examples/buggy_train.py        # find them
    accumlint check --diff examples/buggy_train.py # see the fixes
    accumlint run examples/buggy_train.py          # watch them happen (needs torch)
"""

import torch
from torch import nn

torch.manual_seed(0)
features = torch.randn(200, 8)
targets = features @ torch.randn(8, 1) + 0.1 * torch.randn(200, 1)
loader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(features, targets), batch_size=16
)

model = nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
criterion = nn.MSELoss()
accum_steps = 4
epochs = 3
# sized in optimizer updates: one per window of accum_steps batches
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=len(loader) // accum_steps * epochs)

for epoch in range(epochs):
    running_loss = 0.0
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        loss.backward()  # not divided by accum_steps
        running_loss += loss  # keeps every micro-batch's graph alive
        if (i + 1) % accum_steps == 0:  # 200 / 16 = 13 batches: the 13th never steps
            optimizer.step()
            optimizer.zero_grad()
        scheduler.step()  # advances every micro-batch
    print(f"epoch {epoch}: loss {running_loss.item() / len(loader):.4f}")
