"""Every model and batch lands on ``config.device``: the units run with the default device set to ``meta``, so a
tensor created without its device (the CPU by default, where a CUDA run would mix devices) fails at once."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from iclr26.page4d.config import Page4DConfig
from iclr26.page4d.experiment import pretrain, run_arm, scenes

SMALL = replace(Page4DConfig.from_dict(Page4DConfig.preset_values("smoke")), pretrain_steps=2, finetune_steps=2,
                n_test=2, finetune_scenes=4, pretrain_scenes=4)  # fmt: skip


@pytest.fixture
def meta_default():
    torch.set_default_device("meta")
    try:
        yield
    finally:
        torch.set_default_device(None)


def test_pretraining_fine_tuning_and_evaluation_place_every_tensor_on_the_configured_device(meta_default):
    pre = pretrain(SMALL, 1, device="cpu")
    assert all(t.device.type == "cpu" for t in pre.state.values()) and np.isfinite(pre.losses).all()
    tests = {"dynamic": scenes(SMALL, 3, 2, dynamic=True), "static": scenes(SMALL, 4, 2, dynamic=False)}
    res = run_arm(SMALL, "page4d", pre, 5, scenes(SMALL, 2, 4, dynamic=True), tests, device="cpu")
    assert res.changed and np.isfinite(res.dynamic["ate"]).all()


def test_the_gpu_preset_asks_for_cuda_and_a_slice_of_it_is_projected():
    gpu = Page4DConfig.preset_values("gpu")
    assert gpu["device"] == "cuda"
    full = Page4DConfig.from_dict({**gpu, "device": "cpu"})
    part = Page4DConfig.from_dict({**gpu, **Page4DConfig.GPU_SLICE, "device": "cpu"})
    assert full.work() > 50 * part.work() > 0
