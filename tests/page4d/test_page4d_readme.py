"""The README's "Using it" example runs as written."""

from __future__ import annotations

import torch

from tests.conftest import readme_example


def test_using_it_block_runs():
    torch.manual_seed(0)
    scope = readme_example("page4d")
    assert scope["out"].shape == (1, 4, 42, 8)
    assert scope["pred"].mask.shape == (2, 3, 4, 4)
    assert scope["step"].alpha == 64.0
