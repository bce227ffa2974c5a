"""ACC006 on the last backward of a function that a loop calls once per iteration (an agent's
`train(batch)` method, a step function of a script) when that backward keeps a graph the call
builds itself: nothing outside the call can reach that graph (the function does not return it,
keeps nothing of it on the object, and builds it from the batch the loop hands in), so no later
backward goes through it and `retain_graph=True` only keeps its buffers alive. Reported at that
backward, with the removal as an unsafe fix where it is in the checked file. Silent when the
graph may be reached again: a later backward in the function, a graph kept on the object or
returned, a graph-carrying value handed in, `torch.autograd.grad`, or no loop that calls the
function."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

AGENT = """
import torch


class Agent:
    def __init__(self, actor, critic, actor_optimizer, critic_optimizer, alpha):
        self.actor = actor
        self.critic = critic
        self.actor_optimizer = actor_optimizer
        self.critic_optimizer = critic_optimizer
        self.alpha = alpha
        self.total_it = 0

    def _critic_loss(self, observations, actions, rewards):
        q = self.critic(observations, actions)
        return ((q - rewards) ** 2).mean()

    def train(self, batch):
        observations, actions, rewards = batch
        self.total_it += 1
        new_actions = self.actor(observations)
        policy_loss = (self.alpha - self.critic(observations, new_actions)).mean()
        qf_loss = self._critic_loss(observations, actions, rewards)
        self.actor_optimizer.zero_grad()
        policy_loss.backward()
        self.actor_optimizer.step()
        self.critic_optimizer.zero_grad()
        qf_loss.backward(retain_graph=True)
        self.critic_optimizer.step()
        EXTRA
        return {"qf_loss": qf_loss.item(), "policy_loss": policy_loss.item()}
"""

LOOP = """

def main(buffer, actor, critic, steps):
    actor_optimizer = torch.optim.Adam(actor.parameters())
    critic_optimizer = torch.optim.Adam(critic.parameters())
    agent = Agent(actor, critic, actor_optimizer, critic_optimizer, 0.2)
    for t in range(steps):
        batch = buffer.sample(256)
        batch = [b.to("cuda") for b in batch]
        log = agent.train(batch)
"""


def _agent(extra: str = "pass") -> str:
    return textwrap.dedent(AGENT).replace("EXTRA", extra)


def _acc006(source: str, path: str = "train.py") -> list:
    return findings_of(source.encode(), "ACC006", path=path)


def _line(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if text in line)


def test_last_backward_of_an_agent_step_is_reported_with_an_unsafe_fix() -> None:
    source = _agent() + textwrap.dedent(LOOP)
    found = _acc006(source)
    assert [f.location.row for f in found] == [_line(source, "qf_loss.backward(retain_graph=True)")]
    assert "`train()`" in found[0].message and "called every iteration" in found[0].message
    assert found[0].fix is not None and found[0].fix.applicability == "unsafe"


def test_step_function_of_a_script_is_reported() -> None:
    source = textwrap.dedent("""
        import torch


        def train_step(model, optimizer, x, y):
            out = model(x)
            loss = (out - y).pow(2).mean()
            optimizer.zero_grad()
            loss.backward(retain_graph=True)
            optimizer.step()
            return loss.item()


        def main(model, loader, optimizer):
            for epoch in range(10):
                for x, y in loader:
                    train_step(model, optimizer, x, y)
    """)
    found = _acc006(source)
    assert [f.location.row for f in found] == [_line(source, "loss.backward(retain_graph=True)")]


@pytest.mark.parametrize(
    "extra",
    [
        "self.last_q = qf_loss",  # kept on the object: the next call may run through it
        "self.history.append(qf_loss)",
        "self.by_step[self.total_it] = qf_loss",
        "grads = torch.autograd.grad(qf_loss, list(self.critic.parameters()))",
        "(qf_loss * 0.1).backward()",  # a later backward through the same graph
    ],
)
def test_graph_reachable_after_the_backward_is_clean(extra: str) -> None:
    assert _acc006(_agent(extra) + textwrap.dedent(LOOP)) == []


def test_returned_graph_is_clean() -> None:
    source = _agent().replace('return {"qf_loss": qf_loss.item(), "policy_loss": policy_loss.item()}', "return qf_loss")
    assert _acc006(source + textwrap.dedent(LOOP)) == []


def test_graph_handed_in_is_clean() -> None:
    # Features computed once, before the loop, and handed to every call: each call's backward
    # runs through the encoder's graph again, so it must be kept.
    source = _agent() + textwrap.dedent("""

        def main(encoder, data, actor, critic, steps):
            agent = Agent(actor, critic, torch.optim.Adam(actor.parameters()), torch.optim.Adam(critic.parameters()), 0.2)
            features = encoder(data)
            for t in range(steps):
                log = agent.train((features, data, data))
    """)
    assert _acc006(source) == []


def test_function_no_loop_calls_is_clean() -> None:
    source = _agent() + textwrap.dedent("""

        def main(buffer, actor, critic):
            agent = Agent(actor, critic, torch.optim.Adam(actor.parameters()), torch.optim.Adam(critic.parameters()), 0.2)
            return agent.train(buffer.sample(256))
    """)
    assert _acc006(source) == []


def test_agent_in_another_module_is_reported_there(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "agent.py").write_text(_agent())
    script = tmp_path / "run.py"
    script.write_text("import torch\nfrom agent import Agent\n" + textwrap.dedent(LOOP))
    found = _acc006(script.read_text(), str(script))
    assert len(found) == 1
    assert found[0].filename.endswith("agent.py")
    assert found[0].location.row == _line(_agent(), "qf_loss.backward(retain_graph=True)")


def test_log_dict_filled_by_a_helper_and_returned_is_no_graph() -> None:
    # `log = dict(...item())` handed to the loss helper, which adds `.item()` values to it: a
    # dict of floats, not an output on the way to the loss, so returning it returns no graph.
    source = _agent().replace(
        "    def _critic_loss(self, observations, actions, rewards):\n        q = self.critic(observations, actions)\n",
        "    def _critic_loss(self, observations, actions, rewards, log):\n        q = self.critic(observations, actions)\n"
        "        log.update(dict(q=q.mean().item()))\n",
    ).replace(
        "        qf_loss = self._critic_loss(observations, actions, rewards)\n",
        "        log = dict(policy_loss=policy_loss.item())\n        qf_loss = self._critic_loss(observations, actions, rewards, log)\n",
    ).replace('return {"qf_loss": qf_loss.item(), "policy_loss": policy_loss.item()}', "return log")
    assert "return log" in source and "log.update" in source
    assert len(_acc006(source + textwrap.dedent(LOOP))) == 1


def test_second_caller_handing_shared_features_keeps_it_silent() -> None:
    # One caller hands raw input, another hands `feats = backbone(x)` to two calls in a row: the
    # second call's backward runs through the first call's backbone graph.
    source = textwrap.dedent("""
        import torch


        def head_step(head, optimizer, feats, y):
            loss = ((head(feats) - y) ** 2).mean()
            optimizer.zero_grad()
            loss.backward(retain_graph=True)
            optimizer.step()
            return loss.item()


        def pretrain_head(head, optimizer, loader):
            for x, y in loader:
                head_step(head, optimizer, x, y)


        def finetune(backbone, heads, optimizers, loader):
            for x, y in loader:
                feats = backbone(x)
                head_step(heads[0], optimizers[0], feats, y)
                head_step(heads[1], optimizers[1], feats, y)
    """)
    assert _acc006(source) == []
    alone = source.split("def finetune")[0]
    assert len(_acc006(alone)) == 1


def test_function_running_a_model_that_keeps_its_state_is_clean() -> None:
    source = textwrap.dedent("""
        import torch
        from torch import nn


        class StatefulLSTM(nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = nn.LSTM(4, 16)
                self.state = None

            def forward(self, x):
                out, self.state = self.lstm(x, self.state)
                return out


        class Learner:
            def __init__(self, optimizer):
                self.model = StatefulLSTM()
                self.optimizer = optimizer

            def step(self, x, y):
                loss = ((self.model(x) - y) ** 2).mean()
                self.optimizer.zero_grad()
                loss.backward(retain_graph=True)
                self.optimizer.step()


        def main(loader, optimizer):
            learner = Learner(optimizer)
            for x, y in loader:
                learner.step(x, y)
    """)
    assert _acc006(source) == []
    stateless = source.replace("out, self.state = self.lstm(x, self.state)", "out, _ = self.lstm(x)")
    assert len(_acc006(stateless)) == 1


def test_loss_appended_to_a_list_handed_in_is_clean() -> None:
    source = textwrap.dedent("""
        import torch


        def inner_step(model, optimizer, x, kept):
            loss = model(x).sum()
            optimizer.zero_grad()
            loss.backward(retain_graph=True)
            optimizer.step()
            kept.append(loss)


        def main(model, optimizer, loader):
            kept = []
            for x in loader:
                inner_step(model, optimizer, x, kept)
            torch.stack(kept).sum().backward()
    """)
    assert [f for f in _acc006(source) if "graph of this call" in f.message] == []
