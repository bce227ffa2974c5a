"""Control: a BatchNorm + dropout CNN, 103 samples in micro-batches of 10 (the last one has 3),
k = 4 with the end-of-epoch clause, so the epoch's last window has 3 micro-batches. No finding."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
images = torch.randn(103, 1, 8, 8)
labels = (images.mean(dim=(1, 2, 3)) > 0).long()
loader = DataLoader(TensorDataset(images, labels), batch_size=10, shuffle=True)
model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                      nn.Dropout(0.1), nn.Linear(4 * 6 * 6, 2))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
accum_steps = 4
total = 0.0
for epoch in range(3):
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y) / accum_steps
        loss.backward()
        total += loss.item()
        if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
print(f"total {total:.6f}")
