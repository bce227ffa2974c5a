"""ACC002 asks what the holder can keep. An object of a class (`info = ExtraInfo()`) decides in its
own `append` what it keeps: the generic list reading does not apply (the meter pass reads the
project's classes). A tensor built with an integer or boolean dtype cannot require grad, so
`counts += x` in place keeps no graph. Twins: a plain list, a float tensor."""

from __future__ import annotations


from tests.snippets import findings, row

LOOP = """
import torch
from extras import ExtraInfo


def train(model, loader, optimizer, n):
    {start}
    for batch in loader:
        output = model(batch)
        output["loss"].backward()
        optimizer.step()
        optimizer.zero_grad()
        {store}
    print(kept)
"""




def test_an_object_of_a_class_decides_what_its_append_keeps():
    source = LOOP.format(start="kept = ExtraInfo()", store='kept.append(output["extra"])')
    assert findings(source) == []


def test_a_plain_list_keeps_what_it_is_given():
    source = LOOP.format(start="kept = []", store='kept.append(output["extra"])')
    assert findings(source) == [("ACC002", row(source, "kept.append("))]


def test_an_integer_tensor_keeps_no_graph():
    source = LOOP.format(start="kept = torch.zeros(n, dtype=torch.int64)", store='kept += output["counts"]')
    assert findings(source) == []


def test_a_float_tensor_keeps_the_graph():
    source = LOOP.format(start="kept = torch.zeros(n, dtype=torch.float32)", store='kept += output["counts"]')
    assert findings(source) == [("ACC002", row(source, "kept +="))]
