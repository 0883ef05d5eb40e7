"""DPO loss against hand-computed values, the schedule, training arms and exact task-vector arithmetic."""

import math

import pytest
import torch

from iclr26.biasfree.items import PreferencePair
from iclr26.biasfree.training import cosine_lr, negate_task_vector, reference_logprobs, train_pairs
from iclr26.common.pretrained import random_llama

PAIRS = [PreferencePair("The girl joined our club.", "The girl was good at math.", "The girl was bad at math.",
                        "Gender_identity"),
         PreferencePair("I met a woman.", "The woman was the manager.", "The woman was the secretary.",
                        "Gender_identity")]  # fmt: skip


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
    fresh = random_llama(seed=0)
    ref_now = reference_logprobs(tiny, [p.prompt for p in PAIRS], [p.chosen for p in PAIRS])
    ref_fresh = reference_logprobs(fresh, [p.prompt for p in PAIRS], [p.chosen for p in PAIRS])
    torch.testing.assert_close(ref_now, ref_fresh)


def test_sft_arm_lowers_the_loss_of_its_targets(tiny):
    log = train_pairs(tiny, PAIRS, method="sft", steps=5, batch_size=2, lr=1e-2, warmup_ratio=0.0, seed=0)
    assert log.losses[-1] < log.losses[0] and log.margins == []
    with pytest.raises(ValueError, match="method"):
        train_pairs(random_llama(), PAIRS, method="ppo", steps=1, batch_size=1, lr=1e-3)


def test_task_vector_negation_is_exact_on_a_tiny_model():
    base, ft = random_llama(seed=0), random_llama(seed=0)
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
    a, b = random_llama(seed=0), random_llama(seed=0)
    train_pairs(a, PAIRS, method="stereo_sft", steps=2, batch_size=2, lr=1e-2, warmup_ratio=0.0, seed=0)
    train_pairs(b, swapped, method="sft", steps=2, batch_size=2, lr=1e-2, warmup_ratio=0.0, seed=0)
    c = random_llama(seed=0)
    train_pairs(c, PAIRS, method="sft", steps=2, batch_size=2, lr=1e-2, warmup_ratio=0.0, seed=0)
    for (name, pa), (_, pb) in zip(a.model.named_parameters(), b.model.named_parameters(), strict=True):
        assert torch.equal(pa, pb), name
    assert any(not torch.equal(pa, pc) for pa, pc in zip(a.model.parameters(), c.model.parameters(), strict=True))
