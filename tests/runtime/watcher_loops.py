"""Small training loops for the watcher tests, each written as a user would (a unique module
name: tests/conftest.py exists too)."""

HEADER = """
import torch
import torch.nn as nn
torch.manual_seed(0)
"""

# The held-out shape of issue 12: a decoder carrying `h` token to token, each token loss
# back-propagated with retain_graph=True; h is re-initialised for every sequence.
DECODER_RETAIN = HEADER + """
vocab, hidden_size, T, k = 12, 16, 6, 2
src = torch.randint(vocab, (32, T))
tgt = (src + 1) % vocab
emb, cell, out = nn.Embedding(vocab, hidden_size), nn.GRUCell(hidden_size, hidden_size), nn.Linear(hidden_size, vocab)
opt = torch.optim.Adam([*emb.parameters(), *cell.parameters(), *out.parameters()], lr=1e-2)
for b in range(8):
    x, y = src[4 * b:4 * b + 4], tgt[4 * b:4 * b + 4]
    h = torch.zeros(4, hidden_size)
    for t in range(T):
        h = cell(emb(x[:, t]), h)
        loss = nn.functional.cross_entropy(out(h), y[:, t]) / (k * T)
        loss.backward(retain_graph=True)
    if (b + 1) % k == 0:
        opt.step()
        opt.zero_grad()
"""

# A GAN tutorial's needless retain_graph: the generator steps first, then the discriminator's
# loss is back-propagated with retain_graph=True and nothing goes through that graph again;
# every later backward shares the parameters' AccumulateGrad nodes with it.
GAN_RETAIN = HEADER + """
G = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
D = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)
opt_d = torch.optim.Adam(D.parameters(), lr=1e-3)
bce = nn.BCEWithLogitsLoss()
for step in range(12):
    real = torch.randn(16, 2) + 1.0
    fake = G(torch.randn(16, 4))
    opt_g.zero_grad()
    g_loss = bce(D(fake), torch.ones(16, 1))
    g_loss.backward()
    opt_g.step()
    opt_d.zero_grad()
    d_loss = bce(D(real), torch.ones(16, 1)) + bce(D(fake.detach()), torch.zeros(16, 1))
    d_loss.backward(retain_graph=True)
    opt_d.step()
"""

# Three heads, one backward each through the shared trunk: retain_graph is needed on all but
# the last, and no state is carried. Neither ACC003 nor ACC006.
THREE_HEADS = HEADER + """
trunk = nn.Sequential(nn.Linear(8, 16), nn.Tanh())
heads = nn.ModuleList(nn.Linear(16, 2) for _ in range(3))
opt = torch.optim.SGD([*trunk.parameters(), *heads.parameters()], lr=0.1)
for step in range(10):
    features = trunk(torch.randn(8, 8))
    losses = [head(features).pow(2).mean() for head in heads]
    for j, loss in enumerate(losses):
        loss.backward(retain_graph=j < len(losses) - 1)
    opt.step()
    opt.zero_grad()
"""

# Full BPTT done right: the token losses summed, one backward per sequence.
DECODER_SUMMED = DECODER_RETAIN.replace(  # the replacement must happen: asserted in the test
    "        loss = nn.functional.cross_entropy(out(h), y[:, t]) / (k * T)\n"
    "        loss.backward(retain_graph=True)\n",
    "        loss = nn.functional.cross_entropy(out(h), y[:, t]) / (k * T)\n"
    "        total = loss if t == 0 else total + loss\n"
    "    total.backward()\n")

SCHEDULER_EVERY_MICRO_STEP = HEADER + """
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5)
for i in range(16):
    (model(torch.randn(8, 4)).pow(2).mean() / 4).backward()
    if (i + 1) % 4 == 0:
        opt.step()
        opt.zero_grad()
    sched.step()
"""

ZERO_EVERY_MICRO_STEP = HEADER + """
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(16):
    opt.zero_grad()
    (model(torch.randn(8, 4)).pow(2).mean() / 4).backward()
    if (i + 1) % 4 == 0:
        opt.step()
"""

UNDIVIDED = HEADER + """
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(16):
    model(torch.randn(8, 4)).pow(2).mean().backward()
    if (i + 1) % 4 == 0:
        opt.step()
        opt.zero_grad()
"""
