"""The module README's "Using it" example runs as written."""

from __future__ import annotations

import torch

from tests.conftest import readme_example


def test_using_it_block_runs():
    namespace = readme_example("rgvfm")
    assert namespace["samples"].shape == (500, 3) and namespace["flow"].noise_scale == 0.1
    assert 0 < namespace["result"].best_step <= 40 and namespace["trainer"].step == 40
    assert torch.isfinite(namespace["loss"])
