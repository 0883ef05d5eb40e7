"""Every model and batch lands on ``config.device``: the units run with the default device set to ``meta``, so a
tensor created without its device (the CPU by default, where a CUDA run would mix devices) fails at once."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from iclr26.unisplat.config import UniSplatConfig
from iclr26.unisplat.experiment import draw_sequence, seed_eval, train_model

SMALL = replace(UniSplatConfig.preset("smoke"), steps=1, n_test=1)


@pytest.fixture
def meta_default():
    torch.set_default_device("meta")
    try:
        yield
    finally:
        torch.set_default_device(None)


def test_training_and_evaluation_place_every_tensor_on_the_configured_device(meta_default):
    seqs = [draw_sequence(SMALL, np.random.default_rng(0), SMALL.train_frames)]
    names = ("single", "dual", "point", "voxel")
    states = {name: train_model(SMALL, name, seqs, seed=1, device="cpu") for name in names}
    assert all(np.isfinite(r.losses).all() and r.changed for r in states.values())
    assert all(t.device.type == "cpu" for r in states.values() for t in r.state.values())
    ev = seed_eval(SMALL, states, seed=2, device="cpu")
    assert np.isfinite(ev["main"]["unisplat"][0].psnr_out)


def test_the_gpu_preset_asks_for_cuda_and_a_slice_of_it_is_projected():
    gpu = UniSplatConfig.preset_values("gpu")
    assert gpu["device"] == "cuda"
    full = UniSplatConfig.from_dict({**gpu, "device": "cpu"})
    part = UniSplatConfig.from_dict({**gpu, **UniSplatConfig.GPU_SLICE, "device": "cpu"})
    assert full.work() > 50 * part.work() > 0
