"""ACC006 reads the backwards that may run through a retained graph with every definition that
may reach them on some branch: with `context_loss` built from the shared latent on one branch of
an `if` (`if cfg.train_decoder: context_loss = kl + decoder_loss`) and from the KL alone on the
other, the Q loss that reads the same latent may run through the retained graph. Nothing reads the
gradients in between, so one backward of the summed losses does the same: reported so, with no fix
(removing the keyword would make the Q loss's backward fail). Twin: the Q
network reads only the data, so no branch joins the two: reported, with the unsafe fix."""

from __future__ import annotations

from accumlint.engine import check_source

LOOP = """
import torch


def train(agent, decoder, qf, loader, optimizer, cfg):
    for obs, r, target in loader:
        dist, p_z, z = agent(obs)
        kl = torch.distributions.kl_divergence(p_z, agent.prior).mean()
        if cfg.train_decoder:
            pred = decoder(obs, z)
            context_loss = kl + ((pred - r) ** 2).mean()
        else:
            context_loss = kl
        q = qf(obs, LATENT)
        qf_loss = ((q - target) ** 2).mean()
        optimizer.zero_grad()
        context_loss.backward(retain_graph=True)
        qf_loss.backward()
        optimizer.step()
"""


def _acc006(latent: str) -> list:
    source = LOOP.replace("LATENT", latent)
    return [f for f in check_source(source.encode(), "train.py").findings if f.code == "ACC006"]


def test_a_branch_that_joins_the_two_graphs_makes_the_next_backward_run_through_it() -> None:
    [finding] = _acc006("z")
    assert finding.location.row == LOOP.splitlines().index("        context_loss.backward(retain_graph=True)") + 1
    assert "one backward of the summed losses gives the same gradients" in finding.message
    assert finding.fix is None


def test_no_branch_joins_them_when_the_q_network_reads_only_data() -> None:
    [finding] = _acc006("r")
    assert "no later backward in the iteration goes through it" in finding.message
    assert finding.fix is not None and finding.fix.applicability == "unsafe"
