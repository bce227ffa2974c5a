"""k as real code holds it: dataclass fields, nested config objects, plain config classes,
argparse flags, the Accelerator's own attribute, `self.k` set in `__init__`. Two names are one k
when the code binds one to the other (directly, through the object that holds it, or through the
keyword an object was built with); a literal 1 is no window; a default that a flag, a caller or a
constructor may change is a k of unknown value, still a window."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from accumlint import engine
from tests.snippets import findings_of


def found(source: str, path: str = "t.py") -> set[tuple[str, int]]:
    return {(f.code, f.location.row) for f in findings_of(source, path=path, dedent=True)}


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())


# --- dataclass fields -------------------------------------------------------------------------

DATACLASS = """
from dataclasses import dataclass


@dataclass
class Cfg:
    grad_accum: int = {default}


def train(model, opt, loader, cfg: Cfg):
    k = cfg.grad_accum
    for i, batch in enumerate(loader):
        loss = model(batch).mean(){divide}
        loss.backward()
        if (i + 1) % cfg.grad_accum == 0 or i + 1 == len(loader):
            opt.step()
            opt.zero_grad()
"""


def test_a_dataclass_field_is_k_under_every_name_bound_to_it():
    assert found(DATACLASS.format(default=4, divide=" / cfg.grad_accum / k")) == {("ACC010", 14)}
    assert found(DATACLASS.format(default=4, divide=" / k")) == set()
    assert found(DATACLASS.format(default=4, divide="")) == {("ACC001", 14)}


def test_a_dataclass_default_of_one_is_still_a_window():
    # `Cfg(grad_accum=8)` or a flag parsed into the dataclass changes it: a k of unknown value.
    assert found(DATACLASS.format(default=1, divide="")) == {("ACC001", 14)}


def test_a_dataclass_built_with_the_value_names_it():
    source = """
        from dataclasses import dataclass


        @dataclass
        class Cfg:
            grad_accum: int = 1


        def main(args, model, opt, loader):
            cfg = Cfg(grad_accum=args.accum)
            for i, batch in enumerate(loader):
                loss = model(batch).mean() / args.accum / cfg.grad_accum
                loss.backward()
                if (i + 1) % cfg.grad_accum == 0 or i + 1 == len(loader):
                    opt.step()
                    opt.zero_grad()
    """
    assert found(source) == {("ACC010", 14)}
    # A keyword of another object is no alias: one division by k, one by something else.
    other = source.replace("cfg = Cfg(grad_accum=args.accum)", "cfg = Cfg(grad_accum=args.accum, lr=args.lr)").replace(
        "/ args.accum / cfg.grad_accum", "/ args.lr / cfg.grad_accum"
    )
    assert found(other) == set()


NESTED = """
def train(model, opt, loader, cfg):
    tcfg = cfg.train
    for i, batch in enumerate(loader):
        loss = model(batch).mean(){divide}
        loss.backward()
        if (i + 1) % cfg.train.grad_accum == 0 or i + 1 == len(loader):
            opt.step()
            opt.zero_grad()
"""


def test_a_nested_config_is_followed_through_the_object_that_holds_it():
    assert found(NESTED.format(divide=" / tcfg.grad_accum / cfg.train.grad_accum")) == {("ACC010", 6)}
    assert found(NESTED.format(divide=" / tcfg.grad_accum")) == set()
    # `tcfg.lr` is another field of the same object: not k.
    assert found(NESTED.format(divide=" / tcfg.lr / cfg.train.grad_accum")) == set()
    assert found(NESTED.format(divide="")) == {("ACC001", 6)}


# --- plain config classes -----------------------------------------------------------------------

CONFIG_CLASS = """
class CFG:
    seed = 42
    grad_accum = {value}


def train(model, opt, loader):
    for i, batch in enumerate(loader):
        loss = model(batch).mean()
        loss.backward()
        if (i + 1) % {k} == 0:
            opt.step()
            opt.zero_grad()
{tail}
"""


@pytest.mark.parametrize("k", ["CFG.grad_accum", "cfg.grad_accum"])
def test_a_config_class_attribute_of_one_is_no_window(k):
    tail = "\ncfg = CFG()\n" if k.startswith("cfg") else ""
    # No division, no end clause: with k = 1 there is nothing to divide and nothing left over.
    assert found(CONFIG_CLASS.format(value=1, k=k, tail=tail)) == set()
    assert {code for code, _ in found(CONFIG_CLASS.format(value=4, k=k, tail=tail))} == {"ACC001", "ACC005"}


def test_a_config_class_attribute_set_anew_somewhere_is_not_fixed():
    tail = "\ndef setup(args):\n    CFG.grad_accum = args.accum\n"
    assert {code for code, _ in found(CONFIG_CLASS.format(value=1, k="CFG.grad_accum", tail=tail))} == {
        "ACC001", "ACC005"
    }


def test_a_config_class_with_fields_given_at_construction_is_configurable():
    source = CONFIG_CLASS.format(value=1, k="cfg.grad_accum", tail="\ncfg = CFG(grad_accum=8)\n")
    assert {code for code, _ in found(source)} == {"ACC001", "ACC005"}
    decorated = CONFIG_CLASS.format(value=1, k="CFG.grad_accum", tail="").replace(
        "class CFG:", "from dataclasses import dataclass\n\n\n@dataclass\nclass CFG:"
    )
    assert {code for code, _ in found(decorated)} == {"ACC001", "ACC005"}


# --- argparse -----------------------------------------------------------------------------------

ARGPARSE = """
import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--accum-steps", type=int, default={default}{dest})
parser.add_argument("--deepspeed", action="store_true")
args = parser.parse_args()
{override}

def train(model, opt, loader):
    for i, batch in enumerate(loader):
        loss = model(batch).mean(){divide}
        loss.backward()
        if (i + 1) % args.{k} == 0 or i + 1 == len(loader):
            opt.step()
            opt.zero_grad()
"""


def _argparse(default=8, dest="", override="", divide="", k="accum_steps") -> str:
    return ARGPARSE.format(default=default, dest=dest, override=override, divide=divide, k=k)


def test_an_argparse_flag_is_k_whatever_its_default():
    assert found(_argparse()) == {("ACC001", 13)}
    assert found(_argparse(default=1)) == {("ACC001", 13)}  # `--accum-steps 8` makes it a window
    assert found(_argparse(divide=" / args.accum_steps")) == set()


def test_a_flag_set_to_one_on_one_path_is_still_a_window():
    # `args.accum_steps = 1` under `--deepspeed` is one of its values, not all of them.
    override = "if args.deepspeed:\n    args.accum_steps = 1\n"
    assert found(_argparse(override=override)) == {("ACC001", 15)}


def test_the_dest_attribute_is_the_flag_and_any_division_counts_as_scaled():
    dest = ', dest="gradient_accumulation_steps"'
    k = "gradient_accumulation_steps"
    assert found(_argparse(dest=dest, k=k)) == {("ACC001", 13)}
    assert found(_argparse(dest=dest, k=k, divide=" / args.gradient_accumulation_steps")) == set()
    # `args.accum_steps` is another attribute (there is none of that name once `dest` is given):
    # a division by it is a division all the same, so no ACC001; and no ACC010, it is not k twice.
    assert found(_argparse(dest=dest, k=k, divide=" / args.accum_steps / args.gradient_accumulation_steps")) == set()
    twice = " / args.gradient_accumulation_steps / args.gradient_accumulation_steps"
    assert found(_argparse(dest=dest, k=k, divide=twice)) == {("ACC010", 13)}


# --- the Accelerator's attribute -----------------------------------------------------------------

ACCELERATOR = """
from accelerate import Accelerator


def main(args, model, opt, loader):
    accelerator = Accelerator(gradient_accumulation_steps=args.gas)
    for i, batch in enumerate(loader):
        loss = model(batch).mean(){divide}
        loss.backward()
        if (i + 1) % accelerator.gradient_accumulation_steps == 0 or i + 1 == len(loader):
            opt.step()
            opt.zero_grad()
"""


def test_the_accelerators_attribute_is_what_it_was_built_with():
    assert found(ACCELERATOR.format(divide=" / args.gas / accelerator.gradient_accumulation_steps")) == {("ACC010", 9)}
    assert found(ACCELERATOR.format(divide=" / args.gas")) == set()
    assert found(ACCELERATOR.format(divide="")) == {("ACC001", 9)}


# --- trainer classes ----------------------------------------------------------------------------

TRAINER = """
class Trainer:
    def __init__(self, model, opt, cfg{param}):
        self.model, self.opt = model, opt
        self.cfg = cfg
        {init}

    def fit(self, loader):
        cfg = self.cfg
        for i, batch in enumerate(loader):
            loss = self.model(batch).mean(){divide}
            loss.backward()
            if (i + 1) % {k} == 0 or i + 1 == len(loader):
                self.opt.step()
                self.opt.zero_grad()
"""


def _trainer(param="", init="pass", divide="", k="self.cfg.grad_accum") -> str:
    return TRAINER.format(param=param, init=init, divide=divide, k=k)


def test_a_config_held_on_self_is_the_config_it_was_given():
    assert found(_trainer(divide=" / cfg.grad_accum / self.cfg.grad_accum")) == {("ACC010", 12)}
    assert found(_trainer(divide=" / cfg.grad_accum")) == set()
    assert found(_trainer()) == {("ACC001", 12)}


def test_k_on_self_from_a_config_field():
    init = "self.accum = cfg.train.grad_accum"
    assert found(_trainer(init=init, k="self.accum", divide=" / self.cfg.train.grad_accum / self.accum")) == {
        ("ACC010", 12)
    }
    assert found(_trainer(init=init, k="self.accum", divide=" / self.cfg.train.grad_accum")) == set()


def test_self_k_of_literal_one_is_no_window_but_a_parameter_default_of_one_is():
    assert found(_trainer(init="self.k = 1", k="self.k")) == set()
    assert found(_trainer(param=", k=1", init="self.k = k", k="self.k")) == {("ACC001", 12)}
    # k = 1 under a condition and the configured value otherwise: a window.
    init = "self.k = 1 if cfg.deepspeed else cfg.grad_accum"
    assert found(_trainer(init=init, k="self.k")) == {("ACC001", 12)}


def test_self_k_from_a_config_class_constant():
    source = "class CFG:\n    grad_accum = {}\n" + _trainer(init="self.k = CFG.grad_accum", k="self.k")
    assert found(source.format(1)) == set()
    assert found(source.format(4)) == {("ACC001", 14)}


def test_a_module_constant_of_one_is_no_window():
    source = "ACCUM = 1\n" + DATACLASS.format(default=4, divide="").replace("cfg.grad_accum == 0", "ACCUM == 0")
    assert found(source) == set()
    assert found(source.replace("ACCUM = 1", "ACCUM = 2")) == {("ACC001", 15)}


# --- across modules -----------------------------------------------------------------------------

PROJECT = {
    "pyproject.toml": "",
    "pkg/__init__.py": "",
    "pkg/steps.py": """
        class Base:
            def micro_step(self, batch):
                loss = self.model(batch).mean(){divide}
                loss.backward()
    """,
    "train.py": """
        from pkg.steps import Base


        class Trainer(Base):
            def __init__(self, model, opt, cfg):
                self.model, self.opt, self.cfg = model, opt, cfg

            def train_epoch(self, loader):
                for i, batch in enumerate(loader):
                    self.micro_step(batch)
                    if (i + 1) % self.cfg.grad_accum == 0 or i + 1 == len(loader):
                        self.opt.step()
                        self.opt.zero_grad()
    """,
}


def test_a_config_on_self_is_k_in_a_base_class_of_another_module(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    files = dict(PROJECT)
    files["pkg/steps.py"] = PROJECT["pkg/steps.py"].format(divide="")
    _write(tmp_path, files)
    result = engine.check_source((tmp_path / "train.py").read_bytes(), "train.py")
    assert {(f.filename, f.code, f.location.row) for f in result.findings} == {
        (str(Path("pkg") / "steps.py"), "ACC001", 4)
    }
    files["pkg/steps.py"] = PROJECT["pkg/steps.py"].format(divide=" / self.cfg.grad_accum")
    _write(tmp_path, files)
    assert engine.check_source((tmp_path / "train.py").read_bytes(), "train.py").findings == []


# --- k in a schedule's length --------------------------------------------------------------------

SCHEDULE_IN_INIT = """
from transformers import get_linear_schedule_with_warmup


class Trainer:
    def __init__(self, model, opt, loader, cfg):
        self.model, self.opt = model, opt
        self.c = cfg
        total = {total}
        self.sched = get_linear_schedule_with_warmup(opt, 10, total)

    def fit(self, loader):
        for i, batch in enumerate(loader):
            loss = self.model(batch).mean() / self.c.ga
            loss.backward()
            self.sched.step()
            if (i + 1) % self.c.ga == 0 or i + 1 == len(loader):
                self.opt.step()
                self.opt.zero_grad()
"""


def test_a_schedule_sized_in_init_through_the_config_that_self_holds():
    # `cfg.ga` in `__init__` is `self.c.ga` in the loop (`self.c = cfg`): the length counts windows.
    assert found(SCHEDULE_IN_INIT.format(total="len(loader) // cfg.ga * cfg.epochs")) == {("ACC008", 16)}
    # sized in micro-steps, or by the window size times the updates: stepped at its own rate
    assert found(SCHEDULE_IN_INIT.format(total="len(loader) * cfg.epochs")) == set()
    assert found(SCHEDULE_IN_INIT.format(total="cfg.max_updates * self.c.ga")) == set()
    # divided by something that is not k: the unit is not shown
    assert found(SCHEDULE_IN_INIT.format(total="len(loader) // cfg.world * cfg.epochs")) == set()


# --- k from a config module of the project --------------------------------------------------------

CONFIG_MODULE = {
    "pyproject.toml": "",
    "pkg/__init__.py": "",
    "pkg/config.py": """
        import os

        GRAD_ACCUM = {value}
        FROM_ENV = int(os.environ.get("GRAD_ACCUM", "1"))


        class CFG:
            grad_accum = {value}
    """,
    "train.py": """
        from pkg.config import GRAD_ACCUM, CFG, FROM_ENV
        import pkg.config as config


        def train(model, opt, loader):
            for i, batch in enumerate(loader):
                loss = model(batch).mean()
                loss.backward()
                if (i + 1) % {k} == 0 or i + 1 == len(loader):
                    opt.step()
                    opt.zero_grad()
        {tail}
    """,
}


def _config_project(root: Path, value: int, k: str, tail: str = "") -> set[tuple[str, int]]:
    files = dict(CONFIG_MODULE)
    files["pkg/config.py"] = CONFIG_MODULE["pkg/config.py"].format(value=value)
    files["train.py"] = CONFIG_MODULE["train.py"].format(k=k, tail=tail)
    _write(root, files)
    return {(f.code, f.location.row) for f in findings_of((root / "train.py").read_bytes(), path=str(root / "train.py"))}


@pytest.mark.parametrize("k", ["GRAD_ACCUM", "CFG.grad_accum", "config.GRAD_ACCUM", "config.CFG.grad_accum"])
def test_a_constant_of_one_in_an_imported_config_module_is_no_window(tmp_path, k):
    assert _config_project(tmp_path, 1, k) == set()
    assert _config_project(tmp_path, 4, k) == {("ACC001", 8)}


def test_an_imported_constant_set_from_outside_or_rebound_here_is_a_window(tmp_path):
    assert _config_project(tmp_path, 1, "FROM_ENV") == {("ACC001", 8)}
    tail = "\n\n        def setup(args):\n            config.GRAD_ACCUM = args.accum"
    assert _config_project(tmp_path, 1, "config.GRAD_ACCUM", tail) == {("ACC001", 8)}


def test_k_as_an_attribute_of_a_parameter_gives_both_findings_of_its_gate():
    # A parameter's attribute (`args.backward_freq`) is a k of unknown value: the undivided loss
    # and the dropped partial window are both reported on the one gate.
    source = """
        def train(args, model, opt, crit, loader):
            for i, (x, y) in enumerate(loader):
                loss = crit(model(x), y)
                loss.backward()
                if (i + 1) % args.backward_freq == 0:
                    opt.step()
                    opt.zero_grad()
    """
    assert found(source) == {("ACC001", 5), ("ACC005", 6)}
    divided = source.replace("crit(model(x), y)", "crit(model(x), y) / args.backward_freq")
    assert found(divided) == {("ACC005", 6)}


# --- the end clause of a gate ---------------------------------------------------------------------

SHORT_EPOCH = """
def train(model, optimizer, loader, k, epochs):
    for epoch in range(epochs):
        for step, (x, y) in enumerate(loader):
            loss = (model(x) - y).pow(2).mean() / k
            loss.backward()
            if (step + 1) % k == 0 or {clause}:
                optimizer.step()
                optimizer.zero_grad()
"""


@pytest.mark.parametrize("clause", ["(len(loader) <= k and step + 1 == len(loader))",
                                    "(k > len(loader) and step + 1 == len(loader))"])
def test_an_end_clause_for_epochs_shorter_than_a_window_still_drops_the_partial_window(clause):
    result = engine.check_source(textwrap.dedent(SHORT_EPOCH.format(clause=clause)), "t.py")
    assert [(f.code, f.location.row) for f in result.findings] == [("ACC005", 7)]
    finding = result.findings[0]
    assert "fires only when an epoch is shorter than one window" in finding.message
    assert finding.fix is None  # the gate is more than its `% k` test: report only


SHORT_EPOCH_NAMED = """
def train(model, optimizer, loader, k, epochs, sized):
    for epoch in range(epochs):
        steps_in_epoch = {length}
        for step, (x, y) in enumerate(loader):
            loss = (model(x) - y).pow(2).mean() / k
            loss.backward()
            if (step + 1) % k == 0 or (steps_in_epoch <= k and step + 1 == steps_in_epoch):
                optimizer.step()
                optimizer.zero_grad()
"""

TRAINER_SHORT_EPOCH = """
class Trainer:
    def train(self, model, loader):
        for epoch in range(self.epochs):
            steps_in_epoch = len(loader) if self.sized else self.max_steps * self.k
            for step, batch in enumerate(loader):
                self.training_step(model, batch)
                if (step + 1) % self.k == 0 or (steps_in_epoch <= self.k and (step + 1) == steps_in_epoch):
                    self.optimizer.step()
                    self.optimizer.zero_grad()

    def training_step(self, model, batch):
        loss = model(batch).mean() / self.k
        loss.backward()
"""


@pytest.mark.parametrize("length", ["len(loader)", "len(loader) if sized else 10 * k"])
def test_the_epoch_length_held_in_a_name_is_read_as_len(length):
    source = SHORT_EPOCH_NAMED.replace("{length}", length)
    assert found(source) == {("ACC005", 8)}
    # a name that holds something else than the epoch's length: taken as an end clause
    assert found(SHORT_EPOCH_NAMED.replace("{length}", "total_steps")) == set()


def test_the_epoch_length_held_in_a_name_in_a_trainer_class():
    result = engine.check_source(textwrap.dedent(TRAINER_SHORT_EPOCH), "t.py")
    codes = [(f.code, f.location.row) for f in result.findings]
    assert ("ACC005", 8) in codes
    assert "fires only when an epoch is shorter than one window" in next(f.message for f in result.findings if f.code == "ACC005")


def test_a_clause_written_over_several_lines_is_named_on_one():
    source = SHORT_EPOCH.format(clause="(\n                len(loader) <= k\n                and step + 1 == len(loader)\n            )")
    result = engine.check_source(textwrap.dedent(source), "t.py")
    assert "`len(loader) <= k and step + 1 == len(loader)`" in result.findings[0].message


def test_a_plain_end_clause_flushes_every_epoch():
    assert found(SHORT_EPOCH.format(clause="step + 1 == len(loader)")) == set()
    # a length compared with something else than k is no short-epoch test: taken as an end clause
    assert found(SHORT_EPOCH.format(clause="(len(loader) <= 4 and step + 1 == len(loader))")) == set()


def test_an_object_built_with_a_literal_one_holds_no_window():
    source = ACCELERATOR.format(divide="").replace("gradient_accumulation_steps=args.gas", "gradient_accumulation_steps=1")
    assert found(source) == set()
    assert found(source.replace("gradient_accumulation_steps=1", "gradient_accumulation_steps=4")) == {("ACC001", 9)}
    rebound = source.replace(
        "    for i, batch", "    accelerator.gradient_accumulation_steps = args.gas\n    for i, batch"
    )
    assert found(rebound) == {("ACC001", 10)}


# --- argparse dest names: which attribute is the accumulation flag -------------------------------

UNAPPLIED = """
import argparse

parser = argparse.ArgumentParser()
parser.add_argument({flags}, type=int, default=4{dest})
args = parser.parse_args()


def train(model, opt, loader):
    for i, batch in enumerate(loader):
        loss = model(batch).mean() / args.{attr}
        loss.backward()
        opt.step()
        opt.zero_grad()
"""


@pytest.mark.parametrize(
    "flags, dest, attr",
    [
        ('"--gradient-accumulation-steps"', ', dest="gas"', "gas"),  # dest= names the attribute
        ('"--gas", "--gradient-accumulation-steps"', "", "gas"),  # the first long option does
        ('"-g", "--grad-accum"', "", "grad_accum"),  # a long option before a short one
        ('"--n"', ', dest="accum_steps"', "accum_steps"),
    ],
)
def test_the_attribute_argparse_gives_an_accumulation_flag_is_k(flags, dest, attr):
    # The loss is divided by the accumulation steps but the step runs every micro-step (ACC012).
    assert found(UNAPPLIED.format(flags=flags, dest=dest, attr=attr)) == {("ACC012", 13)}


def test_a_flag_that_is_not_the_accumulation_steps_is_not_k():
    # `--loss-scale` with dest="gas": nothing says accumulation; the division is just a scale.
    assert found(UNAPPLIED.format(flags='"--loss-scale"', dest=', dest="gas"', attr="gas")) == set()
    assert found(UNAPPLIED.format(flags='"--ws", "--warmup-steps"', dest="", attr="ws")) == set()


def test_flag_dest_derivation():
    from accumlint.analysis.windows import flag_dest

    def dest(call: str):
        return flag_dest(ast.parse(call).body[0].value)  # type: ignore[attr-defined]

    assert dest('p.add_argument("--accum-steps", type=int)') == "accum_steps"
    assert dest('p.add_argument("-a", "--accum-steps")') == "accum_steps"
    assert dest('p.add_argument("-a")') == "a"
    assert dest('p.add_argument("steps")') == "steps"
    assert dest('p.add_argument("--accum-steps", dest="k")') == "k"
    assert dest('p.add_argument(*names)') is None


def test_k_read_through_getattr_with_a_default_is_the_attribute():
    init = 'self.accum = getattr(cfg, "grad_accum", 1)'
    assert found(_trainer(init=init, k="self.accum", divide=" / cfg.grad_accum / self.accum")) == {("ACC010", 12)}
    assert found(_trainer(init=init, k="self.accum", divide=" / self.cfg.grad_accum")) == set()
    # the default of 1 is what a missing field gives, not what k is: still a window
    assert found(_trainer(init=init, k="self.accum")) == {("ACC001", 12)}
