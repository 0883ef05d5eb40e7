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


def test_identical_group_gets_exactly_zero_advantage_whatever_eps_and_dtype():
    # float32 mean(0.1 × 7) = 0.1 + δ with δ ≈ 7e-9: without the explicit rule the advantage would be
    # −δ/(std + eps) ≈ −0.41 for every sample (std ≈ 8e-9, eps = 1e-8), a spurious push on all seven samples
    rewards = torch.tensor([[0.1] * 7, [0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3]], dtype=torch.float32)
    for eps in (1e-8, 0.0):
        adv = group_relative_advantages(rewards, eps=eps)
        assert torch.equal(adv, torch.zeros_like(rewards))
        assert torch.equal(group_relative_advantages(rewards, eps=eps, scale="none"), torch.zeros_like(rewards))
    # eps = 0 on a group that does differ: plain (r − mean)/std, finite: (0 − 1/2)/sqrt(1/2) = −1/√2
    adv = group_relative_advantages(torch.tensor([[0.0, 1.0]], dtype=F64), eps=0.0)
    torch.testing.assert_close(adv, torch.tensor([[-(0.5**0.5), 0.5**0.5]], dtype=F64))


@pytest.mark.parametrize(
    ("rewards", "match"),
    [
        (torch.ones(5), "rewards must have shape"),
        (torch.tensor([[1, 2, 3]]), "rewards must be a floating-point tensor"),
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


def test_grpo_loss_ignores_garbage_at_masked_positions():
    # padded tokens often hold -inf or NaN log-probs (masked logits); exp(−inf − (−inf)) = NaN, and NaN·0 = NaN,
    # so the padding must be removed before any arithmetic. The loss and gradient must equal the clean-padding ones.
    gen = torch.Generator().manual_seed(5)
    clean = -torch.rand(3, 4, generator=gen, dtype=F64)
    clean_old = clean + 0.1 * torch.randn(3, 4, generator=gen, dtype=F64)
    kl_clean = torch.rand(3, 4, generator=gen, dtype=F64)
    adv = torch.tensor([1.0, -0.5, 2.0], dtype=F64)
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0], [1, 0, 0, 0]])
    pad = mask == 0
    dirty = clean.masked_fill(pad, float("-inf")).detach()
    dirty_old = clean_old.masked_fill(pad, float("nan"))
    kl_dirty = kl_clean.masked_fill(pad, float("nan"))
    grads = []
    losses = []
    for logp, logp_old, kl in ((clean.clone(), clean_old, kl_clean), (dirty.clone(), dirty_old, kl_dirty)):
        logp.requires_grad_()
        for aggregation in ("sequence", "token"):
            out = grpo_loss(logp, logp_old, adv, mask=mask, kl=kl, beta=0.3, aggregation=aggregation)
            assert torch.isfinite(out.loss) and torch.isfinite(out.ratio_mean) and torch.isfinite(out.kl)
            losses.append(out.loss.item())
        out.loss.backward()
        grads.append(logp.grad)
    assert losses[:2] == pytest.approx(losses[2:], rel=1e-12)
    torch.testing.assert_close(grads[1], grads[0])
    assert torch.equal(grads[1][pad], torch.zeros(int(pad.sum()), dtype=F64))
    with pytest.raises(ValueError, match="mask must be bool or hold only 0/1"):
        grpo_loss(clean, clean_old, adv, mask=mask * 0.5)


def test_grpo_loss_gradient_of_the_kl_term():
    # loss = −mean(objective) + β·mean(kl) → ∂loss/∂kl_i = β/N = 0.5/4
    logp = torch.zeros(4, dtype=F64)
    kl = torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=F64, requires_grad=True)
    grpo_loss(logp, logp, torch.ones(4, dtype=F64), kl=kl, beta=0.5).loss.backward()
    torch.testing.assert_close(kl.grad, torch.full((4,), 0.125, dtype=F64))


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


def test_per_prompt_seeds_follow_the_world_and_refuse_one_stream_over_ranks():
    from iclr26.common.config import ConfigError
    from iclr26.common.distributed import World
    from iclr26.common.grpo import per_prompt_seeds

    one, two = World(0, 1, 0), World(1, 2, 1)
    assert not per_prompt_seeds("auto", one) and per_prompt_seeds("auto", two)
    assert per_prompt_seeds("prompt", one) and per_prompt_seeds("prompt", two)
    assert not per_prompt_seeds("batch", one)
    with pytest.raises(ConfigError, match="'rollout_seeds': batch .* cannot be split over 2 ranks"):
        per_prompt_seeds("batch", two)
