"""Calls resolved the way Python runs them: by class, by closure, through the project's imports."""

from __future__ import annotations

import textwrap
from pathlib import Path

from accumlint import engine
from accumlint.project import ProjectIndex, project_root
from tests.snippets import findings_of


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())


def _found(path: Path) -> set[tuple[str, int]]:
    """The findings in the checked file itself."""
    return {(f.code, f.location.row) for f in findings_of(path.read_bytes(), path=str(path)) if f.filename == str(path)}


LOOP = """
    def train(self, loader):
        for i, batch in enumerate(loader):
            loss = self.compute_loss(batch)
            loss.backward()
            if (i + 1) % self.accum == 0 or i + 1 == len(loader):
                self.opt.step()
                self.opt.zero_grad()
"""

TWO_CLASSES = f"""
class Trainer:
    def compute_loss(self, batch):
        return self.model(batch).mean() / self.accum
{LOOP}

class Evaluator:
    def compute_loss(self, batch):
        return self.model(batch).mean()


class NaiveTrainer:
    def compute_loss(self, batch):
        return self.model(batch).mean()
{LOOP}
"""


def test_each_class_calls_its_own_method(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    path = tmp_path / "train.py"
    path.write_text(TWO_CLASSES)
    lines = TWO_CLASSES.splitlines()
    naive_backward = max(i for i, line in enumerate(lines, 1) if "loss.backward()" in line)
    assert _found(path) == {("ACC001", naive_backward)}
    fixed = engine.fix_source(TWO_CLASSES, str(path)).fixed_source
    assert fixed.count("(loss / self.accum).backward()") == 1
    assert fixed.count("loss.backward()") == 1  # Trainer's loss, already divided, is left alone
    assert engine.check_source(fixed, str(path)).findings == []


def test_same_result_without_a_file_on_disk():
    lines = TWO_CLASSES.splitlines()
    naive_backward = max(i for i, line in enumerate(lines, 1) if "loss.backward()" in line)
    found = {(f.code, f.location.row) for f in engine.check_source(TWO_CLASSES, "<string>").findings}
    assert found == {("ACC001", naive_backward)}


def test_inherited_method_from_a_library_class_is_unknown(tmp_path):
    source = TWO_CLASSES.replace("class NaiveTrainer:\n    def compute_loss(self, batch):\n        return self.model(batch).mean()\n",
                                 "class NaiveTrainer(transformers.Trainer):\n")
    assert "transformers.Trainer" in source
    (tmp_path / "train.py").write_text(source)
    assert _found(tmp_path / "train.py") == set()


PACKAGE = {
    "pyproject.toml": "",
    "pkg/__init__.py": "from .losses import compute_loss\n",
    "pkg/losses.py": """
        def compute_loss(model, batch, accum_steps):
            return model(batch).mean() / accum_steps


        def raw_loss(model, batch):
            return model(batch).mean()
    """,
    "pkg/base.py": """
        from . import losses


        class Base:
            def micro_step(self, batch):
                loss = losses.raw_loss(self.model, batch)
                loss.backward()

            def opt_step(self):
                self.optimizer.step()
                self.optimizer.zero_grad()
    """,
}

SCRIPT = """
    import functools
    import pkg.losses as L
    from pkg import compute_loss
    from pkg.base import Base


    def divided(model, optimizer, loader, k):
        for i, batch in enumerate(loader):
            loss = compute_loss(model, batch, k)
            loss.backward()
            if (i + 1) % k == 0 or i + 1 == len(loader):
                optimizer.step()
                optimizer.zero_grad()


    def undivided(model, optimizer, loader, k):
        for i, batch in enumerate(loader):
            loss = L.raw_loss(model, batch)
            loss.backward()  # line 19
            if (i + 1) % k == 0 or i + 1 == len(loader):
                optimizer.step()
                optimizer.zero_grad()


    def through_partial(model, optimizer, loader, k):
        scaled = functools.partial(L.compute_loss, model)
        for i, batch in enumerate(loader):
            loss = scaled(batch, k)
            loss.backward()
            if (i + 1) % k == 0 or i + 1 == len(loader):
                optimizer.step()
                optimizer.zero_grad()


    def through_closure(model, optimizer, loader, k):
        def step():
            optimizer.step()
            optimizer.zero_grad()

        for i, batch in enumerate(loader):
            loss = model(batch).mean() / k
            loss.backward()
            if (i + 1) % k == 0:  # line 43
                step()


    class Trainer(Base):
        def train_epoch(self, loader):
            for i, batch in enumerate(loader):
                self.micro_step(batch)
                if (i + 1) % self.k == 0:  # line 51
                    super().opt_step()
"""


def test_calls_into_other_modules_of_the_project(tmp_path):
    _write(tmp_path, {**PACKAGE, "train.py": SCRIPT})
    # The divided helpers (a re-export in __init__, a partial, a module alias) silence ACC001;
    # the raw one does not; steps reached through a closure and through a base class in another
    # module make windows of their loops (here: with no end-of-data clause).
    assert _found(tmp_path / "train.py") == {("ACC001", 19), ("ACC005", 43), ("ACC005", 51)}
    # The base class's micro_step runs backward on an undivided loss every micro-step of the
    # Trainer's window: reported in base.py, where the backward is.
    result = engine.check_source((tmp_path / "train.py").read_bytes(), str(tmp_path / "train.py"))
    elsewhere = {(Path(f.filename).name, f.code, f.location.row) for f in result.findings if f.filename != str(tmp_path / "train.py")}
    assert elsewhere == {("base.py", "ACC001", 7)}


def test_a_module_that_does_not_parse_is_unknown_not_an_error(tmp_path):
    _write(tmp_path, {**PACKAGE, "train.py": SCRIPT})
    (tmp_path / "pkg/losses.py").write_text("def compute_loss(:\n")
    found = _found(tmp_path / "train.py")
    assert ("ACC001", 19) not in found  # raw_loss cannot be read: unknown, so silent


def test_project_root_and_module_files(tmp_path):
    _write(tmp_path, {**PACKAGE, "train.py": SCRIPT, "src/other/__init__.py": "", "scripts/run.py": ""})
    assert project_root(tmp_path / "pkg" / "base.py") == tmp_path
    index = ProjectIndex(tmp_path)
    importer = tmp_path / "train.py"
    assert index.module_file(importer, "pkg.losses") == tmp_path / "pkg" / "losses.py"
    assert index.module_file(importer, "pkg") == tmp_path / "pkg" / "__init__.py"
    assert index.module_file(importer, "other") == tmp_path / "src" / "other" / "__init__.py"
    assert index.module_file(tmp_path / "pkg" / "base.py", "losses", level=1) == tmp_path / "pkg" / "losses.py"
    assert index.module_file(importer, "torch") is None
    assert index.split(importer, "pkg.losses.compute_loss") == (tmp_path / "pkg" / "losses.py", "compute_loss")


def test_without_a_marker_the_top_package_folder_is_the_root(tmp_path):
    _write(tmp_path, {"a/pkg/__init__.py": "", "a/pkg/sub/__init__.py": "", "a/pkg/sub/m.py": ""})
    assert project_root(tmp_path / "a" / "pkg" / "sub" / "m.py") == tmp_path / "a"


STEPPER = """
import torch


class Stepper:
    def __init__(self, optimizer, grad_accum):
        self.optimizer, self.grad_accum = optimizer, grad_accum

    def step(self, loss, global_step):
        loss.backward()
        if (global_step + 1) % self.grad_accum == 0:
            self.optimizer.step()
            self.optimizer.zero_grad()
"""

STEPPER_DRIVER = """
from optim.stepper import Stepper


def main(model, loader, optimizer, args):
    stepper = Stepper(optimizer, args.grad_accum)
    for global_step, batch in enumerate(loader):
        stepper.step(model(batch).mean(), global_step)
"""


def test_without_a_marker_the_folder_the_check_runs_from_is_the_root(tmp_path, monkeypatch):
    """An exported tree without `.git`: `optim/` has no `__init__.py`, and the script that calls
    its class every batch sits above it. Checked from the tree's top, the window in the class
    is read with its caller; checked from inside `optim/`, that folder is the project."""
    _write(tmp_path, {"tree/optim/stepper.py": STEPPER, "tree/train.py": STEPPER_DRIVER})
    stepper = tmp_path / "tree" / "optim" / "stepper.py"
    monkeypatch.chdir(tmp_path / "tree")
    assert project_root(stepper) == (tmp_path / "tree").resolve()
    assert {code for code, _ in _found(stepper)} == {"ACC001"}
    monkeypatch.chdir(tmp_path / "tree" / "optim")
    assert project_root(stepper) == (tmp_path / "tree" / "optim").resolve()


def test_an_edited_module_is_read_again(tmp_path):
    _write(tmp_path, {**PACKAGE, "train.py": SCRIPT})
    assert ("ACC001", 19) in _found(tmp_path / "train.py")
    losses = tmp_path / "pkg" / "losses.py"
    losses.write_text(losses.read_text().replace("return model(batch).mean()\n", "return model(batch).mean() / 8\n"))
    assert ("ACC001", 19) not in _found(tmp_path / "train.py")


def test_a_result_names_the_modules_it_rests_on(tmp_path):
    _write(tmp_path, {**PACKAGE, "train.py": SCRIPT, "pkg/unused.py": "def f():\n    pass\n"})
    result = engine.check_source((tmp_path / "train.py").read_bytes(), str(tmp_path / "train.py"))
    pkg = (tmp_path / "pkg").resolve()
    # __init__ for the re-export, losses behind it and behind the alias, base for the class
    assert set(result.dependencies) == {str(pkg / name) for name in ("__init__.py", "losses.py", "base.py")}
    before = dict(result.dependencies)
    (tmp_path / "pkg" / "base.py").write_text((tmp_path / "pkg" / "base.py").read_text() + "\n# edited\n")
    after = engine.check_source((tmp_path / "train.py").read_bytes(), str(tmp_path / "train.py")).dependencies
    assert after[str(pkg / "base.py")] != before[str(pkg / "base.py")]
    assert after[str(pkg / "losses.py")] == before[str(pkg / "losses.py")]


def test_a_cached_result_is_stale_once_a_module_it_rests_on_changes(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from accumlint.cli import cli

    _write(tmp_path, {**PACKAGE, "train.py": SCRIPT})
    monkeypatch.chdir(tmp_path)

    def rows() -> set[str]:
        output = CliRunner().invoke(cli, ["check", "--jobs", "1", "train.py"]).output
        return {line.split(": ")[0].split(":", 1)[1] for line in output.splitlines() if ": ACC" in line}

    assert "19:9" in rows()  # ACC001 on the undivided loss from L.raw_loss
    assert "19:9" in rows()  # the same from the cache
    losses = tmp_path / "pkg" / "losses.py"
    losses.write_text(losses.read_text().replace("return model(batch).mean()\n", "return model(batch).mean() / 8\n"))
    assert "19:9" not in rows()


HELPERS = {
    "pyproject.toml": "",
    "pkg/__init__.py": "",
    "pkg/steps.py": """
        def forward_backward(model, batch):
            loss = model(batch).mean()
            loss.backward()
            return loss


        def scaled_forward_backward(model, batch, k):
            loss = model(batch).mean() / k
            loss.backward()
    """,
    "train.py": """
        from pkg.steps import forward_backward, scaled_forward_backward


        class Trainer:
            def micro_step(self, batch):
                loss = self.model(batch).mean()
                loss.backward()  # line 7
                return loss.item()

            def train_epoch(self, loader):
                for i, batch in enumerate(loader):
                    self.micro_step(batch)
                    if (i + 1) % self.k == 0 or i + 1 == len(loader):
                        self.opt.step()
                        self.opt.zero_grad()


        def loop(model, opt, loader, k):
            for i, batch in enumerate(loader):
                forward_backward(model, batch)
                if (i + 1) % k == 0 or i + 1 == len(loader):
                    opt.step()
                    opt.zero_grad()


        def scaled_loop(model, opt, loader, k):
            for i, batch in enumerate(loader):
                scaled_forward_backward(model, batch, k)
                if (i + 1) % k == 0 or i + 1 == len(loader):
                    opt.step()
                    opt.zero_grad()
    """,
}


def test_a_backward_inside_a_helper_is_reported_where_it_is(tmp_path, monkeypatch):
    _write(tmp_path, HELPERS)
    monkeypatch.chdir(tmp_path)
    result = engine.check_source((tmp_path / "train.py").read_bytes(), "train.py")
    found = {(f.filename, f.code, f.location.row): f for f in result.findings}
    assert set(found) == {("train.py", "ACC001", 7), (str(Path("pkg") / "steps.py"), "ACC001", 3)}
    method = found[("train.py", "ACC001", 7)]
    assert "(called every micro-step from `train_epoch`, line 12)" in method.message
    assert method.fix is not None  # `self.k` means the same in both methods
    other = found[(str(Path("pkg") / "steps.py"), "ACC001", 3)]
    assert "(called every micro-step from `loop`, line 20)" in other.message
    assert other.fix is None  # never an edit to another file
    fixed = engine.fix_source((tmp_path / "train.py").read_bytes(), "train.py").fixed_source
    assert b"(loss / self.k).backward()  # line 7" in fixed


def test_a_local_k_is_not_written_into_a_helper(tmp_path):
    files = dict(HELPERS)
    files["train.py"] = files["train.py"].replace("self.k", "k").replace("def train_epoch(self, loader):", "def train_epoch(self, loader, k):")
    _write(tmp_path, files)
    result = engine.check_source((tmp_path / "train.py").read_bytes(), str(tmp_path / "train.py"))
    method = next(f for f in result.findings if f.location.row == 7 and f.filename == str(tmp_path / "train.py"))
    assert method.code == "ACC001" and method.fix is None  # `k` is not in the helper's sight


def test_a_module_read_for_anothers_calls_is_checked_the_same(tmp_path):
    """loops.py, read (parsed and analysed) while main.py's calls were followed, is checked from
    that reading: the findings are those of a process that never saw main.py."""
    from accumlint import project
    from accumlint.analysis import calls

    _write(tmp_path, {
        "pyproject.toml": "",
        "loops.py": """
            def train(model, loader, optimizer, k):
                for i, (x, y) in enumerate(loader):
                    loss = model(x, y)
                    loss.backward()
                    if (i + 1) % k == 0 or i + 1 == len(loader):
                        optimizer.step()
                        optimizer.zero_grad()
        """,
        "main.py": """
            from loops import train


            def main(model, loader, optimizer):
                for epoch in range(3):
                    train(model, loader, optimizer, 4)
        """,
    })
    loops = tmp_path / "loops.py"

    def fresh() -> None:
        project._INDEXES.clear()
        project._ROOTS.clear()
        calls._ANALYSED.clear()

    fresh()
    alone = engine.check_source(loops.read_bytes(), str(loops))
    assert [f.code for f in alone.findings] == ["ACC001"]
    fresh()
    engine.check_source((tmp_path / "main.py").read_bytes(), str(tmp_path / "main.py"))
    index = project.index_for(loops)
    assert index.parsed(loops, loops.read_text()) is not None  # read already: its tree is reused
    after = engine.check_source(loops.read_bytes(), str(loops))
    assert after.findings == alone.findings
    # What main.py's calls looked up may add modules the result is said to rest on (a cached
    # result is then dropped more often), never remove one.
    assert set(alone.dependencies) <= set(after.dependencies)
    # Its text as checked differs from the one read (an editor's unsaved buffer): parsed anew.
    assert index.parsed(loops, loops.read_text() + "\n") is None
    edited = engine.check_source(loops.read_bytes() + b"\n", str(loops))
    assert [(f.code, f.location.row) for f in edited.findings] == [(f.code, f.location.row) for f in alone.findings]


def test_a_module_named_from_a_folder_above_the_script(tmp_path):
    """`from src.heads import Head` in medium/src/train.py, a folder with no `__init__.py`, run
    from medium/: the import names a folder above the script's, inside the project."""
    (tmp_path / ".git").mkdir()
    _write(tmp_path, {"medium/src/heads.py": "class Head:\n    pass\n", "medium/src/train.py": "from src.heads import Head\n"})
    index = ProjectIndex(project_root(tmp_path / "medium" / "src" / "train.py"))
    found = index.split(tmp_path / "medium" / "src" / "train.py", "src.heads.Head")
    assert found is not None and found[0].resolve() == (tmp_path / "medium" / "src" / "heads.py").resolve()
    assert found[1] == "Head"


def test_no_module_is_taken_from_above_the_project(tmp_path):
    _write(tmp_path, {"src/heads.py": "class Head:\n    pass\n", "proj/setup.py": "", "proj/run/train.py": "import src.heads\n"})
    index = ProjectIndex(project_root(tmp_path / "proj" / "run" / "train.py"))
    assert index.split(tmp_path / "proj" / "run" / "train.py", "src.heads.Head") is None
