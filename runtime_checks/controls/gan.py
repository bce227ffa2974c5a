"""Control: a GAN with two optimizers, the generator's loss backpropagating through the
discriminator; each network zeroes its own gradients. Correct: no finding."""
import torch
import torch.nn as nn

torch.manual_seed(0)
real_data = torch.randn(256, 2) * 0.5 + 1.0
G = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
D = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)
opt_d = torch.optim.Adam(D.parameters(), lr=1e-3)
bce = nn.BCEWithLogitsLoss()
for step in range(30):
    real = real_data[torch.randint(256, (16,))]
    fake = G(torch.randn(16, 4))
    D.zero_grad()
    loss_d = bce(D(real), torch.ones(16, 1)) + bce(D(fake.detach()), torch.zeros(16, 1))
    loss_d.backward()
    opt_d.step()
    G.zero_grad()
    loss_g = bce(D(fake), torch.ones(16, 1))
    loss_g.backward()
    opt_g.step()
print(f"loss_d {loss_d.item():.6f} loss_g {loss_g.item():.6f}")
