"""ACC006 by DESIGN.md: `retain_graph=True` where nothing needs the graph again (no later backward
through it, or nothing reads or changes the gradients before the next one), with the real cost in
the message; gradients used between the passes (a GAN, PCGrad, per-task logging) are not the bug."""

from __future__ import annotations

import textwrap
from pathlib import Path

from accumlint import engine
from accumlint.engine import fix_source
from tests.snippets import findings_of


def acc006(source: str):
    return findings_of(source, "ACC006", path="case.py", dedent=True)


def rows(source: str) -> list[int]:
    return [f.location.row for f in acc006(source)]


TWO_LOSSES = """
    for x, y in loader:
        features = backbone(x)
        recon_loss = recon(decoder(features), x)
        kl_loss = kl(features)
        optimizer.zero_grad()
        recon_loss.backward(retain_graph=True)
        {between}
        kl_loss.backward()
        optimizer.step()
"""


def test_two_losses_with_nothing_between_are_reported_without_fix():
    source = TWO_LOSSES.format(between="n_seen += 1")
    [f] = acc006(source)
    assert f.location.row == 7
    assert "summed losses" in f.message and "one extra graph held per iteration" in f.message
    assert "OOM" not in f.message
    result = fix_source(textwrap.dedent(source), "case.py", unsafe_fixes=True)
    assert result.fixed_source is None  # removing the argument alone would break the second pass


def test_gradients_read_or_changed_between_passes_are_not_the_bug():
    for between in (
        "recon_norm = torch.nn.utils.clip_grad_norm_(decoder.parameters(), 1.0)",
        "grads = [p.grad.clone() for p in backbone.parameters()]",
        "for p in backbone.parameters():\n            p.grad = None",
        "g = torch.autograd.grad(recon_loss, features, retain_graph=True)",
        "log_gradient_norms(backbone, writer)",
        "optimizer.step()",
    ):
        assert acc006(TWO_LOSSES.format(between=between)) == [], between


def test_gan_discriminator_step_between_is_clean():
    assert acc006("""
        for real, _ in loader:
            fake = netG(torch.randn(real.size(0), nz))
            optD.zero_grad()
            errD = bce(netD(real), ones) + bce(netD(fake), zeros)
            errD.backward(retain_graph=True)
            optD.step()
            optG.zero_grad()
            errG = bce(netD(fake), ones)
            errG.backward()
            optG.step()
    """) == []


GAN_SCRIPT = """
    import torch
    nz = 100
    ones, zeros = torch.ones(64, 1), torch.zeros(64, 1)
    for real, _ in loader:
        z = torch.randn(real.size(0), nz)
        optD.zero_grad()
        errD = bce(netD(real), ones) + bce(netD(netG(z)), zeros)
        errD.backward(retain_graph=True)
        optD.step()
        optG.zero_grad()
        errG = bce(netD({g_input}), ones)
        errG.backward()
        optG.step()
"""

GAN_TRAINER = """
    import torch

    class GANTrainer:
        def __init__(self, G, D, batch_size):
            self.G, self.D = G, D
            self.ones, self.zeros = torch.ones(batch_size, 1), torch.zeros(batch_size, 1)

        def fit(self, loader):
            for real in loader:
                z = torch.rand(real.size(0), 64)
                self.opt_d.zero_grad()
                fake = self.G(z)
                d_loss = self.bce(self.D(real), self.ones) + self.bce(self.D(fake), self.zeros)
                d_loss.backward(retain_graph=True)
                self.opt_d.step()
                self.opt_g.zero_grad()
                {g_loss}
                g_loss.backward()
                self.opt_g.step()

        def generator_loss(self, z):
            return self.bce(self.D(self.G(z)), self.ones)
"""


def test_a_generator_step_on_a_fresh_forward_never_uses_the_kept_graph():
    """The G loss is built from a new forward (`netG(z)` again): no later backward runs through
    the D step's graph, so keeping it holds one extra graph per iteration. Labels made once in
    `__init__` are no shared graph."""
    source = GAN_SCRIPT.format(g_input="netG(z)")
    assert rows(source) == [9]
    assert "no later backward in the iteration goes through it" in acc006(source)[0].message
    trainer = GAN_TRAINER.format(g_loss="g_loss = self.bce(self.D(self.G(z)), self.ones)")
    assert rows(trainer) == [15]


def test_a_generator_step_through_the_same_fake_or_an_unread_method_is_clean():
    assert rows(GAN_SCRIPT.replace("netD(netG(z)), zeros)", "netD(fake), zeros)").replace(
        "z = torch.randn(real.size(0), nz)", "fake = netG(torch.randn(real.size(0), nz))"
    ).format(g_input="fake")) == []
    assert rows(GAN_TRAINER.format(g_loss="g_loss = self.bce(self.D(fake), self.ones)")) == []
    # a method of the class may read what the D step left on `self`: not followed, so silent
    assert rows(GAN_TRAINER.format(g_loss="g_loss = self.generator_loss(z)")) == []


def test_loop_over_heads_only_summing_is_reported():
    assert rows("""
        for x, ys in loader:
            features = backbone(x)
            optimizer.zero_grad()
            for head, y in zip(heads, ys):
                loss = criterion(head(features), y)
                loss.backward(retain_graph=True)
            optimizer.step()
    """) == [7]


def test_loop_over_heads_through_a_scaled_loss_context_keeps_the_shared_graph():
    """`with amp.scale_loss(loss, opt) as scaled:` runs backward through `loss`: the passes share
    the teacher's outputs, so removing `retain_graph=True` would raise on the second pass."""
    source = """
        for x, y in loader:
            teacher_out = teacher(x)
            for sample in range(samples):
                loss = mse(student(x, sample), teacher_out) / samples
                with amp.scale_loss(loss, optimizer) as scaled_loss:
                    scaled_loss.backward(retain_graph=True)
            optimizer.step()
            optimizer.zero_grad()
    """
    [f] = acc006(source)
    assert f.location.row == 7 and "shared graph" in f.message and "no later backward" not in f.message
    assert fix_source(textwrap.dedent(source), "case.py", unsafe_fixes=True).fixed_source is None
    # each pass with its own graph: no later backward goes through it
    fresh = source.replace("teacher_out)", "teacher(x).detach())")
    [g] = acc006(fresh)
    assert "no later backward" in g.message


def test_loop_over_precomputed_losses_is_reported_without_removal():
    source = """
        for x, y in loader:
            out = model(x)
            losses = [crit(out, y) for crit in criteria]
            optimizer.zero_grad()
            for loss in losses:
                loss.backward(retain_graph=True)
            optimizer.step()
    """
    [f] = acc006(source)
    assert f.location.row == 7 and "summed losses" in f.message
    assert fix_source(textwrap.dedent(source), "case.py", unsafe_fixes=True).fixed_source is None


def test_fresh_graph_per_inner_micro_step_gets_the_removal():
    source = """
        for it in range(max_iters):
            for micro in range(accum):
                x, y = get_batch()
                loss = model(x, y) / accum
                loss.backward(retain_graph=True)
            optimizer.step()
            optimizer.zero_grad()
    """
    [f] = acc006(source)
    assert "no later backward" in f.message
    assert fix_source(textwrap.dedent(source), "case.py", unsafe_fixes=True).fixed_source is not None


def test_pcgrad_reading_gradients_per_task_is_clean():
    assert acc006("""
        for x, ys in loader:
            features = backbone(x)
            task_grads = []
            for head, y in zip(heads, ys):
                optimizer.zero_grad()
                criterion(head(features), y).backward(retain_graph=True)
                task_grads.append([p.grad.detach().clone() for p in shared.parameters()])
            project_conflicting(task_grads)
            optimizer.step()
    """) == []


def test_single_backward_gets_the_unsafe_removal():
    source = textwrap.dedent("""
        for i, (x, y) in enumerate(loader):
            loss = criterion(model(x), y) / accum
            loss.backward(retain_graph=True)
            if (i + 1) % accum == 0 or i + 1 == len(loader):
                optimizer.step()
                optimizer.zero_grad()
    """)
    [f] = acc006(source)
    assert "no later backward" in f.message and "one extra graph held per iteration" in f.message
    once = fix_source(source, "case.py", unsafe_fixes=True)
    assert once.fixed_source is not None and "loss.backward()\n" in once.fixed_source
    compile(once.fixed_source, "fixed.py", "exec")
    assert acc006(once.fixed_source) == []
    assert fix_source(once.fixed_source, "case.py", unsafe_fixes=True).fixed_source in (None, once.fixed_source)


def test_carried_state_says_growth_is_unbounded():
    [f] = acc006("""
        h = torch.zeros(1, 32)
        for x, y in loader:
            out, h = rnn(x, h)
            loss = criterion(out, y)
            optimizer.zero_grad()
            loss.backward(retain_graph=True)
            optimizer.step()
    """)
    assert "`h` carries it into the next iteration" in f.message and "without bound" in f.message


def test_trainer_class_two_losses():
    assert rows("""
        class Trainer:
            def fit(self, loader):
                for batch in loader:
                    out = self.model(batch)
                    cls_loss = self.cls(out, batch)
                    box_loss = self.box(out, batch)
                    self.opt.zero_grad()
                    cls_loss.backward(retain_graph=True)
                    box_loss.backward()
                    self.opt.step()
    """) == [9]


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text).lstrip())


def test_multi_module_helper_reading_gradients_between_passes(tmp_path):
    _write(tmp_path, {
        "monitor.py": """
            def record(model, store):
                store.append(sum(float(p.grad.norm()) for p in model.parameters()))
        """,
        "train.py": """
            from monitor import record

            def fit(model, optimizer, loader, store):
                for x, y in loader:
                    out = model(x)
                    a, b = loss_a(out, y), loss_b(out, y)
                    optimizer.zero_grad()
                    a.backward(retain_graph=True)
                    record(model, store)
                    b.backward()
                    optimizer.step()
        """,
    })
    path = tmp_path / "train.py"
    result = engine.check_source(path.read_bytes(), str(path))
    assert [f for f in result.findings if f.code == "ACC006"] == []
    # The same loop with a helper that does not touch gradients is the bug.
    (tmp_path / "monitor.py").write_text("def record(model, store):\n    store.append(model.training)\n")
    result = engine.check_source(path.read_bytes(), str(path))
    assert [f.location.row for f in result.findings if f.code == "ACC006"] == [8]
