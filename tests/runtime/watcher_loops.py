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

# A loader that reads one batch ahead (as Accelerate's prepared DataLoader does), 10 batches an
# epoch, k = 4, the step also at the end of the data: windows of 4, 4 and 2, all stepped. The
# underlying DataLoader ends its epoch before the last batch is used: no partial-window finding.
READ_AHEAD_LOADER = HEADER + """
from torch.utils.data import DataLoader, TensorDataset


def read_ahead(loader):
    iterator = iter(loader)
    current = next(iterator)
    for upcoming in iterator:
        yield current, False
        current = upcoming
    yield current, True


loader = DataLoader(TensorDataset(torch.randn(80, 4), torch.randn(80, 1)), batch_size=8)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    for i, ((x, y), last) in enumerate(read_ahead(loader)):
        (nn.functional.mse_loss(model(x), y) / 4).backward()
        if (i + 1) % 4 == 0 or last:
            opt.step()
            opt.zero_grad()
"""

# The same loop without the end-of-data step: the 2 leftover passes leak into the next epoch.
READ_AHEAD_LEAKING = READ_AHEAD_LOADER.replace("if (i + 1) % 4 == 0 or last:",
                                               "if (i + 1) % 4 == 0:")

# A wrapper that steps the scheduler once per process in one call, as Accelerate's prepared
# scheduler does with several processes: one user call per optimizer step, not ACC008.
SCHEDULER_WRAPPED = HEADER + """
class SchedulerPerProcess:
    def __init__(self, scheduler, processes):
        self.scheduler, self.processes = scheduler, processes

    def step(self):
        for _ in range(self.processes):
            self.scheduler.step()


model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
sched = SchedulerPerProcess(torch.optim.lr_scheduler.StepLR(opt, step_size=5), 2)
for i in range(16):
    (model(torch.randn(8, 4)).pow(2).mean() / 4).backward()
    if (i + 1) % 4 == 0:
        opt.step()
        sched.step()
        opt.zero_grad()
"""

# Each epoch shorter than one window (3 batches, k = 4), flushed at the end of the data: every
# window is a partial one divided by k. Not a wrong divisor (ACC010).
SHORT_EPOCHS = READ_AHEAD_LOADER.replace("torch.randn(80, 4), torch.randn(80, 1)",
                                         "torch.randn(24, 4), torch.randn(24, 1)")
