"""ACC014 in test code: a test function that trains a model and its copy in lockstep and checks
them against each other on every iteration may leave gradients unzeroed (both sides add up alike,
so nothing it checks changes): not reported. A training function's own
sanity assert, or a test whose loop checks nothing, keeps the finding. Function and test-class
forms."""

from __future__ import annotations

import textwrap

from snippets import findings, row

LOCKSTEP = """
import copy
import torch

def {name}(model, batches):
    twin = copy.deepcopy(model)
    opt_1 = torch.optim.AdamW(model.parameters(), lr=1e-3)
    opt_2 = torch.optim.AdamW(twin.parameters(), lr=1e-3)
    for batch in batches:
        loss_1 = model(batch).mean()
        loss_2 = twin(batch).mean()
        {check}
        loss_1.backward()
        loss_2.backward()
        opt_1.step()
        opt_2.step()
"""


def _acc014(source: str) -> list[int]:
    return [line for code, line in findings(source) if code == "ACC014"]


def _lockstep(name: str, check: str) -> str:
    return textwrap.dedent(LOCKSTEP).replace("{name}", name).replace("{check}", check)


def test_twins_checked_each_iteration_in_a_test_function():
    assert _acc014(_lockstep("test_fused_loss_matches", "assert loss_1.allclose(loss_2)")) == []
    assert _acc014(_lockstep("test_fused_loss_matches", "torch.testing.assert_close(loss_1, loss_2)")) == []


def test_a_training_function_with_a_sanity_assert_is_reported():
    source = _lockstep("train_twins", "assert torch.isfinite(loss_1)")
    assert _acc014(source) == [row(source, "opt_1.step()"), row(source, "opt_2.step()")]


def test_a_test_whose_loop_checks_nothing_is_reported():
    source = _lockstep("test_training_runs", "pass")
    assert _acc014(source) == [row(source, "opt_1.step()"), row(source, "opt_2.step()")]


def test_test_class_method():
    source = """
        import torch

        class TestParity:
            def test_parity(self, model, reference, batches):
                opt = torch.optim.SGD(model.parameters(), lr=0.1)
                ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
                for batch in batches:
                    out, ref = model(batch), reference(batch)
                    self.assertTrue(torch.equal(out, ref))
                    out.sum().backward()
                    ref.sum().backward()
                    opt.step()
                    ref_opt.step()
    """
    assert _acc014(source) == []
    unchecked = source.replace("self.assertTrue(torch.equal(out, ref))", "pass")
    assert _acc014(unchecked) == [row(unchecked, "opt.step()"), row(unchecked, "ref_opt.step()")]
