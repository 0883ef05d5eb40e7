"""The README's "Using it" example runs as written and builds the Wan-layout input."""

from __future__ import annotations

import torch

from tests.conftest import readme_example


def test_using_it_block_runs():
    torch.manual_seed(0)
    scope = readme_example("magref")
    assert scope["y"].shape == (52, 2, 8, 8)  # 4 mask + 48 latent channels
    assert scope["v"].shape == (1, 48, 2, 8, 8)
    assert scope["canvas"].region_masks.shape == (2, 16, 16)
