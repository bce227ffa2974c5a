import pytest

pytest.importorskip("torch")  # the runtime checker is an optional extra; CI installs torch
