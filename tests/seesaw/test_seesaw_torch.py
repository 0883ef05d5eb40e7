"""Seesaw driving PyTorch: the LR scheduler, the DataLoader batch sampler and the common LM trainer agree."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, RandomSampler, SequentialSampler, TensorDataset

from iclr26.common.lmtrain import TokenData, TrainConfig, train_lm
from iclr26.common.tinylm import TinyLM, TinyLMConfig
from iclr26.seesaw import CosineDecay, Seesaw, SeesawBatchSampler, SeesawLR


def schedule(**kw) -> Seesaw:
    args = dict(
        peak_lr=0.5, base_batch_size=4, total_tokens=600, base=CosineDecay(0.0), warmup_tokens=40, max_batch_size=16
    )
    args.update(kw)
    return Seesaw(**args)


def test_seesaw_lr_sets_every_group_and_follows_the_plan() -> None:
    s = schedule()
    w1, w2 = torch.nn.Parameter(torch.zeros(2)), torch.nn.Parameter(torch.zeros(2))
    opt = torch.optim.SGD([{"params": [w1], "lr": 0.5}, {"params": [w2], "lr": 0.05}], lr=0.5)
    driver = SeesawLR(opt, s)
    plan = s.plan()
    for i in range(len(plan.lr)):
        # Group LRs = initial LR × lr(n)/η₀, so group ratios are kept.
        assert driver.get_last_lr() == pytest.approx([plan.lr[i], plan.lr[i] / 10], rel=1e-12)
        assert driver.batch_size == plan.batch_size[i]
        opt.step()
        driver.step()
    assert driver.finished and driver.step_count == len(plan.lr) == s.serial_steps()
    with pytest.raises(RuntimeError, match="budget of 600 tokens is spent"):
        driver.step()


def test_seesaw_lr_state_dict_resumes() -> None:
    s = schedule()
    opt = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=0.5)
    first = SeesawLR(opt, s)
    for _ in range(30):
        first.step()
    state = first.state_dict()
    opt2 = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=0.5)
    second = SeesawLR(opt2, s)
    second.load_state_dict(state)
    assert second.get_last_lr() == first.get_last_lr() and second.batch_size == first.batch_size
    for bad in (0, -4, float("nan"), 2.0):
        with pytest.raises(ValueError, match=r"SeesawLR.step batch_size must be a positive int, got"):
            second.step(bad)
    for key, bad in (("tokens_seen", -1), ("step_count", float("nan"))):
        with pytest.raises(ValueError, match=f"SeesawLR.load_state_dict {key} must be an int >= 0"):
            second.load_state_dict(state | {key: bad})
    # A batch above the planned one would break the cap and the budget: an error, not a silent overshoot.
    with pytest.raises(ValueError, match=f"batch_size={second.batch_size + 1} exceeds the planned batch"):
        second.step(second.batch_size + 1)
    tokens = second.tokens_seen
    second.step(1)  # a short batch (e.g. a loader's last) is accepted and counted
    assert second.tokens_seen == tokens + 1


def test_batch_sampler_sizes_match_the_plan_and_the_driver() -> None:
    s = schedule()
    data = TensorDataset(torch.arange(50))
    sampler = SeesawBatchSampler(RandomSampler(data, generator=torch.Generator().manual_seed(0)), s)
    loader = DataLoader(data, batch_sampler=sampler)
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.5)
    driver = SeesawLR(opt, s)
    sizes, stream = [], []
    for (batch,) in loader:
        assert len(batch) == driver.batch_size
        sizes.append(len(batch))
        stream += batch.tolist()
        driver.step(len(batch))
    assert sizes == s.plan().batch_size.tolist() and len(sizes) == len(sampler)
    assert driver.finished
    # The index stream is a sequence of whole epochs (permutations of the 50 samples), cut at the budget.
    for start in range(0, len(stream) - 50 + 1, 50):
        assert sorted(stream[start : start + 50]) == list(range(50))


def test_batch_sampler_crosses_epochs_in_order() -> None:
    s = Seesaw(peak_lr=1.0, base_batch_size=3, total_tokens=20, base=CosineDecay(0.5), max_batch_size=3)
    batches = list(SeesawBatchSampler(SequentialSampler(range(7)), s))
    # 20 samples in batches of 3 (last cut to 2), indices cycling over the 7-sample epoch.
    assert [i for b in batches for i in b] == [i % 7 for i in range(20)]
    assert [len(b) for b in batches] == [3] * 6 + [2]


def test_batch_sampler_rejects_a_batch_larger_than_the_data() -> None:
    with pytest.raises(ValueError, match="reaches a batch of 16 samples but the sampler holds 10"):
        SeesawBatchSampler(SequentialSampler(range(10)), schedule())


def test_drives_the_common_trainer() -> None:
    # The trainer asks the schedule at (step, tokens_seen); batch sizes, LRs and step count follow the plan.
    rng = np.random.default_rng(0)
    data = TokenData(rng.integers(0, 256, 4000).astype(np.uint8), rng.integers(0, 256, 500).astype(np.uint8))
    T = 8
    s = Seesaw(
        peak_lr=1e-3,
        base_batch_size=2,
        total_tokens=T * 60,
        base=CosineDecay(0.0),
        warmup_tokens=T * 4,
        max_batch_size=8,
        tokens_per_sample=T,
    )
    torch.manual_seed(0)
    model = TinyLM(TinyLMConfig(context_len=T, d_model=16, n_layers=1, n_heads=2, d_ff=32))
    history = train_lm(
        model, data, s, TrainConfig(total_tokens=T * 60, context_len=T, micro_batch_size=4, eval_tokens=64)
    )
    plan = s.plan()
    assert history.batch_size == plan.batch_size.tolist()
    assert history.lr == pytest.approx(plan.lr.tolist(), rel=1e-12)
    assert history.tokens_seen == T * 60 and max(history.batch_size) == 8
