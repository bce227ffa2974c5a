"""ACC010's fix confirmed at run time with Keras 3 (on the torch backend the tests already have):
a loss function divided by k by hand, compiled with an optimizer built with
`gradient_accumulation_steps=k`, makes each window's update k times too small; the fixed text
gives the update of one full batch. The test extra installs Keras 3 (no TensorFlow); skipped
where it is absent, since the checker itself never needs it."""

from __future__ import annotations

import os
import textwrap

import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")
keras = pytest.importorskip("keras")
if keras.backend.backend() != "torch" or not keras.__version__.startswith("3."):
    pytest.skip("needs Keras 3 on the torch backend", allow_module_level=True)
np = pytest.importorskip("numpy")

from accumlint.engine import check_source, fix_source  # noqa: E402

BAD = textwrap.dedent('''
    import keras

    GRAD_ACCUM = 4


    def scaled_mse(y_true, y_pred):
        return keras.losses.mean_squared_error(y_true, y_pred) / GRAD_ACCUM


    def build(weights):
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        model.set_weights(weights)
        model.compile(optimizer=keras.optimizers.SGD(0.1, gradient_accumulation_steps=GRAD_ACCUM), loss=scaled_mse)
        return model
''').lstrip()

WEIGHTS = [np.array([[0.5], [-0.25], [1.0]], dtype="float32"), np.array([0.1], dtype="float32")]
rng = np.random.default_rng(0)
X = rng.normal(size=(16, 3)).astype("float32")
Y = (X @ np.array([[1.0], [2.0], [-1.0]]) + 0.3).astype("float32")


def _trained(text: str) -> list:
    namespace: dict = {}
    exec(compile(text, "case.py", "exec"), namespace)
    model = namespace["build"]([w.copy() for w in WEIGHTS])
    model.fit(X, Y, batch_size=4, epochs=1, shuffle=False, verbose=0)  # 4 micro-batches: one window
    return model.get_weights()


def _full_batch() -> list:
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.set_weights([w.copy() for w in WEIGHTS])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    model.fit(X, Y, batch_size=16, epochs=1, shuffle=False, verbose=0)
    return model.get_weights()


def test_acc010_fix_gives_the_full_batch_update():
    findings = check_source(BAD, "case.py").findings
    assert [(f.code, f.location.row) for f in findings] == [("ACC010", 7)]
    fixed = fix_source(BAD, "case.py", unsafe_fixes=True).fixed_source
    assert fixed is not None and "/ GRAD_ACCUM" not in fixed
    reference = [r - w for r, w in zip(_full_batch(), WEIGHTS)]
    bad = [b - w for b, w in zip(_trained(BAD), WEIGHTS)]
    good = [g - w for g, w in zip(_trained(fixed), WEIGHTS)]
    for update, expected in zip(good, reference):
        np.testing.assert_allclose(update, expected, rtol=1e-4, atol=1e-6)
    for update, expected in zip(bad, reference):
        np.testing.assert_allclose(update, expected / 4, rtol=1e-4, atol=1e-6)  # k times too small
