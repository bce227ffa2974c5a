"""ACC002 reads the kind of the stored value: a graph-carrying tensor is reported, a number, a
graph-free tensor or a value of unknown kind is not (unknown is silence). Each shape in script,
trainer-class and multi-module form, with its twin."""

from __future__ import annotations

from pathlib import Path

from rule_cases import RuleCases, src

from tests.snippets import findings_of

CASES = RuleCases("ACC002")


def _project(root: Path, files: dict[str, str]) -> str:
    (root / "pyproject.toml").write_text("")
    for name, text in files.items():
        (root / name).write_text(src(text))
    return str(root / "train.py")


def _rows(path: str) -> list[int]:
    return [f.location.row for f in findings_of(Path(path).read_text(), path=path, select={"ACC002"})]


# --- a float returned by a project function or method ----------------------------------------------

STEP_SCRIPT = src("""
    def summary(loss, n):
        return RETURNED


    def train(model, optimizer, loader):
        losses = []
        for x, y in loader:
            loss = model(x, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(summary(loss, len(x)))  # <ACC002
        print(len(losses))
""")


def test_a_float_returned_by_a_project_function_holds_no_graph():
    CASES.assert_clean(STEP_SCRIPT.replace("RETURNED", "loss.item() * n").replace("  # <ACC002", ""))
    CASES.assert_reported(STEP_SCRIPT.replace("RETURNED", "loss * n"))


STEP_TRAINER = src("""
    class Trainer:
        def _value(self, loss):
            return RETURNED

        def fit(self, loader):
            for x, y in loader:
                loss = self.model(x, y)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                self.history.append(self._value(loss))  # <ACC002
""")


def test_a_float_returned_by_a_method_holds_no_graph():
    CASES.assert_clean(STEP_TRAINER.replace("RETURNED", "float(loss)").replace("  # <ACC002", ""))
    CASES.assert_reported(STEP_TRAINER.replace("RETURNED", "loss.mean()"))


STEP_MODULE = """
    def summary(loss):
        return RETURNED
"""
STEP_CALLER = """
    from steps import summary


    def train(model, optimizer, loader):
        total = 0.0
        for batch in loader:
            loss = model(**batch).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            total += summary(loss)
        print(total)
"""


def test_a_float_returned_by_a_function_in_another_module_holds_no_graph(tmp_path):
    assert _rows(_project(tmp_path, {"steps.py": STEP_MODULE.replace("RETURNED", "loss.item()"), "train.py": STEP_CALLER})) == []
    assert _rows(_project(tmp_path, {"steps.py": STEP_MODULE.replace("RETURNED", "loss.float()"), "train.py": STEP_CALLER})) == [11]


# --- a score from a numeric library ------------------------------------------------------------------

SCORE_SCRIPT = src("""
    from sklearn.metrics import roc_auc_score


    def train(model, criterion, optimizer, loader):
        scores = []
        for x, y in loader:
            out = model(x)
            loss = criterion(out, y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            scores.append(KEPT)  # <ACC002
        print(len(scores))
""")


def test_a_library_score_of_a_model_output_holds_no_graph():
    CASES.assert_clean(SCORE_SCRIPT.replace("KEPT", "roc_auc_score(y, out)").replace("  # <ACC002", ""))
    CASES.assert_reported(SCORE_SCRIPT.replace("KEPT", "criterion(out, y)"))


SCORE_TRAINER = src("""
    from sklearn import metrics


    class Trainer:
        def train_epoch(self, loader):
            for x, y in loader:
                out = self.model(x)
                loss = self.criterion(out, y)
                loss.backward()
                self.optimizer.step()
                self.optimizer.zero_grad()
                self.scores.append(KEPT)  # <ACC002
""")


def test_a_library_score_kept_on_the_trainer_holds_no_graph():
    CASES.assert_clean(SCORE_TRAINER.replace("KEPT", "metrics.f1_score(y, out)").replace("  # <ACC002", ""))
    CASES.assert_reported(SCORE_TRAINER.replace("KEPT", "loss"))


SCORE_HELPER = """
    from sklearn.metrics import accuracy_score


    def batch_score(out, y):
        return RETURNED
"""
SCORE_CALLER = """
    from scoring import batch_score


    def train(model, criterion, optimizer, loader):
        scores = []
        for x, y in loader:
            out = model(x)
            loss = criterion(out, y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            scores.append(batch_score(out, y))
        print(len(scores))
"""


def test_a_library_score_returned_by_a_helper_in_another_module(tmp_path):
    clean = {"scoring.py": SCORE_HELPER.replace("RETURNED", "accuracy_score(y, out)"), "train.py": SCORE_CALLER}
    assert _rows(_project(tmp_path, clean)) == []
    kept = {"scoring.py": SCORE_HELPER.replace("RETURNED", "(out - y).abs().mean()"), "train.py": SCORE_CALLER}
    assert _rows(_project(tmp_path, kept)) == [12]


# --- a dict of values computed under no_grad in a called function -------------------------------

METRICS_SCRIPT = src("""
    import torch


    def batch_metrics(model, x, y):
        CONTEXT
            out = model(x)
            return RETURNED


    def train(model, criterion, optimizer, loader):
        history = []
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            history.append(batch_metrics(model, x, y))  # <ACC002
        print(len(history))
""")


def test_a_dict_computed_under_no_grad_in_a_called_function_holds_no_graph():
    dict_of = '{"err": (out - y).abs().mean(), "max": (out - y).abs().max()}'
    clean = METRICS_SCRIPT.replace("  # <ACC002", "").replace("CONTEXT", "with torch.no_grad():")
    CASES.assert_clean(clean.replace("RETURNED", dict_of))
    CASES.assert_clean(clean.replace("RETURNED", "(out - y).abs().mean()"))
    CASES.assert_reported(METRICS_SCRIPT.replace("CONTEXT", "if True:").replace("RETURNED", "(out - y).abs().mean()"))


METRICS_TRAINER = src("""
    import torch


    class Trainer:
        DECORATOR
        def _metrics(self, x, y):
            out = self.model(x)
            return RETURNED

        def train_epoch(self, loader):
            for x, y in loader:
                loss = self.criterion(self.model(x), y)
                loss.backward()
                self.optimizer.step()
                self.optimizer.zero_grad()
                self.history.append(self._metrics(x, y))  # <ACC002
""")


def test_a_dict_from_a_no_grad_method_kept_on_the_trainer_holds_no_graph():
    clean = METRICS_TRAINER.replace("DECORATOR", "@torch.no_grad()").replace("  # <ACC002", "")
    CASES.assert_clean(clean.replace("RETURNED", '{"err": (out - y).abs().mean()}'))
    CASES.assert_clean(clean.replace("RETURNED", "(out - y).abs().mean()"))
    kept = METRICS_TRAINER.replace("        DECORATOR\n", "").replace("RETURNED", "(out - y).abs().mean()")
    CASES.assert_reported(kept)


METRICS_HELPER = """
    import torch


    def batch_metrics(model, x, y):
        CONTEXT
            out = model(x)
            return RETURNED
"""
METRICS_CALLER = """
    from metrics import batch_metrics


    def train(model, criterion, optimizer, loader):
        history = []
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            history.append(batch_metrics(model, x, y))
        print(len(history))
"""


def test_a_dict_computed_under_no_grad_in_another_module_holds_no_graph(tmp_path):
    no_grad = METRICS_HELPER.replace("CONTEXT", "with torch.no_grad():")
    clean = {"metrics.py": no_grad.replace("RETURNED", '{"err": (out - y).abs().mean()}'), "train.py": METRICS_CALLER}
    assert _rows(_project(tmp_path, clean)) == []
    clean = {"metrics.py": no_grad.replace("RETURNED", "(out - y).abs().mean()"), "train.py": METRICS_CALLER}
    assert _rows(_project(tmp_path, clean)) == []
    with_grad = METRICS_HELPER.replace("CONTEXT", "if True:").replace("RETURNED", "(out - y).abs().mean()")
    kept = {"metrics.py": with_grad, "train.py": METRICS_CALLER}
    assert _rows(_project(tmp_path, kept)) == [11]


# --- a value from a call the analysis cannot read: unknown, silent ---------------------------------

ACTOR_SCRIPT = src("""
    def train(actor, optimizer, loader):
        kept = []
        for batch in loader:
            loss, stats = actor(batch)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            kept.append(KEPT)  # <ACC002
        print(len(kept))
""")


def test_the_second_result_of_an_object_handed_in_is_unknown():
    CASES.assert_clean(ACTOR_SCRIPT.replace("KEPT", "stats").replace("  # <ACC002", ""))
    findings = CASES.assert_reported(ACTOR_SCRIPT.replace("KEPT", "loss"))
    assert findings[0].fix is not None and findings[0].fix.applicability == "safe"  # handed to backward: a tensor


ACTOR_TRAINER = src("""
    class Trainer:
        def __init__(self, actor, optimizer):
            self.actor, self.optimizer = actor, optimizer
            self.history = []

        def cycle(self, loader):
            for batch in loader:
                loss, stats = self.actor(batch)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                self._record(KEPT)

        def _record(self, value):
            self.history.append(value)  # <ACC002
""")


def test_the_stats_of_an_actor_recorded_by_a_method_are_unknown():
    CASES.assert_clean(ACTOR_TRAINER.replace("KEPT", "stats").replace("  # <ACC002", ""))
    CASES.assert_reported(ACTOR_TRAINER.replace("KEPT", "loss"))


ACTOR_METER = """
    class Meter:
        def __init__(self):
            self.total = 0.0

        def update(self, value):
            self.total += value
"""
ACTOR_CALLER = """
    from meters import Meter


    def train(actor, optimizer, loader):
        meter = Meter()
        for batch in loader:
            loss, stats = actor(batch)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            meter.update(KEPT)
        print(meter.total)
"""


def test_an_unknown_value_handed_to_a_meter_of_another_module_is_silent(tmp_path):
    clean = {"meters.py": ACTOR_METER, "train.py": ACTOR_CALLER.replace("KEPT", "stats['loss']")}
    assert _rows(_project(tmp_path, clean)) == []
    kept = {"meters.py": ACTOR_METER, "train.py": ACTOR_CALLER.replace("KEPT", "loss")}
    assert _rows(_project(tmp_path, kept)) == [11]


# --- a dict of losses returned by a step function that runs backward ---------------------------------

DICT_STEP_SCRIPT = src("""
    def train_one_batch(model, criterion, optimizer, x, y):
        optimizer.zero_grad()
        out = model(x)
        terms = {"ce": criterion(out, y), "reg": out.pow(2).mean()}
        loss = terms["ce"] + terms["reg"]
        loss.backward()
        optimizer.step()
        return RETURNED


    def train_one_epoch(model, criterion, optimizer, loader):
        totals = {"ce": 0.0, "reg": 0.0}
        for x, y in loader:
            terms = train_one_batch(model, criterion, optimizer, x, y)
            for name, value in terms.items():
                totals[name] += value * len(x)  # <ACC002
        print(totals)
""")


def test_a_dict_of_losses_from_a_step_function_is_kept():
    findings = CASES.assert_reported(DICT_STEP_SCRIPT.replace("RETURNED", "terms"))
    assert findings[0].fix is None  # `value` of a type the code does not show
    detached = DICT_STEP_SCRIPT.replace("RETURNED", "{k: v.item() for k, v in terms.items()}").replace("  # <ACC002", "")
    CASES.assert_clean(detached)


DICT_STEP_TRAINER = src("""
    class PartsLoss:
        def __call__(self, out, y):
            parts = {"ce": (out - y).pow(2).mean(), "l1": (out - y).abs().mean()}
            return parts["ce"] + parts["l1"], parts


    class Solver:
        def __init__(self, model, optimizer):
            self.model = model
            self.optimizer = optimizer
            self.loss_fn = LOSS_FN

        def train_one_batch(self, x, y):
            self.optimizer.zero_grad()
            out = self.model(x)
            loss, parts = self.loss_fn(out, y)
            loss.backward()
            self.optimizer.step()
            return RETURNED

        def train_one_epoch(self, loader):
            totals = {}
            for x, y in loader:
                parts = self.train_one_batch(x, y)
                for name, value in parts.items():
                    totals[name] = totals.get(name, 0) + value  # <ACC002
            print(totals)
""")


def test_a_dict_of_losses_from_a_step_method_is_kept():
    kept = DICT_STEP_TRAINER.replace("LOSS_FN", "PartsLoss()")
    CASES.assert_reported(kept.replace("RETURNED", "parts"))
    CASES.assert_clean(kept.replace("RETURNED", "{k: float(v) for k, v in parts.items()}").replace("  # <ACC002", ""))


def test_a_dict_from_a_loss_object_of_unknown_kind_is_silence():
    # `self.loss_fn` handed in from outside: its second result may hold floats (unknown is silence)
    unknown = DICT_STEP_TRAINER.replace("LOSS_FN", "make_loss()").replace("  # <ACC002", "")
    CASES.assert_clean(unknown.replace("RETURNED", "parts"))


FACTORY_MODULE = """
    class PartsLoss:
        def __call__(self, out, y):
            parts = {"ce": (out - y).pow(2).mean(), "l1": (out - y).abs().mean()}
            return parts["ce"] + parts["l1"], parts


    def create_loss(cfg) -> PartsLoss:
        return PartsLoss()


    def create_unknown(cfg):
        return cfg.build()
"""


def test_a_loss_object_built_by_a_factory_of_another_module(tmp_path):
    trainer = DICT_STEP_TRAINER[DICT_STEP_TRAINER.index("class Solver"):].replace("RETURNED", "parts")
    caller = "from losses import create_loss, create_unknown\n\n\n" + trainer.replace("  # <ACC002", "")
    files = {"losses.py": FACTORY_MODULE, "train.py": caller.replace("LOSS_FN", "create_loss(None)")}
    assert _rows(_project(tmp_path, files)) == [23]
    files["train.py"] = caller.replace("LOSS_FN", "create_unknown(None)")
    assert _rows(_project(tmp_path, files)) == []


DICT_STEP_MODULE = """
    def train_one_batch(model, optimizer, x):
        optimizer.zero_grad()
        out = model(x)
        parts = {"rec": (out - x).pow(2).mean(), "l1": out.abs().mean()}
        (parts["rec"] + parts["l1"]).backward()
        optimizer.step()
        return RETURNED
"""
DICT_STEP_CALLER = """
    from steps import train_one_batch


    def train(model, optimizer, loader):
        history = {"rec": [], "l1": []}
        for x in loader:
            parts = train_one_batch(model, optimizer, x)
            for name, value in parts.items():
                history[name].append(value)
        print(history)
"""


def test_a_dict_of_losses_from_a_step_function_in_another_module_is_kept(tmp_path):
    kept = {"steps.py": DICT_STEP_MODULE.replace("RETURNED", "parts"), "train.py": DICT_STEP_CALLER}
    assert _rows(_project(tmp_path, kept)) == [9]
    free = DICT_STEP_MODULE.replace("RETURNED", "{k: v.detach() for k, v in parts.items()}")
    assert _rows(_project(tmp_path, {"steps.py": free, "train.py": DICT_STEP_CALLER})) == []


# --- backward through a slot of a returned dict, the dict kept -----------------------------------------

SLOT_SCRIPT = src("""
    def train(module, optimizer, loader):
        outputs = []
        for i, batch in enumerate(loader):
            optimizer.zero_grad()
            output = module.training_step(batch, i)
            output["loss"].backward()
            optimizer.step()
            outputs.append(output)  # <ACC002
        print(len(outputs))
""")


def test_a_dict_whose_loss_was_backwarded_is_kept():
    findings = CASES.assert_reported(SLOT_SCRIPT)
    assert findings[0].fix is None  # a dict has no `.detach()`
    fixed = SLOT_SCRIPT.replace('        outputs.append(output)  # <ACC002', '        output["loss"] = output["loss"].detach()\n        outputs.append(output)')
    CASES.assert_clean(fixed)


SLOT_TRAINER = src("""
    class HorovodTrainer:
        def fit(self, module, loader):
            for epoch in range(self.max_epochs):
                module.train()
                self.train(loader, module, module.optimizer)

        def train(self, dataloader, module, optimizer):
            module.train()
            outputs = []
            for i, batch in enumerate(dataloader):
                optimizer.zero_grad()
                output = module.training_step(batch, i)
                output["loss"].backward()
                optimizer.step()
                outputs.append(KEPT)  # <ACC002
            return module.training_epoch_end(outputs)
""")


def test_a_trainer_keeping_outputs_for_the_epoch_end_is_reported():
    # the method's result is thrown away by its caller and `module.train()` is no call of it
    CASES.assert_reported(SLOT_TRAINER.replace("KEPT", "output"))
    CASES.assert_clean(SLOT_TRAINER.replace("KEPT", '{"loss": output["loss"].item()}').replace("  # <ACC002", ""))


SLOT_MODULE = """
    class Module:
        def training_step(self, batch, i):
            loss = self.model(batch).mean()
            return {"loss": loss, "metrics": {"i": i}}
"""
SLOT_CALLER = """
    from module import Module


    def train(loader, optimizer):
        module = Module()
        outputs = []
        for i, batch in enumerate(loader):
            output = module.training_step(batch, i)
            output["loss"].backward()
            optimizer.step()
            optimizer.zero_grad()
            outputs.append(KEPT)
        print(len(outputs))
"""


def test_a_dict_returned_by_a_module_of_another_file_and_kept(tmp_path):
    kept = {"module.py": SLOT_MODULE, "train.py": SLOT_CALLER.replace("KEPT", "output")}
    assert _rows(_project(tmp_path, kept)) == [12]
    clean = {"module.py": SLOT_MODULE, "train.py": SLOT_CALLER.replace("KEPT", 'output["metrics"]')}
    assert _rows(_project(tmp_path, clean)) == []
