"""State a semi-supervised loop carries from one iteration to the next (running class priors, a
confidence threshold, pseudo-labels kept per sample) comes back from a project function:
- a function that computes it all under `@torch.no_grad()` returns graph-free values, even when
  the loss later reads them (ACC003 stays silent); without the decorator the same update chains
  every iteration's graph (reported);
- a loss helper that returns a tuple on one branch and a bare loss on another (`return
  F.mse_loss(...)`): the caller that unpacks it reads the tuple, so element 4 built from detached
  logits is graph-free (silent), and built from the live logits it is not (reported);
- argmax indices out of such a helper, written into a per-sample label table, hold no graph
  (ACC002 silent); the live probabilities written there do (reported).
Forms: a script, a trainer class, and the helper in another module."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

PRIORS = """
import torch
import torch.nn.functional as F


DECORATOR
def update_priors(logits_w, time_p, p_model):
    probs = torch.softmax(logits_w, dim=1)
    max_probs, _ = torch.max(probs, dim=-1)
    if time_p is None:
        time_p = max_probs.mean()
    else:
        time_p = time_p * 0.999 + max_probs.mean() * 0.001
    if p_model is None:
        p_model = probs.mean(0)
    else:
        p_model = p_model * 0.999 + probs.mean(0) * 0.001
    return time_p, p_model
"""

PRIORS_SCRIPT = """
def train(model, optimizer, loader):
    time_p, p_model = None, None
    for x_lb, y_lb, x_w, x_s in loader:
        logits_lb, logits_w, logits_s = model(x_lb), model(x_w), model(x_s)
        time_p, p_model = update_priors(logits_w, time_p, p_model)
        mask = (torch.softmax(logits_w.detach(), 1) * p_model).max(1)[0].ge(time_p).float()
        loss = F.cross_entropy(logits_lb, y_lb) + (F.cross_entropy(logits_s, logits_w.argmax(1), reduction="none") * mask).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""

PRIORS_TRAINER = """
class FreeMatch:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    def train(self, loader):
        time_p, p_model = None, None
        for x_lb, y_lb, x_w, x_s in loader:
            logits = self.model(torch.cat((x_lb, x_w, x_s)))
            logits_lb = logits[:x_lb.shape[0]]
            logits_w, logits_s = logits[x_lb.shape[0]:].chunk(2)
            time_p, p_model = self.update_priors(logits_w, time_p, p_model)
            mask = (torch.softmax(logits_w.detach(), 1) * p_model).max(1)[0].ge(time_p).float()
            loss = F.cross_entropy(logits_lb, y_lb) + (F.cross_entropy(logits_s, logits_w.argmax(1), reduction="none") * mask).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()

    DECORATOR
    def update_priors(self, logits_w, time_p, p_model):
        probs = torch.softmax(logits_w, dim=1)
        max_probs, _ = torch.max(probs, dim=-1)
        if time_p is None:
            time_p = max_probs.mean()
        else:
            time_p = time_p * 0.999 + max_probs.mean() * 0.001
        if p_model is None:
            p_model = probs.mean(0)
        else:
            p_model = p_model * 0.999 + probs.mean(0) * 0.001
        return time_p, p_model
"""

NO_GRAD = "@torch.no_grad()"
PLAIN = "# no decorator"

CONSISTENCY = """
import torch
import torch.nn.functional as F


def consistency_loss(logits_s, logits_w, p_target, p_model, name="ce"):
    logits_w = WEAK
    if name == "L2":
        return F.mse_loss(logits_s, logits_w, reduction="mean")
    elif name == "ce":
        pseudo_label = torch.softmax(logits_w, dim=-1)
        if p_model is None:
            p_model = torch.mean(pseudo_label, dim=0)
        else:
            p_model = p_model * 0.999 + torch.mean(pseudo_label, dim=0) * 0.001
        pseudo_label = pseudo_label * p_target / p_model
        max_probs, max_idx = torch.max(pseudo_label, dim=-1)
        mask = max_probs.ge(0.95).float()
        select = max_probs.ge(0.95).long()
        loss = (F.cross_entropy(logits_s, max_idx, reduction="none") * mask).mean()
        return loss, mask.mean(), select, LABELS, p_model
    else:
        assert Exception("not implemented")
"""

CONSISTENCY_SCRIPT = """
def train(model, optimizer, loader, p_target, n_unlabelled):
    p_model = None
    selected_label = torch.ones((n_unlabelled,), dtype=torch.long) * -1
    for x_lb, y_lb, idx, x_w, x_s in loader:
        logits_lb, logits_w, logits_s = model(x_lb), model(x_w), model(x_s)
        unsup_loss, mask, select, pseudo_lb, p_model = consistency_loss(logits_s, logits_w, p_target, p_model)
        if idx[select == 1].nelement() != 0:
            selected_label[idx[select == 1]] = pseudo_lb[select == 1]
        loss = F.cross_entropy(logits_lb, y_lb) + unsup_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""

CONSISTENCY_TRAINER = """
class FlexMatch:
    def __init__(self, model, optimizer, p_target, n_unlabelled):
        self.model = model
        self.optimizer = optimizer
        self.p_target = p_target
        self.n_unlabelled = n_unlabelled

    def train(self, loader):
        p_model = None
        selected_label = torch.ones((self.n_unlabelled,), dtype=torch.long) * -1
        for x_lb, y_lb, idx, x_w, x_s in loader:
            logits = self.model(torch.cat((x_lb, x_w, x_s)))
            logits_lb = logits[:x_lb.shape[0]]
            logits_w, logits_s = logits[x_lb.shape[0]:].chunk(2)
            unsup_loss, mask, select, pseudo_lb, p_model = consistency_loss(logits_s, logits_w, self.p_target, p_model)
            if idx[select == 1].nelement() != 0:
                selected_label[idx[select == 1]] = pseudo_lb[select == 1]
            loss = F.cross_entropy(logits_lb, y_lb) + unsup_loss
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
"""

DETACHED = "logits_w.detach()"
LIVE = "logits_w"
INDICES = "max_idx.long()"
PROBABILITIES = "max_probs"


def _findings(source: str, code: str) -> list:
    return findings_of(source.encode(), code, path="train.py")


def _row(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


def _priors(template: str, decorator: str) -> str:
    if template is PRIORS_TRAINER:
        return textwrap.dedent(PRIORS).split("\n\n\n")[0] + "\n" + textwrap.dedent(template).replace("DECORATOR", decorator)
    return textwrap.dedent(PRIORS).replace("DECORATOR", decorator) + textwrap.dedent(template)


def _consistency(template: str, weak: str = DETACHED, labels: str = INDICES) -> str:
    helper = textwrap.dedent(CONSISTENCY).replace("WEAK", weak).replace("LABELS", labels)
    return helper + textwrap.dedent(template)


@pytest.mark.parametrize("template", [PRIORS_SCRIPT, PRIORS_TRAINER])
def test_priors_updated_under_no_grad_carry_no_graph(template: str) -> None:
    assert _findings(_priors(template, NO_GRAD), "ACC003") == []


@pytest.mark.parametrize("template", [PRIORS_SCRIPT, PRIORS_TRAINER])
def test_priors_updated_with_grad_chain_the_iterations(template: str) -> None:
    source = _priors(template, PLAIN)
    found = _findings(source, "ACC003")
    assert len(found) == 1
    assert found[0].location.row == _row(source, "p_model = self.update_priors(" if "self.update" in source else "p_model = update_priors(")
    assert "`time_p`" in found[0].message and "`p_model`" in found[0].message


@pytest.mark.parametrize("template", [CONSISTENCY_SCRIPT, CONSISTENCY_TRAINER])
def test_tuple_branch_of_a_loss_helper_from_detached_logits(template: str) -> None:
    source = _consistency(template)
    assert _findings(source, "ACC003") == []
    assert _findings(source, "ACC002") == []


@pytest.mark.parametrize("template", [CONSISTENCY_SCRIPT, CONSISTENCY_TRAINER])
def test_tuple_branch_of_a_loss_helper_from_live_logits(template: str) -> None:
    source = _consistency(template, weak=LIVE)
    found = _findings(source, "ACC003")
    assert len(found) == 1 and "`p_model`" in found[0].message
    assert found[0].location.row == _row(source, "= consistency_loss(")


@pytest.mark.parametrize("template", [CONSISTENCY_SCRIPT, CONSISTENCY_TRAINER])
def test_live_probabilities_kept_per_sample(template: str) -> None:
    source = _consistency(template, weak=LIVE, labels=PROBABILITIES)
    found = _findings(source, "ACC002")
    assert len(found) == 1 and "`selected_label`" in found[0].message
    assert found[0].location.row == _row(source, "selected_label[idx[select == 1]] =")


def _project(tmp_path: Path, helper: str, train: str, name: str) -> list:
    (tmp_path / ".git").mkdir()
    (tmp_path / "ssl_utils.py").write_text(helper)
    path = tmp_path / "train.py"
    path.write_text(f"import torch\nimport torch.nn.functional as F\nfrom ssl_utils import {name}\n" + textwrap.dedent(train))
    return [v.code for v in findings_of(path.read_bytes(), path=str(path)) if v.code in {"ACC002", "ACC003"}]


@pytest.mark.parametrize("decorator,codes", [(NO_GRAD, []), (PLAIN, ["ACC003"])])
def test_priors_helper_in_another_module(tmp_path: Path, decorator: str, codes: list) -> None:
    helper = textwrap.dedent(PRIORS).replace("DECORATOR", decorator)
    assert _project(tmp_path, helper, PRIORS_SCRIPT, "update_priors") == codes


@pytest.mark.parametrize("weak,labels,codes", [
    (DETACHED, INDICES, []),
    (LIVE, INDICES, ["ACC003"]),
    (LIVE, PROBABILITIES, ["ACC002", "ACC003"]),
])
def test_loss_helper_in_another_module(tmp_path: Path, weak: str, labels: str, codes: list) -> None:
    helper = textwrap.dedent(CONSISTENCY).replace("WEAK", weak).replace("LABELS", labels)
    assert sorted(_project(tmp_path, helper, CONSISTENCY_SCRIPT, "consistency_loss")) == codes
