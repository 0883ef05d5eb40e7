"""The dynamics-aware attention, the mask head and the mask schedule."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from iclr26.page4d.aggregator import (
    DynamicsMaskHead,
    MaskSchedule,
    dynamics_aware_attention,
    dynamics_bias_vectors,
    mask_strength,
)


def _qkv(b=2, h=3, n=7, d=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(b, h, n, d, generator=g, dtype=torch.float64) for _ in range(3))


def test_masked_attention_equals_dense_attention_when_the_mask_is_empty():
    q, k, v = _qkv()
    dense = F.scaled_dot_product_attention(q, k, v)
    c = torch.rand(2, 7, dtype=torch.float64) - 0.5
    assert torch.equal(dynamics_aware_attention(q, k, v, None, None), dense)
    assert torch.equal(dynamics_aware_attention(q, k, v, torch.zeros(2, 7, dtype=torch.float64), c), dense)
    # α > 0 but every score 0: the bias r_i·0 vanishes, the augmented path must give the same numbers
    r = torch.full((2, 7), 64.0, dtype=torch.float64)
    out = dynamics_aware_attention(q, k, v, r, torch.zeros(2, 7, dtype=torch.float64))
    assert torch.allclose(out, dense, atol=1e-12)


def test_masked_attention_equals_the_explicit_rank_one_bias():
    q, k, v = _qkv(d=8)  # Dh = 8: D' = 16, 7 zero columns of padding
    r = torch.zeros(2, 7, dtype=torch.float64)
    r[:, :2] = 3.0  # two "special" query rows
    c = torch.rand(2, 7, dtype=torch.float64) - 0.5
    logits = q @ k.transpose(-1, -2) / math.sqrt(8) + (r[:, :, None] * c[:, None, :])[:, None]
    expected = torch.softmax(logits, dim=-1) @ v
    assert torch.allclose(dynamics_aware_attention(q, k, v, r, c), expected, atol=1e-12)
    # patch rows (r = 0) are untouched by the bias
    dense = F.scaled_dot_product_attention(q, k, v)
    assert torch.allclose(dynamics_aware_attention(q, k, v, r, c)[:, :, 2:], dense[:, :, 2:], atol=1e-12)


def test_two_token_hand_value():
    # One query with q·k_1 = q·k_2 = 0, α = 2, scores c = (+0.5, −0.5): logits (1, −1),
    # weights (e/(e+1/e), (1/e)/(e+1/e)), output = weights · (v_1, v_2) with v = (1, 0).
    q = torch.zeros(1, 1, 2, 1, dtype=torch.float64)
    k = torch.zeros(1, 1, 2, 1, dtype=torch.float64)
    v = torch.tensor([1.0, 0.0], dtype=torch.float64).reshape(1, 1, 2, 1)
    r = torch.tensor([[2.0, 0.0]], dtype=torch.float64)
    c = torch.tensor([[0.5, -0.5]], dtype=torch.float64)
    out = dynamics_aware_attention(q, k, v, r, c)
    assert out[0, 0, 0, 0].item() == pytest.approx(math.e / (math.e + 1 / math.e))
    assert out[0, 0, 1, 0].item() == pytest.approx(0.5)  # the patch row (r = 0): uniform


def test_bias_vectors_layout_and_shape_check():
    scores = torch.tensor([[[0.1, -0.2], [0.3, 0.4]]])  # (B=1, S=2, h·w=2)
    r, c = dynamics_bias_vectors(scores, n_special=1, alpha=5.0)
    assert r.tolist() == [[5.0, 0.0, 0.0, 5.0, 0.0, 0.0]]
    assert torch.allclose(c, torch.tensor([[0.0, 0.1, -0.2, 0.0, 0.3, 0.4]]))
    q, k, v = _qkv(b=1, n=5)
    with pytest.raises(ValueError, match="r and c"):
        dynamics_aware_attention(q, k, v, r.double(), c.double())


def test_mask_head_range_detachment_and_gradient():
    torch.manual_seed(0)
    head = DynamicsMaskHead(6, hidden=4)
    tokens = torch.randn(2, 3, 12, 6, requires_grad=True)
    c = head(tokens, (3, 4))
    assert c.shape == (2, 3, 12)
    assert bool((c > -0.5).all() and (c < 0.5).all())
    c.sum().backward()
    assert tokens.grad is None  # the head reads detached tokens
    assert all(p.grad is not None for p in head.parameters())
    with pytest.raises(ValueError, match="grid"):
        head(tokens, (2, 4))


def test_mask_head_is_invariant_to_per_channel_affine_changes():
    # ĥ normalises each channel over space: scaling and shifting a channel (per frame) leaves c unchanged.
    torch.manual_seed(1)
    head = DynamicsMaskHead(4, hidden=3)
    x = torch.randn(1, 2, 9, 4)
    y = x * torch.tensor([2.0, 0.5, 3.0, 1.5]) + torch.tensor([1.0, -2.0, 0.3, 5.0])
    assert torch.allclose(head(x, (3, 3)), head(y, (3, 3)), atol=1e-5)


def test_mask_strength_schedule_hand_values():
    # official: 64 before hold = 6000, 0 from end = 10000, cosine between: at the midpoint 64·½(1 + cos π/2) = 32
    assert mask_strength(0, hold=6000, end=10000) == 64.0
    assert mask_strength(5999, hold=6000, end=10000) == 64.0
    assert mask_strength(8000, hold=6000, end=10000) == pytest.approx(32.0)
    assert mask_strength(9000, hold=6000, end=10000) == pytest.approx(64 * 0.5 * (1 + math.cos(math.pi * 0.75)))
    assert mask_strength(10000, hold=6000, end=10000) == 0.0
    sched = MaskSchedule(hold=2, end=2, scale=10.0)
    assert [sched(s) for s in range(4)] == [10.0, 10.0, 0.0, 0.0]
    assert MaskSchedule(hold=float("inf"), end=float("inf"))(10**9) == 64.0
    with pytest.raises(ValueError, match="end must be >= hold"):
        MaskSchedule(hold=5, end=3)
    with pytest.raises(ValueError, match="scale"):
        mask_strength(0, hold=1, end=2, scale=-1)
