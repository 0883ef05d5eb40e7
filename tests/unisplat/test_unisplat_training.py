"""The training loss: the weighted dynamic BCE by hand, and the filter counts the gate reads."""

from __future__ import annotations

import math

import pytest
import torch

from iclr26.unisplat.experiment import filter_counts
from iclr26.unisplat.model import Gaussians
from iclr26.unisplat.training import dynamic_loss


def test_dynamic_loss_hand_values():
    zero = torch.zeros(4)
    target = torch.tensor([1.0, 0.0, 0.0, 0.0])
    # logits 0: each term is log 2; static mass 3, moving mass 1, so the moving term weighs 3 (cap 100)
    assert dynamic_loss(zero, target, pos_weight_cap=100.0).item() == pytest.approx((3 + 1 + 1 + 1) / 4 * math.log(2))
    assert dynamic_loss(zero, target, pos_weight_cap=2.0).item() == pytest.approx((2 + 3) / 4 * math.log(2))
    # cap 1 is plain BCE
    plain = torch.nn.functional.binary_cross_entropy_with_logits(zero, target)
    assert dynamic_loss(zero, target, pos_weight_cap=1.0).item() == pytest.approx(plain.item())
    # soft targets: mass 0.5 moving, 1.5 static -> weight 3; a logit of 0 gives log 2 for either side
    soft = torch.tensor([0.5, 0.0])
    assert dynamic_loss(torch.zeros(2), soft, pos_weight_cap=100.0).item() == pytest.approx(
        (3 * 0.5 + 0.5 + 1) / 2 * math.log(2)
    )


def test_the_weighted_loss_pushes_moving_logits_up_harder():
    logits = torch.full((100,), -2.0, requires_grad=True)
    target = torch.zeros(100)
    target[:3] = 1.0  # 3% moving, as in the driving world
    grads = []
    for cap in (1.0, 100.0):
        logits.grad = None
        dynamic_loss(logits, target, pos_weight_cap=cap).backward()
        grads.append(-logits.grad[:3].mean().item())
    assert grads[1] > 20 * grads[0] > 0


def test_filter_counts_by_hand():
    n = 5
    g = Gaussians(
        means=torch.zeros(n, 3), scales=torch.ones(n, 3), quats=torch.tensor([[1.0, 0, 0, 0]] * n),
        opacities=torch.ones(n), colors=torch.zeros(n, 3),
        dynamic_logits=torch.tensor([3.0, -3.0, 3.0, -3.0, 3.0]),  # removed: 0, 2, 4
        dynamic_target=torch.tensor([1.0, 0.8, 0.0, 0.1, -1.0]),  # moving: 0, 1; static: 2, 3; 4 unsupervised
    )  # fmt: skip
    assert filter_counts(g) == (2, 2, 1, 1)
