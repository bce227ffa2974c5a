"""Small training loops shared by the CLI tests (imported by name: pytest has two conftest modules)."""

BUGGY = """\
for i, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    loss.backward()
    if (i + 1) % accum_steps == 0:
        optimizer.step()
        optimizer.zero_grad()
"""

FIXED = BUGGY.replace("    loss.backward()", "    (loss / accum_steps).backward()")

CLEAN = """\
for i, (x, y) in enumerate(loader):
    loss = criterion(model(x), y) / accum_steps
    loss.backward()
    if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
        optimizer.step()
        optimizer.zero_grad()
"""
