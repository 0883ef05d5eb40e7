"""Tests of the GRPO core (DeepSeekMath §4.1): advantages, KL estimator, clipped surrogate, loss aggregation."""

from __future__ import annotations

import math

import pytest
import torch

from iclr26.common.grpo import clipped_surrogate, group_relative_advantages, grpo_loss, kl_k3, masked_mean

F64 = torch.float64


# ---------------------------------------------------------------- advantages (§4.1.2)
def test_advantage_hand_computed_unbiased():
    # group 1: mean 2, unbiased std sqrt(((−1)² + 0² + 1²)/2) = 1 → (−1, 0, 1)
    # group 2: all equal → std 0 → advantage 0 (eps keeps it finite)
    rewards = torch.tensor([[1.0, 2.0, 3.0], [5.0, 5.0, 5.0]], dtype=F64)
    adv = group_relative_advantages(rewards)
    expected = torch.tensor([[-1.0, 0.0, 1.0], [0.0, 0.0, 0.0]], dtype=F64)
    torch.testing.assert_close(adv, expected, atol=1e-7, rtol=0)


def test_advantage_biased_std_and_centring_only():
    rewards = torch.tensor([[1.0, 2.0, 3.0]], dtype=F64)
    # biased std = sqrt(2/3) → ±1/sqrt(2/3) = ±1.224744871
    adv = group_relative_advantages(rewards, unbiased=False, eps=0.0)
    torch.testing.assert_close(adv, torch.tensor([[-1.224744871391589, 0.0, 1.224744871391589]], dtype=F64))
    # scale="none" only subtracts the group mean
    torch.testing.assert_close(
        group_relative_advantages(rewards, scale="none"), torch.tensor([[-1.0, 0.0, 1.0]], dtype=F64)
    )


def test_advantage_invariances():
    gen = torch.Generator().manual_seed(0)
    rewards = torch.randn(4, 6, generator=gen, dtype=F64)
    adv = group_relative_advantages(rewards, eps=0.0)
    # zero mean and unit (unbiased) std per group; invariant to an affine change a·r + b with a > 0
    torch.testing.assert_close(adv.mean(dim=1), torch.zeros(4, dtype=F64), atol=1e-12, rtol=0)
    torch.testing.assert_close(adv.std(dim=1), torch.ones(4, dtype=F64))
    torch.testing.assert_close(group_relative_advantages(3.0 * rewards - 7.0, eps=0.0), adv)


@pytest.mark.parametrize(
    ("rewards", "match"),
    [
        (torch.ones(5), "rewards must have shape"),
        (torch.ones(3, 1), "group_size >= 2"),
        (torch.tensor([[1.0, float("nan")]]), "finite"),
    ],
)
def test_advantage_errors(rewards, match):
    with pytest.raises(ValueError, match=match):
        group_relative_advantages(rewards)


# ---------------------------------------------------------------- KL estimator (Eq. 4)
def test_kl_k3_hand_value_and_zero():
    # π_θ = 0.5, π_ref = 0.25: 0.25/0.5 − log(0.25/0.5) − 1 = 0.5 + log 2 − 1
    value = kl_k3(torch.tensor([math.log(0.5)], dtype=F64), torch.tensor([math.log(0.25)], dtype=F64))
    assert value.item() == pytest.approx(0.5 + math.log(2.0) - 1.0, abs=1e-12)
    same = torch.log(torch.tensor([0.1, 0.7], dtype=F64))
    torch.testing.assert_close(kl_k3(same, same), torch.zeros(2, dtype=F64))


def test_kl_k3_is_unbiased_for_the_exact_kl():
    # E_{x~π}[π_ref/π − log(π_ref/π) − 1] = 1 + KL(π‖π_ref) − 1 = KL(π‖π_ref), exactly, over a categorical
    p = torch.tensor([0.5, 0.3, 0.2], dtype=F64)
    q = torch.tensor([0.2, 0.2, 0.6], dtype=F64)
    expectation = (p * kl_k3(p.log(), q.log())).sum()
    exact = (p * (p.log() - q.log())).sum()
    torch.testing.assert_close(expectation, exact)
    assert (kl_k3(p.log(), q.log()) >= 0).all()


def test_kl_k3_shape_error():
    with pytest.raises(ValueError, match="logp_ref must have the shape"):
        kl_k3(torch.zeros(3), torch.zeros(2))


# ---------------------------------------------------------------- clipped surrogate (Eq. 3)
def test_clipped_surrogate_hand_cases():
    # ε = 0.2; (A, ρ) → min(ρA, clip(ρ, 0.8, 1.2)A):
    # (+1, 1.5) → min(1.5, 1.2) = 1.2 clipped; (+1, 0.5) → min(0.5, 0.8) = 0.5;
    # (−1, 1.5) → min(−1.5, −1.2) = −1.5;      (−1, 0.5) → min(−0.5, −0.8) = −0.8 clipped; (2, 1) → 2
    adv = torch.tensor([1.0, 1.0, -1.0, -1.0, 2.0], dtype=F64)
    ratio = torch.tensor([1.5, 0.5, 1.5, 0.5, 1.0], dtype=F64)
    logp_old = torch.zeros(5, dtype=F64)
    terms = clipped_surrogate(ratio.log(), logp_old, adv, clip_eps=0.2)
    torch.testing.assert_close(terms.objective, torch.tensor([1.2, 0.5, -1.5, -0.8, 2.0], dtype=F64))
    torch.testing.assert_close(terms.ratio, ratio)
    assert terms.clipped.tolist() == [True, False, False, True, False]


def test_clipped_surrogate_gradient_is_zero_on_the_clipped_branch():
    adv = torch.tensor([1.0, 1.0, -1.0, -1.0], dtype=F64)
    logp = torch.tensor([1.5, 0.5, 1.5, 0.5], dtype=F64).log().requires_grad_()
    terms = clipped_surrogate(logp, torch.zeros(4, dtype=F64), adv)
    terms.objective.sum().backward()
    # d(ρA)/dlogp = ρA on the unclipped branch, 0 on the clipped one
    torch.testing.assert_close(logp.grad, torch.tensor([0.0, 0.5, -1.5, 0.0], dtype=F64))


def test_clipped_surrogate_equals_the_rlaf_code_form():
    # RLAF's code writes min(ρA, g(A)) with g(A) = (1+ε)A for A >= 0 and (1−ε)A otherwise; same function
    gen = torch.Generator().manual_seed(1)
    adv = torch.randn(200, generator=gen, dtype=F64)
    logp = 0.5 * torch.randn(200, generator=gen, dtype=F64)
    ratio = logp.exp()
    g = torch.where(adv >= 0, 1.2 * adv, 0.8 * adv)
    terms = clipped_surrogate(logp, torch.zeros(200, dtype=F64), adv, clip_eps=0.2)
    torch.testing.assert_close(terms.objective, torch.minimum(ratio * adv, g))


def test_clipped_surrogate_errors():
    with pytest.raises(ValueError, match="clip_eps"):
        clipped_surrogate(torch.zeros(2), torch.zeros(2), torch.zeros(2), clip_eps=1.5)
    with pytest.raises(ValueError, match="logp_old"):
        clipped_surrogate(torch.zeros(2), torch.zeros(3), torch.zeros(2))
    with pytest.raises(ValueError, match="advantages must have shape"):
        clipped_surrogate(torch.zeros(2, 3), torch.zeros(2, 3), torch.zeros(3))


# ---------------------------------------------------------------- the loss
def test_grpo_loss_per_sample_hand_computed():
    # ρ = 1 everywhere → surrogate = mean(A) = (1 − 1 + 2 + 0)/4 = 0.5; KL mean = 0.25; β = 0.5
    # loss = −(0.5 − 0.5·0.25) = −0.375
    adv = torch.tensor([1.0, -1.0, 2.0, 0.0], dtype=F64)
    logp = torch.tensor([-3.0, -1.0, -2.0, -5.0], dtype=F64, requires_grad=True)
    kl = torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=F64)
    out = grpo_loss(logp, logp.detach().clone(), adv, kl=kl, beta=0.5)
    assert out.loss.item() == pytest.approx(-0.375)
    assert out.surrogate.item() == pytest.approx(0.5)
    assert out.kl.item() == pytest.approx(0.25)
    assert out.ratio_mean.item() == pytest.approx(1.0)
    assert out.clip_fraction.item() == 0.0
    out.loss.backward()
    # ∂loss/∂logp_i = −ρ_i A_i / N = −A_i / 4 at ρ = 1
    torch.testing.assert_close(logp.grad, -adv / 4)


def test_grpo_loss_per_token_aggregations_with_mask():
    # ρ = 1 → the token objective equals its sample's advantage: A = (1, 3)
    # mask: sample 0 has 2 tokens, sample 1 has 1 token
    # "sequence": mean over each sample's tokens → (1, 3) → 2;  "token": (1 + 1 + 3)/3 = 5/3
    # KL (masked entries 9 ignored): sequence → ((0.1+0.5)/2 + 0.6)/2 = 0.45;  token → (0.1+0.5+0.6)/3 = 0.4
    logp = torch.zeros(2, 3, dtype=F64)
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]], dtype=torch.bool)
    kl = torch.tensor([[0.1, 0.5, 9.0], [0.6, 9.0, 9.0]], dtype=F64)
    adv = torch.tensor([1.0, 3.0], dtype=F64)
    seq = grpo_loss(logp, logp, adv, mask=mask, kl=kl, beta=1.0, aggregation="sequence")
    tok = grpo_loss(logp, logp, adv, mask=mask, kl=kl, beta=1.0, aggregation="token")
    assert seq.surrogate.item() == pytest.approx(2.0)
    assert tok.surrogate.item() == pytest.approx(5.0 / 3.0)
    assert seq.kl.item() == pytest.approx(0.45)
    assert tok.kl.item() == pytest.approx(0.4)
    assert seq.loss.item() == pytest.approx(-(2.0 - 0.45))


def test_grpo_loss_with_k3_matches_manual_formula():
    gen = torch.Generator().manual_seed(2)
    logp = -torch.rand(3, 4, generator=gen, dtype=F64)
    logp_old = logp + 0.05 * torch.randn(3, 4, generator=gen, dtype=F64)
    logp_ref = logp + 0.1 * torch.randn(3, 4, generator=gen, dtype=F64)
    adv = torch.randn(3, generator=gen, dtype=F64)
    out = grpo_loss(logp, logp_old, adv, kl=kl_k3(logp, logp_ref), beta=0.04, aggregation="sequence")
    # a loop over samples and tokens, straight from Eq. (3)
    total = 0.0
    for i in range(3):
        row = 0.0
        for t in range(4):
            r = math.exp(logp[i, t] - logp_old[i, t])
            a = adv[i].item()
            surrogate = min(r * a, min(max(r, 0.8), 1.2) * a)
            log_ratio = (logp_ref[i, t] - logp[i, t]).item()
            row += surrogate - 0.04 * (math.exp(log_ratio) - log_ratio - 1)
        total += row / 4
    assert out.loss.item() == pytest.approx(-total / 3, rel=1e-12)


def test_grpo_loss_errors_name_the_argument():
    x = torch.zeros(4)
    with pytest.raises(ValueError, match="beta > 0 needs kl"):
        grpo_loss(x, x, x, beta=0.1)
    with pytest.raises(ValueError, match="beta must be >= 0"):
        grpo_loss(x, x, x, beta=-1.0)
    with pytest.raises(ValueError, match="mask is for per-token"):
        grpo_loss(x, x, x, mask=torch.ones(4, dtype=torch.bool))
    with pytest.raises(ValueError, match="kl must have the shape"):
        grpo_loss(x, x, x, kl=torch.zeros(3), beta=0.1)
    with pytest.raises(ValueError, match="aggregation"):
        grpo_loss(x, x, x, aggregation="mean")
    with pytest.raises(ValueError, match="logp must have shape"):
        grpo_loss(torch.zeros(2, 2, 2), torch.zeros(2, 2, 2), torch.zeros(2))


def test_masked_mean_empty_row_is_zero():
    values = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    mask = torch.tensor([[True, True], [False, False]])
    torch.testing.assert_close(masked_mean(values, mask, dim=1), torch.tensor([1.5, 0.0]))
    with pytest.raises(ValueError, match="mask must have the shape"):
        masked_mean(values, mask[:, :1])
