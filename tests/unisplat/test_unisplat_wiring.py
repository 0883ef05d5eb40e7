"""The arms differ in what the paper changes: fusion in the fused models only, memory in the memory arms only, the
dynamic filter everywhere but ``unisplat_nofilter``, and each branch where the arm names it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from iclr26.unisplat.config import UniSplatConfig
from iclr26.unisplat.experiment import ARMS, CONTROL_ARMS, build_model, draw_sequence, evaluate
from iclr26.unisplat.model import G
from iclr26.unisplat.training import frames_of

SMALL = replace(UniSplatConfig.preset("smoke"), eval_frames=3)


def test_the_arm_table_gives_each_arm_only_what_it_claims():
    assert ARMS == {
        "single": ("single", False, True),
        "fusion": ("dual", False, True),
        "unisplat": ("dual", True, True),
        "point": ("point", True, True),
        "voxel": ("voxel", True, True),
        "unisplat_nofilter": ("dual", True, False),
    }
    assert CONTROL_ARMS == ("single", "unisplat")
    built = {name: build_model(SMALL, name) for name in ("single", "dual", "point", "voxel")}
    assert [(m.branches, m.fusion) for m in built.values()] == [
        ("dual", False), ("dual", True), ("point", True), ("voxel", True)
    ]  # fmt: skip


def _history_matters(name: str) -> bool:
    seq = draw_sequence(SMALL, np.random.default_rng(0), SMALL.eval_frames)
    model = build_model(SMALL, name, torch.Generator().manual_seed(0))
    frames = frames_of(seq)
    with torch.no_grad():
        first = model.step(frames[0], None)
        alone = model.step(frames[1], None)
        fused = model.step(frames[1], (first.scaffold, first.valid, frames[0].ego_pose))
    return not torch.equal(alone.gaussians.means, fused.gaussians.means)


def test_only_the_fused_models_read_the_history():
    assert _history_matters("dual") and _history_matters("point") and _history_matters("voxel")
    assert not _history_matters("single")


def _set_dynamic(model, logit: float) -> None:
    """Make every decoded Gaussian's dynamic logit about ``logit`` (the dynamic channel's bias)."""
    with torch.no_grad():
        model.point_head[-1].bias[G - 1] = logit
        for g in range(model.voxel_gs):
            model.voxel_head.bias[g * G + G - 1] = logit


@pytest.mark.parametrize("logit", [50.0, -50.0])
def test_the_dynamic_filter_acts_only_in_the_filtered_memory(logit):
    seq = draw_sequence(SMALL, np.random.default_rng(1), SMALL.eval_frames)
    model = build_model(SMALL, "dual", torch.Generator().manual_seed(0))
    _set_dynamic(model, logit)
    fusion = evaluate(model, seq, memory=False)
    filtered = evaluate(model, seq, memory=True, filter_dynamic=True)
    unfiltered = evaluate(model, seq, memory=True, filter_dynamic=False)
    if logit > 0:  # every Gaussian moving: the filtered memory stores nothing, the unfiltered one everything
        assert filtered == fusion and unfiltered != fusion
    else:  # every Gaussian static: the filter removes nothing
        assert filtered == unfiltered and filtered != fusion
