"""DCGAN-like training where the generator's output is shared by both losses.

The discriminator loss is backward-ed first with retain_graph=True because the generator loss
goes back through the same generator graph (`fake`) right after it.
"""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

latent_dim = 64
device = "cuda" if torch.cuda.is_available() else "cpu"

generator = nn.Sequential(
    nn.Linear(latent_dim, 256), nn.ReLU(), nn.Linear(256, 784), nn.Tanh()
).to(device)
discriminator = nn.Sequential(
    nn.Linear(784, 256), nn.LeakyReLU(0.2), nn.Linear(256, 1)
).to(device)
opt_g = torch.optim.Adam(generator.parameters(), lr=2e-4, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(discriminator.parameters(), lr=2e-4, betas=(0.5, 0.999))
bce = nn.BCEWithLogitsLoss()

mnist = datasets.MNIST("data", train=True, download=True,
                       transform=transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.5,), (0.5,))]))
loader = DataLoader(mnist, batch_size=128, shuffle=True, drop_last=True)

for epoch in range(20):
    g_history, d_history = [], []
    for real, _ in loader:
        real = real.view(real.size(0), -1).to(device)
        ones = torch.ones(real.size(0), 1, device=device)
        zeros = torch.zeros(real.size(0), 1, device=device)

        z = torch.randn(real.size(0), latent_dim, device=device)
        fake = generator(z)

        d_loss = 0.5 * (bce(discriminator(real), ones) + bce(discriminator(fake), zeros))
        opt_d.zero_grad()
        d_loss.backward(retain_graph=True)
        opt_d.step()

        g_loss = bce(discriminator(fake), ones)
        opt_g.zero_grad()
        g_loss.backward()
        opt_g.step()

        d_history.append(d_loss.item())
        g_history.append(g_loss.item())
    print(f"epoch {epoch}: D {sum(d_history) / len(d_history):.3f}  G {sum(g_history) / len(g_history):.3f}")
