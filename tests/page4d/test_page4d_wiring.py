"""The arms differ in what the paper changes: the dynamics mask acts in the ``page4d`` arm only.

With the mask's strength at zero the ``page4d`` arm is exactly naive fine-tuning (the same blocks, batches and
schedules; the mask head takes no part and gets no gradient), and the mask strength never reaches another arm.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from iclr26.page4d.config import Page4DConfig
from iclr26.page4d.experiment import ARMS, eval_alpha, pretrain, run_arm, scenes

CONFIG = replace(Page4DConfig.from_dict(Page4DConfig.preset_values("smoke")), n_test=2, finetune_scenes=4)


@pytest.fixture(scope="module")
def setting():
    pre = pretrain(CONFIG, 1)
    finetune = scenes(CONFIG, 2, CONFIG.finetune_scenes, dynamic=True)
    tests = {"dynamic": scenes(CONFIG, 3, CONFIG.n_test, dynamic=True),
             "static": scenes(CONFIG, 4, CONFIG.n_test, dynamic=False)}  # fmt: skip
    return pre, finetune, tests


def _arm(config, arm, setting):
    pre, finetune, tests = setting
    return run_arm(config, arm, pre, 7, finetune, tests)


def test_only_the_page4d_arm_is_evaluated_with_the_mask():
    assert [eval_alpha(CONFIG, a) > 0 for a in ARMS] == [a == "page4d" for a in ARMS]
    assert eval_alpha(replace(CONFIG, eval_mask=False, mask_hold_frac=0.5), "page4d") == 0.0  # training-only variant


def test_page4d_without_the_mask_is_naive_fine_tuning(setting):
    naive = _arm(CONFIG, "naive", setting)
    unmasked = _arm(replace(CONFIG, mask_scale=0.0), "page4d", setting)
    masked = _arm(CONFIG, "page4d", setting)
    assert unmasked.losses == naive.losses
    np.testing.assert_equal(unmasked.dynamic, naive.dynamic)  # bit for bit (NaN where a metric does not apply)
    np.testing.assert_equal(unmasked.static, naive.static)
    assert all(np.isnan(naive.dynamic["mask_iou"])) and all(np.isfinite(masked.dynamic["mask_iou"]))
    assert masked.losses != naive.losses and masked.dynamic["ate"] != naive.dynamic["ate"]
    assert masked.frozen_unchanged and masked.changed


@pytest.mark.parametrize("arm", ["frozen", "naive", "full"])
def test_the_mask_strength_never_reaches_another_arm(arm, setting):
    a = _arm(CONFIG, arm, setting)
    b = _arm(replace(CONFIG, mask_scale=1.0), arm, setting)
    assert a.losses == b.losses
    np.testing.assert_equal(a.dynamic, b.dynamic)
