"""Each rule across the ways real training loops are written.

A generator renders one loop per combination of
- context: module-level script, a function, a method with `self.` attributes, nested in an epoch loop;
- gate: `(i + 1) % k == 0`, `step % k == k - 1`, `not (i + 1) % k`, an early
  `if (i + 1) % k != 0: continue`, a flag `do_step = (i + 1) % k == 0` then `if do_step:`,
  a `while` loop over a manual counter, and a nanoGPT inner `for micro_step in range(k)` loop;
- names: loss/optimizer/model/loader/accum_steps, objective/opt/net/train_loader/cfg.accum_iters,
  and the Hugging Face spelling args.gradient_accumulation_steps;
- AMP: none, `torch.cuda.amp.GradScaler()` + `torch.cuda.amp.autocast()`, and
  `torch.amp.GradScaler("cuda")` + `torch.autocast("cuda", ...)`.

A line that must be reported carries a marker comment `# <ACCnnn`; the expected set of
(code, row) is read from the markers, so each case asserts these findings, on these rows, and nothing
else. Gates of the cases that are not about ACC005 carry an end-of-data clause (or have no epoch end),
so only the rule under test fires.

Where a fix applies it is checked: the fixed text compiles, is clean of that code, fixing again
changes nothing, and every comment of the original survives.
"""

from __future__ import annotations

import io
import re
import textwrap
import tokenize
from dataclasses import dataclass, replace

import pytest

from accumlint.engine import fix_source
from tests.snippets import findings_of

_MARK = re.compile(r"<(ACC\d{3})")


def expected(source: str) -> set[tuple[str, int]]:
    out = set()
    for row, line in enumerate(source.splitlines(), start=1):
        if "#" in line:
            out |= {(code, row) for code in _MARK.findall(line.split("#", 1)[1])}
    return out


def found(source: str) -> set[tuple[str, int]]:
    return {(f.code, f.location.row) for f in findings_of(source, path="case.py")}


def comments(source: str) -> list[str]:
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return [t.string for t in tokens if t.type == tokenize.COMMENT]


# --- the generator -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Names:
    model: str
    opt: str
    loader: str
    k: str
    loss: str
    crit: str
    scaler: str
    sched: str

    def as_method(self) -> "Names":
        def selfed(name: str) -> str:
            return f"self.{name}"

        return Names(*(selfed(getattr(self, f)) if f != "loss" else self.loss for f in self.__dataclass_fields__))


NAMES = {
    "plain": Names("model", "optimizer", "loader", "accum_steps", "loss", "criterion", "scaler", "scheduler"),
    "objective": Names("net", "opt", "train_loader", "cfg.accum_iters", "objective", "loss_fn", "grad_scaler", "lr_sched"),
    "hf": Names("model", "optimizer", "train_dataloader", "args.gradient_accumulation_steps", "loss", "criterion",
                "scaler", "lr_scheduler"),
}

CONTEXTS = ("script", "function", "method", "epoch")
GATES = ("mod_eq", "k_minus_1", "not_mod", "continue", "flag", "while", "inner")
# ACC005 is about the end of an epoch: only the gates that count the batches of a sized loader.
EPOCH_GATES = ("mod_eq", "k_minus_1", "not_mod", "continue", "flag")

AMP = {
    "none": None,
    "cuda_amp": ("torch.cuda.amp.GradScaler()", "torch.cuda.amp.autocast()"),
    "torch_amp": ('torch.amp.GradScaler("cuda")', 'torch.autocast("cuda", dtype=torch.float16)'),
}


@dataclass(frozen=True)
class Loop:
    """The parts of one training loop, `{model}`-style placeholders filled from Names.

    forward: lines of the micro-step before backward (may use {amp_enter} handled by render);
    backward: the backward line(s); step: lines of the step block; every: lines run every
    micro-step after the gate; setup/after: lines before/after the loop at loop level."""

    forward: tuple[str, ...]
    backward: tuple[str, ...]
    step: tuple[str, ...]
    every_before: tuple[str, ...] = ()
    every_after: tuple[str, ...] = ()
    setup: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    end_clause: bool = True
    amp: str = "none"


def _counter_and_header(gate: str, n: Names, end: bool) -> tuple[list[str], list[str], list[str]]:
    """(lines before the loop, the loop header, lines at the top of the body after the batch),
    and the gate lines are produced by _gate_lines."""
    if gate == "while":
        return (
            ["data_iter = iter(" + n.loader + ")", "step = 0"],
            ["while step < max_steps:"],
            ["x, y = next(data_iter)"],
        )
    if gate == "inner":
        return ([], ["for it in range(max_iters):"], [])
    counter = "step" if gate == "k_minus_1" else "i"
    return ([], [f"for {counter}, (x, y) in enumerate({n.loader}):"], [])


def _gate_lines(gate: str, n: Names, end: bool) -> tuple[list[str], str, list[str]]:
    """(lines before the gate in the body, gate header or '' for none, lines after the step block).
    The step block is indented under the header when there is one."""
    k, loader = n.k, n.loader
    if gate == "mod_eq":
        tail = f" or i + 1 == len({loader})" if end else ""
        return [], f"if (i + 1) % {k} == 0{tail}:", []
    if gate == "k_minus_1":
        tail = f" or step == len({loader}) - 1" if end else ""
        return [], f"if step % {k} == {k} - 1{tail}:", []
    if gate == "not_mod":
        tail = f" or i + 1 == len({loader})" if end else ""
        return [], f"if not (i + 1) % {k}{tail}:", []
    if gate == "continue":
        tail = f" and i + 1 != len({loader})" if end else ""
        return [f"if (i + 1) % {k} != 0{tail}:", "    continue"], "", []
    if gate == "flag":
        tail = f" or i + 1 == len({loader})" if end else ""
        return [f"do_step = (i + 1) % {k} == 0{tail}"], "if do_step:", []
    if gate == "while":
        return ["step += 1"], f"if step % {k} == 0:", []
    raise AssertionError(gate)


def render(context: str, gate: str, names: str, loop: Loop) -> str:
    n = NAMES[names]
    if context == "method":
        n = n.as_method()

    def fill(lines) -> list[str]:
        return [line.format(**{f: getattr(n, f) for f in n.__dataclass_fields__}) for line in lines]

    amp = AMP[loop.amp]
    forward = fill(loop.forward)
    if amp is not None:
        forward = [f"with {amp[1]}:"] + ["    " + line for line in forward]

    before, header, top = _counter_and_header(gate, n, loop.end_clause)
    body: list[str] = list(top)
    if gate == "inner":
        # every-micro-step lines live inside the micro-step loop; the step block follows it.
        micro = ['x, y = get_batch("train")'] + fill(loop.every_before) + forward + fill(loop.backward)
        micro += fill(loop.every_after)
        body += [f"for micro_step in range({n.k}):"] + ["    " + line for line in micro]
        body += fill(loop.step)
    else:
        body += fill(loop.every_before) + forward + fill(loop.backward)
        pre_gate, gate_header, _ = _gate_lines(gate, n, loop.end_clause)
        if gate == "continue":
            # Everything after `if not boundary: continue` runs once per window, so the
            # every-micro-step lines must come before that gate.
            body += fill(loop.every_after)
        body += pre_gate
        if gate_header:
            body += [gate_header] + ["    " + line for line in fill(loop.step)]
        else:
            body += fill(loop.step)
        if gate != "continue":
            body += fill(loop.every_after)

    loop_lines = before + fill(loop.setup) + header + ["    " + line for line in body] + fill(loop.after)
    if context == "epoch":
        loop_lines = ["for epoch in range(num_epochs):"] + ["    " + line for line in loop_lines]

    scaler_setup = [f"{n.scaler} = {amp[0]}"] if amp is not None else []
    if context in ("script", "epoch"):
        setup = []
        if "." not in n.k:
            setup.append(f"{n.k} = 4")
        setup += scaler_setup
        setup += [f"{n.opt} = torch.optim.AdamW({n.model}.parameters(), lr=3e-4)"]
        lines = ["import torch", ""] + setup + loop_lines
    elif context == "function":
        params = [n.model, n.opt, n.loader, n.crit, n.k.split(".")[0]]
        if amp is not None:
            params.append(n.scaler)
        if any("{sched}" in line for line in loop.step + loop.every_after + loop.every_before):
            params.append(n.sched)
        params += ["max_steps=1000", "max_iters=1000"]
        lines = ["import torch", "", "", "def train(" + ", ".join(dict.fromkeys(params)) + "):"]
        lines += ["    " + line for line in loop_lines]
    else:  # method
        lines = ["import torch", "", "", "class Trainer:", "    def __init__(self, model, cfg):"]
        lines += ["        self.model = model", "        self.cfg = cfg"]
        lines += [f"        {s.replace('self.', 'self.', 1)}" for s in scaler_setup]
        lines += ["", "    def train_epoch(self, max_steps=1000, max_iters=1000):"]
        lines += ["        " + line for line in loop_lines]
    return "\n".join(lines) + "\n"


# --- the loops each rule is tested on ---------------------------------------------------------------

FWD_SCALED = ("out = {model}(x)", "{loss} = {crit}(out, y) / {k}")
FWD_UNSCALED = ("out = {model}(x)", "{loss} = {crit}(out, y)")
BACKWARD = ("{loss}.backward()",)
STEP = ("{opt}.step()", "{opt}.zero_grad()")


def amp_backward(marker: str = "") -> tuple[str, ...]:
    return ("{scaler}.scale({loss}).backward()" + marker,)


AMP_STEP = ("{scaler}.step({opt})", "{scaler}.update()", "{opt}.zero_grad()")

CLEAN = Loop(FWD_SCALED, BACKWARD, STEP)
CLEAN_AMP = Loop(
    FWD_SCALED,
    amp_backward(),
    ("{scaler}.unscale_({opt})", "torch.nn.utils.clip_grad_norm_({model}.parameters(), 1.0)") + AMP_STEP,
)


def rule_loops(code: str) -> dict[str, Loop]:
    """The buggy loops of one rule, by name; markers sit on the expected lines."""
    if code == "ACC001":
        return {
            "plain": Loop(FWD_UNSCALED, ("{loss}.backward()  # keep this note <ACC001",), STEP),
            "inline_forward": Loop(("out = {model}(x)",), ("{crit}(out, y).backward()  # <ACC001",), STEP),
            "cuda_amp": Loop(FWD_UNSCALED, amp_backward("  # amp note <ACC001"), AMP_STEP, amp="cuda_amp"),
            "torch_amp": Loop(FWD_UNSCALED, amp_backward("  # <ACC001"), AMP_STEP, amp="torch_amp"),
        }
    if code == "ACC002":
        return {
            "running_total": Loop(FWD_SCALED, BACKWARD + ("total_loss += {loss}  # sum for logging <ACC002",), STEP,
                                  setup=("total_loss = 0.0",)),
            "list_append": Loop(FWD_SCALED, BACKWARD + ("losses.append({loss})  # <ACC002",), STEP,
                                setup=("losses = []",)),
            "amp_total": Loop(FWD_SCALED, amp_backward() + ("running = running + {loss}  # <ACC002",), AMP_STEP,
                              setup=("running = 0.0",), amp="cuda_amp"),
        }
    if code == "ACC003":
        return {
            "gru_hidden": Loop(
                ("out, hidden = {model}(x, hidden)  # carried <ACC003", "{loss} = {crit}(out, y) / {k}"),
                BACKWARD, STEP, setup=("hidden = torch.zeros(num_layers, batch_size, hidden_size)",),
            ),
            "lstm_tuple": Loop(
                ("out, (h, c) = {model}(x, (h, c))  # <ACC003", "{loss} = {crit}(out, y) / {k}"),
                BACKWARD, STEP,
                setup=("h = torch.zeros(num_layers, batch_size, hidden_size)",
                       "c = torch.zeros(num_layers, batch_size, hidden_size)"),
            ),
            # An autoregressive model fed its own (differentiable) output, assigned after backward.
            "fed_back_output": Loop(
                ("out = {model}(inp)", "{loss} = {crit}(out, y) / {k}"),
                BACKWARD + ("inp = out  # feed back <ACC003",), STEP, setup=("inp = x0",),
            ),
        }
    if code == "ACC004":
        clip = "torch.nn.utils.clip_grad_norm_({model}.parameters(), max_norm)"
        return {
            "no_unscale": Loop(FWD_SCALED, amp_backward(), (clip + "  # clip <ACC004",) + AMP_STEP, amp="cuda_amp"),
            "unscale_after_clip": Loop(
                FWD_SCALED, amp_backward(),
                (clip + "  # <ACC004", "{scaler}.unscale_({opt})") + AMP_STEP, amp="torch_amp",
            ),
            "clip_value": Loop(
                FWD_SCALED, amp_backward(),
                ("torch.nn.utils.clip_grad_value_({model}.parameters(), 1.0)  # <ACC004",) + AMP_STEP,
                amp="torch_amp",
            ),
        }
    raise AssertionError(code)


def _name_for(context: str, gate: str) -> str:
    """Rotate the naming schemes over the matrix so each appears with every context and gate."""
    keys = list(NAMES)
    return keys[(CONTEXTS.index(context) + GATES.index(gate)) % len(keys)]


MATRIX = []
for _code in ("ACC001", "ACC002", "ACC003", "ACC004"):
    for _variant in rule_loops(_code):
        for _context in CONTEXTS:
            for _gate in GATES:
                MATRIX.append(pytest.param(_code, _variant, _context, _gate, id=f"{_code}-{_variant}-{_context}-{_gate}"))


def _fix_checks(source: str, code: str, unsafe: bool = False) -> None:
    once = fix_source(source, "case.py", unsafe_fixes=unsafe)
    assert once.error is None, once.error
    assert once.fixed_source is not None, f"no fix applied for {code}"
    fixed = once.fixed_source
    compile(fixed, "fixed.py", "exec")
    left = {c for c, _ in found(fixed)}
    assert code not in left, f"{code} still reported after its fix:\n{fixed}"
    twice = fix_source(fixed, "case.py", unsafe_fixes=unsafe)
    assert twice.error is None, twice.error
    assert twice.fixed_source in (None, fixed), "fixing twice differs from fixing once"
    missing = [c for c in comments(source) if c not in comments(fixed)]
    assert not missing, f"comments lost by the fix: {missing}\n{fixed}"


@pytest.mark.parametrize("code, variant, context, gate", MATRIX)
def test_rule_matrix(code, variant, context, gate):
    source = render(context, gate, _name_for(context, gate), rule_loops(code)[variant])
    compile(source, "case.py", "exec")
    want = expected(source)
    assert want and {c for c, _ in want} == {code}
    assert found(source) == want, source


CARRIED = {"gru_hidden": ("hidden",), "lstm_tuple": ("h", "c"), "fed_back_output": ("inp",)}


@pytest.mark.parametrize("code, variant, context, gate", MATRIX)
def test_rule_matrix_fix(code, variant, context, gate):
    source = render(context, gate, _name_for(context, gate), rule_loops(code)[variant])
    # ACC003's fix is unsafe where the state's structure is not known from the code (a fed-back input).
    _fix_checks(source, code, unsafe=(code == "ACC003"))
    if code == "ACC003":
        # The detach must come after the iteration's last assignment of the state, or it detaches a
        # value that is about to be overwritten by the graph-carrying one.
        fixed = fix_source(source, "case.py", unsafe_fixes=True).fixed_source.splitlines()
        assigned = max(i for i, line in enumerate(fixed) if "<ACC003" in line)
        for name in CARRIED[variant]:
            detached = [i for i, line in enumerate(fixed) if f"{name} = {name}.detach()" in line
                        or f"{name}.detach()" in line and line.lstrip().startswith(f"{name} =")]
            assert detached and max(detached) > assigned, "\n".join(fixed)


@pytest.mark.parametrize("names", list(NAMES))
@pytest.mark.parametrize("code", ["ACC001", "ACC002", "ACC003", "ACC004"])
def test_every_naming_scheme(code, names):
    """Each naming scheme with the plainest gate, independent of the rotation above."""
    for variant, loop in rule_loops(code).items():
        source = render("function", "mod_eq", names, loop)
        assert found(source) == expected(source), f"{variant}:\n{source}"


# --- clean counterparts: the same matrix with the contract kept ----------------------------------------


CLEAN_LOOPS = {
    "plain": CLEAN,
    "cuda_amp": replace(CLEAN_AMP, amp="cuda_amp"),
    "torch_amp": replace(CLEAN_AMP, amp="torch_amp"),
    "logged_item": Loop(FWD_SCALED, BACKWARD + ("total_loss += {loss}.item()",), STEP, setup=("total_loss = 0.0",)),
    "logged_detach": Loop(FWD_SCALED, BACKWARD + ("losses.append({loss}.detach())",), STEP, setup=("losses = []",)),
    "hidden_detached": Loop(
        ("hidden = hidden.detach()", "out, hidden = {model}(x, hidden)", "{loss} = {crit}(out, y) / {k}"),
        BACKWARD, STEP, setup=("hidden = torch.zeros(num_layers, batch_size, hidden_size)",),
    ),
    "hidden_detached_after_backward": Loop(
        ("out, hidden = {model}(x, hidden)", "{loss} = {crit}(out, y) / {k}"),
        BACKWARD + ("hidden = hidden.detach()",), STEP,
        setup=("hidden = torch.zeros(num_layers, batch_size, hidden_size)",),
    ),
    "in_place_division": Loop(FWD_UNSCALED + ("{loss} /= {k}",), BACKWARD, STEP),
    "division_at_call": Loop(FWD_UNSCALED, ("({loss} / {k}).backward()",), STEP),
    "amp_division_at_call": Loop(FWD_UNSCALED, ("{scaler}.scale({loss} / {k}).backward()",), AMP_STEP, amp="torch_amp"),
}


@pytest.mark.parametrize("gate", GATES)
@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize("variant", list(CLEAN_LOOPS))
def test_clean_matrix(variant, context, gate):
    source = render(context, gate, _name_for(context, gate), CLEAN_LOOPS[variant])
    compile(source, "case.py", "exec")
    assert found(source) == set(), source


# --- ACC005: the partial window, over the gates that count an epoch's batches -------------------------


ACC005_MARKED_GATES = {
    "mod_eq": "if (i + 1) % {k} == 0:  # step <ACC005",
    "k_minus_1": "if step % {k} == {k} - 1:  # <ACC005",
    "not_mod": "if not (i + 1) % {k}:  # <ACC005",
    "continue": "if (i + 1) % {k} != 0:  # <ACC005",
    "flag": "if do_step:  # <ACC005",
}


def _bind_loader(source: str, context: str, n: Names) -> str:
    """Bind the loader to a DataLoader the code shows (ACC005's fix needs a sized iterable)."""
    binding = f"{n.loader} = torch.utils.data.DataLoader(dataset, batch_size=8)"
    lines = source.split("\n")
    if context == "function":
        at = next(i for i, line in enumerate(lines) if line.startswith("def train("))
        lines[at] = lines[at].replace(f"({n.loader}, ", "(").replace(f", {n.loader}, ", ", dataset, ")
        lines.insert(at + 1, "    " + binding)
    elif context == "method":
        at = lines.index("        self.cfg = cfg")
        lines.insert(at + 1, "        " + binding)
    else:
        lines.insert(lines.index("import torch") + 2, binding)
    return "\n".join(lines)


def render_acc005(context: str, gate: str, names: str, amp: str = "none") -> str:
    loop = Loop(FWD_SCALED, amp_backward() if amp != "none" else BACKWARD,
                AMP_STEP if amp != "none" else STEP, end_clause=False, amp=amp)
    n = NAMES[names].as_method() if context == "method" else NAMES[names]
    source = _bind_loader(render(context, gate, names, loop), context, n)
    marked = ACC005_MARKED_GATES[gate].format(k=n.k)
    bare = marked.split("  #")[0]
    assert source.count(bare + "\n") == 1, source
    return source.replace(bare + "\n", marked + "\n")


ACC005_MATRIX = [
    pytest.param(c, g, _name_for(c, g), a, id=f"ACC005-{c}-{g}-{a}")
    for c in CONTEXTS for g in EPOCH_GATES for a in ("none", "cuda_amp")
]


@pytest.mark.parametrize("context, gate, names, amp", ACC005_MATRIX)
def test_acc005_matrix(context, gate, names, amp):
    source = render_acc005(context, gate, names, amp)
    compile(source, "case.py", "exec")
    assert found(source) == expected(source), source


@pytest.mark.parametrize("context, gate, names, amp", [p for p in ACC005_MATRIX if p.values[1] in ("mod_eq", "k_minus_1", "not_mod")])
def test_acc005_fix(context, gate, names, amp):
    """The end-of-data clause is added where the gate is an if-test over enumerate(sized)."""
    _fix_checks(render_acc005(context, gate, names, amp), "ACC005")


ACC005_MORE = {
    "enumerate_tqdm": """\
        import torch
        from tqdm import tqdm
        for i, (x, y) in enumerate(tqdm(train_loader, desc="train")):
            loss = criterion(model(x), y) / accum_steps
            loss.backward()
            if (i + 1) % accum_steps == 0:  # <ACC005
                optimizer.step()
                optimizer.zero_grad()
    """,
    "enumerate_start_1": """\
        for step, batch in enumerate(loader, start=1):
            loss = model(**batch).loss / args.gradient_accumulation_steps
            loss.backward()
            if step % args.gradient_accumulation_steps == 0:  # <ACC005
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
    """,
    "range_len": """\
        batches = list(zip(inputs, targets))
        for i in range(len(batches)):
            x, y = batches[i]
            loss = criterion(model(x), y) / accum
            loss.backward()
            if (i + 1) % accum == 0:  # <ACC005
                optimizer.step()
                optimizer.zero_grad()
    """,
    "dict_batch_hf_style": """\
        def train(model, optimizer, lr_scheduler, train_dataset, args):
            train_dataloader = DataLoader(train_dataset, batch_size=args.batch_size, shuffle=True)
            model.train()
            for step, batch in enumerate(train_dataloader):
                outputs = model(**batch)
                loss = outputs.loss / args.gradient_accumulation_steps
                loss.backward()
                if step % args.gradient_accumulation_steps == args.gradient_accumulation_steps - 1:  # <ACC005
                    optimizer.step()
                    lr_scheduler.step()
                    optimizer.zero_grad()
    """,
}

ACC005_CLEAN = {
    "flush_after_loop": """\
        for epoch in range(epochs):
            for i, (x, y) in enumerate(loader):
                loss = criterion(model(x), y) / accum_steps
                loss.backward()
                if (i + 1) % accum_steps == 0:
                    optimizer.step()
                    optimizer.zero_grad()
            optimizer.step()
            optimizer.zero_grad()
    """,
    "end_clause_last_batch_flag": """\
        for i, (x, y) in enumerate(loader):
            loss = criterion(model(x), y) / accum_steps
            loss.backward()
            is_last = i == len(loader) - 1
            if (i + 1) % accum_steps == 0 or is_last:
                optimizer.step()
                optimizer.zero_grad()
    """,
    "endless_cycle": """\
        for step, (x, y) in enumerate(itertools.cycle(loader)):
            if step >= max_steps:
                break
            loss = criterion(model(x), y) / accum_steps
            loss.backward()
            if (step + 1) % accum_steps == 0:
                optimizer.step()
                optimizer.zero_grad()
    """,
    "range_max_steps": """\
        data_iter = iter(loader)
        for step in range(max_steps):
            x, y = next(data_iter)
            loss = criterion(model(x), y) / accum_steps
            loss.backward()
            if (step + 1) % accum_steps == 0:
                optimizer.step()
                optimizer.zero_grad()
    """,
}


@pytest.mark.parametrize("name", list(ACC005_MORE))
def test_acc005_more(name):
    source = textwrap.dedent(ACC005_MORE[name])
    assert found(source) == expected(source), source


@pytest.mark.parametrize("name", [n for n in ACC005_MORE if n != "dict_batch_hf_style"] + ["dict_batch_hf_style"])
def test_acc005_more_fix(name):
    _fix_checks(textwrap.dedent(ACC005_MORE[name]), "ACC005")


@pytest.mark.parametrize("name", list(ACC005_CLEAN))
def test_acc005_clean(name):
    source = textwrap.dedent(ACC005_CLEAN[name])
    assert found(source) == set(), source


# --- ACC006-ACC010: lighter coverage over contexts and gates ------------------------------------------


def light_loops() -> dict[str, tuple[str, Loop, bool]]:
    """name -> (code, loop, fix applies)."""
    return {
        "acc006_retain_graph": ("ACC006", Loop(
            FWD_SCALED, ("{loss}.backward(retain_graph=True)  # <ACC006",), STEP), True),
        "acc007_zero_grad_first": ("ACC007", Loop(
            FWD_SCALED, BACKWARD, ("{opt}.step()",), every_before=("{opt}.zero_grad()  # reset <ACC007",)), True),
        "acc007_set_to_none_after_backward": ("ACC007", Loop(
            FWD_SCALED, BACKWARD + ("{opt}.zero_grad(set_to_none=True)  # <ACC007",), ("{opt}.step()",)), True),
        "acc008_scheduler": ("ACC008", Loop(
            FWD_SCALED, BACKWARD, STEP, every_after=("{sched}.step()  # <ACC008",),
            setup=("{sched} = torch.optim.lr_scheduler.LinearLR({opt}, total_iters=len({loader}) // {k})",)), True),
        "acc008_scaler_update": ("ACC008", Loop(
            FWD_SCALED, amp_backward(), ("{scaler}.step({opt})", "{opt}.zero_grad()"),
            every_after=("{scaler}.update()  # <ACC008",), amp="cuda_amp"), True),
        "acc010_twice_by_hand": ("ACC010", Loop(
            FWD_SCALED, ("({loss} / {k}).backward()  # <ACC010",), STEP), True),
        "acc010_in_place_again": ("ACC010", Loop(
            FWD_SCALED + ("{loss} /= {k}",), ("{loss}.backward()  # <ACC010",), STEP), True),
    }


LIGHT = [
    pytest.param(name, c, g, id=f"{name}-{c}-{g}")
    for name in light_loops() for c in ("script", "function", "method") for g in ("mod_eq", "flag", "continue", "inner", "while")
]


@pytest.mark.parametrize("name, context, gate", LIGHT)
def test_light_rules(name, context, gate):
    code, loop, _ = light_loops()[name]
    source = render(context, gate, _name_for(context, gate), loop)
    compile(source, "case.py", "exec")
    want = expected(source)
    assert {c for c, _ in want} == {code}
    assert found(source) == want, source


@pytest.mark.parametrize("name, context, gate", LIGHT)
def test_light_rules_fix(name, context, gate):
    code, loop, fixes = light_loops()[name]
    if not fixes:
        return
    _fix_checks(render(context, gate, _name_for(context, gate), loop), code, unsafe=True)


ACC009_CASES = {
    "ddp_script": """\
        model = DistributedDataParallel(net.to(rank), device_ids=[rank])
        optimizer = torch.optim.AdamW(model.parameters())
        for epoch in range(num_epochs):
            for i, (x, y) in enumerate(loader):
                loss = criterion(model(x), y) / accum_steps
                loss.backward()  # <ACC009
                if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
                    optimizer.step()
                    optimizer.zero_grad()
    """,
    "ddp_alias_import_function": """\
        from torch.nn.parallel import DistributedDataParallel as DDP

        def train(net, loader, rank, cfg):
            model = DDP(net, device_ids=[rank])
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for it in range(cfg.max_iters):
                for micro_step in range(cfg.accum_iters):
                    x, y = get_batch("train")
                    objective = model(x, y) / cfg.accum_iters
                    objective.backward()  # <ACC009
                opt.step()
                opt.zero_grad(set_to_none=True)
    """,
    "ddp_no_sync_clean": """\
        model = DistributedDataParallel(net, device_ids=[rank])
        for i, (x, y) in enumerate(loader):
            last = (i + 1) % accum_steps == 0 or i + 1 == len(loader)
            ctx = contextlib.nullcontext() if last else model.no_sync()
            with ctx:
                loss = criterion(model(x), y) / accum_steps
                loss.backward()
            if last:
                optimizer.step()
                optimizer.zero_grad()
    """,
}


@pytest.mark.parametrize("name", list(ACC009_CASES))
def test_acc009(name):
    source = textwrap.dedent(ACC009_CASES[name])
    assert found(source) == expected(source), source


def test_matrix_sizes():
    """Guard against the generator silently producing nothing."""
    assert len(MATRIX) >= 4 * len(CONTEXTS) * len(GATES) * 2
    assert len(ACC005_MATRIX) == len(CONTEXTS) * len(EPOCH_GATES) * 2
