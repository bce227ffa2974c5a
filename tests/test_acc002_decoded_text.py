"""ACC002 in an evaluation loop that keeps what it generated as text: `tokenizer.decode(ids)` (or
`batch_decode`) gives a string, and `re.sub`/`json.dumps` of it a string again: no graph is kept,
whatever the grad mode. The twin keeps the model's output tensor itself and keeps the finding.
Forms: a script function, a trainer callback method, and a helper module that decodes."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.snippets import findings_of


SCRIPT = """
import re


def evaluate(model, tokenizer, loader):
    generated = []
    for batch in loader:
        out = model(batch)
        {kept}
        generated.append(answer)
    return len(generated)
"""

CALLBACK = """
import json


class GenerationCallback:
    def on_evaluate(self, model, tokenizer, dataset):
        texts = []
        for feature in dataset:
            res = model(feature["input_ids"])
            {kept}
            texts.append(answer)
        print(len(texts))
"""


def _acc002(source: str, kept: str) -> int:
    text = textwrap.dedent(source).replace("{kept}", kept)
    return len(findings_of(text.encode(), path="evaluate.py", select=("ACC002",)))


def test_script_keeping_decoded_text_is_silent():
    assert _acc002(SCRIPT, "answer = re.sub(r'.*INST', '', tokenizer.decode(out[0]))") == 0
    assert _acc002(SCRIPT, "answer = tokenizer.batch_decode(out)") == 0
    assert _acc002(SCRIPT, "answer = out") == 1


def test_callback_keeping_serialised_text_is_silent():
    assert _acc002(CALLBACK, "answer = json.dumps(tokenizer.decode(res[0]))") == 0
    assert _acc002(CALLBACK, "answer = res.mean()") == 1


def test_helper_module_that_decodes(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "text.py").write_text("import re\n\n\ndef clean(tokenizer, ids):\n    return re.sub(r'\\s+', ' ', tokenizer.decode(ids))\n")
    path = tmp_path / "evaluate.py"
    for kept, expected in (("answer = clean(tokenizer, out[0])", 0), ("answer = out", 1)):
        path.write_text("from text import clean\n" + textwrap.dedent(SCRIPT).replace("{kept}", kept))
        assert len(findings_of(path.read_bytes(), path=str(path), select=("ACC002",))) == expected, kept
