"""ACC002 where a name is bound to a tokenizer or processor loaded with `from_pretrained`
(`enc = GPT2Tokenizer.from_pretrained(path)`): unlike a model loaded the same way, its calls give
token ids, no graph, so a loop that keeps the prompts it encoded keeps nothing of autograd. The twin binds the same name to a model loaded
the same way and keeps the finding.
Forms: a generation script with a module-level tokenizer, a sampler class holding it on `self`,
and a tokenizer loaded inside the function that uses it."""

from __future__ import annotations

import textwrap

from tests.snippets import findings_of

SCRIPT = """
import torch
from transformers import LOADER

enc = LOADER.from_pretrained("gpt2")


def steer(model, ids):
    loss = model(torch.tensor(ids)).sum()
    loss.backward()
    return loss.item()


def run(model, prompts):
    kept = {}
    for index, prompt in enumerate(prompts):
        ids = [50256] + enc.encode(prompt)
        value = steer(model, ids)
        kept[index] = [ids, value]
    print(len(kept))
"""

SAMPLER = """
import torch
from transformers import LOADER


class Sampler:
    def __init__(self, path):
        self.enc = LOADER.from_pretrained(path)

    def steer(self, model, ids):
        loss = model(torch.tensor(ids)).sum()
        loss.backward()
        return loss.item()

    def collect(self, model, prompts):
        seen = []
        for prompt in prompts:
            ids = self.enc.encode(prompt)
            value = self.steer(model, ids)
            seen.append((ids, value))
        print(len(seen))
"""


def _acc002(source: str, loader: str) -> int:
    text = textwrap.dedent(source).replace("LOADER", loader)
    return len(findings_of(text.encode(), path="sample.py", select=("ACC002",)))


def test_script_keeping_encoded_prompts_is_silent():
    assert _acc002(SCRIPT, "GPT2Tokenizer") == 0
    assert _acc002(SCRIPT, "GPT2TokenizerFast") == 0
    assert _acc002(SCRIPT, "GPT2LMHeadModel") == 1


def test_sampler_keeping_processor_output_is_silent():
    assert _acc002(SAMPLER, "AutoProcessor") == 0
    assert _acc002(SAMPLER, "AutoModel") == 1


def test_tokenizer_loaded_inside_the_function():
    local = SCRIPT.replace('enc = LOADER.from_pretrained("gpt2")\n', "").replace(
        "    kept = {}\n", '    enc = LOADER.from_pretrained("gpt2")\n    kept = {}\n'
    )
    assert "    enc = LOADER" in local
    assert _acc002(local, "BertTokenizerFast") == 0
    assert _acc002(local, "BertModel") == 1
