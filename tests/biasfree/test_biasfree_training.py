"""DPO loss against hand-computed values, the schedule, training arms and exact task-vector arithmetic."""

import math

import pytest
import torch

from iclr26.biasfree.items import PreferencePair
from iclr26.biasfree.tiny import tiny_random_lm
from iclr26.biasfree.training import cosine_lr, dpo_loss, negate_task_vector, reference_logprobs, train_pairs

PAIRS = [PreferencePair("The girl joined our club.", "The girl was good at math.", "The girl was bad at math.",
                        "Gender_identity"),
         PreferencePair("I met a woman.", "The woman was the manager.", "The woman was the secretary.",
                        "Gender_identity")]  # fmt: skip


def test_dpo_loss_against_hand_computed_values():
    pc, pr = torch.tensor([-1.0, -3.0]), torch.tensor([-2.0, -1.0])
    rc, rr = torch.tensor([-1.5, -2.0]), torch.tensor([-1.5, -2.0])
    # Δ_1 = (−1 + 1.5) − (−2 + 1.5) = 1.0;  Δ_2 = (−3 + 2) − (−1 + 2) = −2.0
    # L = mean(−log σ(0.1·1), −log σ(0.1·(−2))) = mean(0.644397, 0.798139) = 0.721268
    out = dpo_loss(pc, pr, rc, rr, beta=0.1)
    expected = 0.5 * (math.log1p(math.exp(-0.1)) + math.log1p(math.exp(0.2)))
    assert float(out.loss) == pytest.approx(expected, abs=1e-6)
    assert out.margins.tolist() == [1.0, -2.0] and out.accuracy == 0.5
    # policy = reference: Δ = 0 and L = log 2 whatever β
    assert float(dpo_loss(pc, pr, pc, pr, beta=3.0).loss) == pytest.approx(math.log(2))
    with pytest.raises(ValueError, match="beta"):
        dpo_loss(pc, pr, rc, rr, beta=0.0)
    with pytest.raises(ValueError, match="shape"):
        dpo_loss(pc, pr[:1], rc, rr)


def test_cosine_schedule_warms_up_then_decays_to_zero():
    # 10 steps, warm-up ceil(0.1·10) = 1 step: step 0 -> 1/2, step 1 -> cos(0) = 1, step 10 -> 0
    assert cosine_lr(0, 10, warmup_ratio=0.1) == 0.5
    assert cosine_lr(1, 10, warmup_ratio=0.1) == 1.0
    assert cosine_lr(10, 10, warmup_ratio=0.1) == pytest.approx(0.0)
    assert cosine_lr(1 + 9 / 2, 10, warmup_ratio=0.1) == pytest.approx(0.5)  # halfway through the decay


def test_first_dpo_step_starts_at_log2_and_training_moves_the_chosen_margin(tiny):
    log = train_pairs(tiny, PAIRS, method="dpo", steps=6, batch_size=2, lr=1e-2, warmup_ratio=0.0, seed=0)
    assert log.losses[0] == pytest.approx(math.log(2), abs=1e-5)  # π_θ = π_ref before the first update (B = 0)
    assert log.margins[0] == pytest.approx(0.0, abs=1e-5)
    assert log.margins[-1] > 0 and log.losses[-1] < log.losses[0]
    # the reference is the model with adapters off: unchanged by training
    fresh = tiny_random_lm(seed=0)
    ref_now = reference_logprobs(tiny, [p.prompt for p in PAIRS], [p.chosen for p in PAIRS])
    ref_fresh = reference_logprobs(fresh, [p.prompt for p in PAIRS], [p.chosen for p in PAIRS])
    torch.testing.assert_close(ref_now, ref_fresh)


def test_sft_arm_lowers_the_loss_of_its_targets(tiny):
    log = train_pairs(tiny, PAIRS, method="sft", steps=5, batch_size=2, lr=1e-2, warmup_ratio=0.0, seed=0)
    assert log.losses[-1] < log.losses[0] and log.margins == []
    with pytest.raises(ValueError, match="method"):
        train_pairs(tiny_random_lm(), PAIRS, method="ppo", steps=1, batch_size=1, lr=1e-3)


def test_task_vector_negation_is_exact_on_a_tiny_model():
    base, ft = tiny_random_lm(seed=0), tiny_random_lm(seed=0)
    theta_pre = {n: p.detach().clone() for n, p in base.model.named_parameters()}
    with torch.no_grad():  # a known fine-tuning update: θ_ft = θ_pre + δ with δ = 0.01·(index of the parameter + 1)
        for k, (_, p) in enumerate(ft.model.named_parameters()):
            p.add_(0.01 * (k + 1))
    negate_task_vector(ft, base, lam=0.5)
    for k, (name, p) in enumerate(base.model.named_parameters()):
        # θ = θ_pre − 0.5·τ, τ = δ
        torch.testing.assert_close(p, theta_pre[name] - 0.5 * 0.01 * (k + 1), rtol=0, atol=1e-6)


def test_the_task_vectors_fine_tuning_is_sft_on_the_stereotyped_continuations():
    # train_pairs(method="stereo_sft") trains exactly as SFT on pairs whose chosen text is the stereotype
    swapped = [PreferencePair(p.prompt, p.rejected, p.chosen, p.category) for p in PAIRS]
    a, b = tiny_random_lm(seed=0), tiny_random_lm(seed=0)
    train_pairs(a, PAIRS, method="stereo_sft", steps=2, batch_size=2, lr=1e-2, warmup_ratio=0.0, seed=0)
    train_pairs(b, swapped, method="sft", steps=2, batch_size=2, lr=1e-2, warmup_ratio=0.0, seed=0)
    c = tiny_random_lm(seed=0)
    train_pairs(c, PAIRS, method="sft", steps=2, batch_size=2, lr=1e-2, warmup_ratio=0.0, seed=0)
    for (name, pa), (_, pb) in zip(a.model.named_parameters(), b.model.named_parameters(), strict=True):
        assert torch.equal(pa, pb), name
    assert any(not torch.equal(pa, pc) for pa, pc in zip(a.model.parameters(), c.model.parameters(), strict=True))
