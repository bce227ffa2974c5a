"""Truncated BPTT: long sequences cut into chunks, the LSTM state detached after each update."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader

from sensor_data import LongSequences

chunk_len = 50
hidden_size = 128
device = "cuda" if torch.cuda.is_available() else "cpu"


class Forecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(input_size=6, hidden_size=hidden_size, num_layers=2, batch_first=True)
        self.out = nn.Linear(hidden_size, 1)

    def forward(self, x, state):
        features, state = self.lstm(x, state)
        return self.out(features), state


model = Forecaster().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.SmoothL1Loss()
loader = DataLoader(LongSequences(), batch_size=16, shuffle=True)

for epoch in range(30):
    chunk_losses = []
    for series, targets in loader:
        series, targets = series.to(device), targets.to(device)
        h = torch.zeros(2, series.size(0), hidden_size, device=device)
        c = torch.zeros(2, series.size(0), hidden_size, device=device)
        for start in range(0, series.size(1), chunk_len):
            x = series[:, start:start + chunk_len]
            y = targets[:, start:start + chunk_len]
            prediction, (h, c) = model(x, (h, c))
            loss = criterion(prediction, y)
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            optimizer.step()
            h, c = h.detach(), c.detach()
            chunk_losses.append(loss.item())
    print(f"epoch {epoch}: {sum(chunk_losses) / len(chunk_losses):.4f}")
