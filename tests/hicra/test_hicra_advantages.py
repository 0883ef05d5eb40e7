"""HICRA's advantage transform against hand-computed values, and its bad-input errors."""

from __future__ import annotations

import math

import pytest
import torch

from iclr26.common.grpo import group_relative_advantages
from iclr26.hicra import entropy_mask, hicra_advantages


def test_hand_computed_positive_and_negative_advantages():
    # rewards (1, 0, 0, 1) in one group: mean 0.5, so Â = (+0.5, −0.5, −0.5, +0.5) (no std division, as the paper)
    adv = group_relative_advantages(torch.tensor([[1.0, 0.0, 0.0, 1.0]]), scale="none").reshape(-1)
    planning = torch.tensor([[1, 0], [1, 0], [0, 0], [1, 1]], dtype=torch.bool)
    out = hicra_advantages(adv, planning, alpha=0.2)
    # planning token: Â + 0.2|Â| → +0.5 → 0.6; −0.5 → −0.4; execution tokens keep Â
    expected = torch.tensor([[0.6, 0.5], [-0.4, -0.5], [-0.5, -0.5], [0.6, 0.6]])
    torch.testing.assert_close(out, expected)


def test_alpha_zero_and_all_or_no_planning():
    adv = torch.tensor([[0.3, -1.2, 2.0]])
    everywhere, nowhere = torch.ones(1, 3, dtype=torch.bool), torch.zeros(1, 3, dtype=torch.bool)
    torch.testing.assert_close(hicra_advantages(adv, everywhere, alpha=0.0), adv)
    torch.testing.assert_close(hicra_advantages(adv, nowhere, alpha=0.7), adv)
    # all planning, α = 0.5: 0.3 → 0.45, −1.2 → −0.6, 2.0 → 3.0 (×(1 ± α) by the sign)
    torch.testing.assert_close(hicra_advantages(adv, everywhere, alpha=0.5), torch.tensor([[0.45, -0.6, 3.0]]))


def test_padding_is_zero_and_may_hold_nan():
    adv = torch.tensor([[1.0, math.nan], [-2.0, 4.0]])
    real = torch.tensor([[1, 0], [1, 1]])
    out = hicra_advantages(adv, torch.ones(2, 2), alpha=0.25, mask=real)
    torch.testing.assert_close(out, torch.tensor([[1.25, 0.0], [-1.5, 5.0]]))


def test_mask_carries_no_gradient_and_advantage_gradient_is_exact():
    adv = torch.tensor([[0.5, -0.5]], requires_grad=True)
    planning = torch.tensor([[1.0, 1.0]], requires_grad=True)
    out = hicra_advantages(adv, planning, alpha=0.2)
    out.sum().backward()
    # d/dÂ (Â + α|Â|) = 1 + α·sign(Â)
    torch.testing.assert_close(adv.grad, torch.tensor([[1.2, 0.8]]))
    assert planning.grad is None


def test_bad_inputs_name_the_argument():
    adv, planning = torch.zeros(2, 3), torch.zeros(2, 3, dtype=torch.bool)
    with pytest.raises(ValueError, match="alpha"):
        hicra_advantages(adv, planning, alpha=-0.1)
    with pytest.raises(ValueError, match="alpha"):
        hicra_advantages(adv, planning, alpha=math.inf)
    with pytest.raises(ValueError, match="advantages must have shape"):
        hicra_advantages(torch.zeros(2, 4), planning)
    with pytest.raises(ValueError, match="planning_mask must have shape"):
        hicra_advantages(adv, torch.zeros(6, dtype=torch.bool))
    with pytest.raises(ValueError, match="mask must have shape"):
        hicra_advantages(adv, planning, mask=torch.ones(3, 2))
    with pytest.raises(ValueError, match="advantages must be finite"):
        hicra_advantages(torch.tensor([[0.0, math.inf, 0.0], [0.0, 0.0, 0.0]]), planning)
    with pytest.raises(ValueError, match="planning_mask must be bool or hold only 0/1"):
        hicra_advantages(adv, torch.full((2, 3), 0.5))
    with pytest.raises(ValueError, match="floating-point"):
        hicra_advantages(torch.zeros(2, 3, dtype=torch.long), planning)
    with pytest.raises(TypeError, match="advantages must be a torch.Tensor"):
        hicra_advantages([[0.0]], planning)


def test_entropy_mask_selects_the_top_fraction_of_real_tokens():
    entropy = torch.tensor([[0.1, 0.9, 0.5], [0.8, 0.2, 7.0]])
    real = torch.tensor([[1, 1, 1], [1, 1, 0]], dtype=torch.bool)
    # 5 real tokens, fraction 0.4 → 2 tokens: 0.9 and 0.8 (7.0 is padding)
    out = entropy_mask(entropy, real, fraction=0.4)
    assert out.tolist() == [[False, True, False], [True, False, False]]
    assert not entropy_mask(entropy, real, fraction=0.0).any()
    with pytest.raises(ValueError, match="fraction"):
        entropy_mask(entropy, real, fraction=1.5)
