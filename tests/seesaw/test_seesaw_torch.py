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
        opt.step()
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
        opt.step()
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


def test_seesaw_lr_is_a_chainable_torch_lr_scheduler() -> None:
    s = schedule()
    w = torch.nn.Parameter(torch.zeros(2))
    opt = torch.optim.SGD([w], lr=0.5)
    seesaw = SeesawLR(opt, s)
    decay = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)
    assert isinstance(seesaw, torch.optim.lr_scheduler.LRScheduler)
    chain = torch.optim.lr_scheduler.ChainedScheduler([seesaw, decay])
    plan = s.plan()
    # Chained, the factors multiply: lr_t = 0.5 · m(n_t) · 0.9^t (ExponentialLR's initial step applies no factor).
    for t in range(12):
        assert opt.param_groups[0]["lr"] == pytest.approx(0.5 * plan.lr[t] / s.peak_lr * 0.9**t, rel=1e-12)
        opt.step()
        chain.step()


def _train_steps(model, opt, sched, data, n):
    for _ in range(n):
        b = sched.batch_size
        x, y = data[0][:b], data[1][:b]
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        opt.zero_grad()
        sched.step(b)


def _fresh(s):
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.1)
    return model, opt, SeesawLR(opt, s)


def test_state_dict_round_trip_mid_run_equals_an_uninterrupted_run() -> None:
    import io

    s = schedule(peak_lr=0.05)
    g = torch.Generator().manual_seed(1)
    data = (torch.randn(16, 3, generator=g), torch.randn(16, 1, generator=g))
    model, opt, sched = _fresh(s)
    _train_steps(model, opt, sched, data, 60)
    # Interrupted after 25 steps (inside the ramp): save, rebuild everything, load, continue.
    m1, o1, s1 = _fresh(s)
    _train_steps(m1, o1, s1, data, 25)
    buffer = io.BytesIO()
    torch.save({"model": m1.state_dict(), "opt": o1.state_dict(), "sched": s1.state_dict()}, buffer)
    buffer.seek(0)
    state = torch.load(buffer, weights_only=False)
    m2, o2, s2 = _fresh(s)
    m2.load_state_dict(state["model"])
    o2.load_state_dict(state["opt"])
    s2.load_state_dict(state["sched"])
    assert (s2.tokens_seen, s2.step_count, s2.batch_size) == (s1.tokens_seen, 25, s1.batch_size)
    _train_steps(m2, o2, s2, data, 35)
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), m2.parameters(), strict=True))
    assert o2.param_groups[0]["lr"] == opt.param_groups[0]["lr"] and s2.get_last_lr() == sched.get_last_lr()
    assert o2.param_groups[0]["weight_decay"] == opt.param_groups[0]["weight_decay"]
    assert s2.tokens_seen == sched.tokens_seen and s2.step_count == sched.step_count == 60
    # The old {"step_count", "tokens_seen"} form still loads (LRs and decays set from the counters).
    _, o3, s3 = _fresh(s)
    s3.load_state_dict({"step_count": 25, "tokens_seen": s1.tokens_seen})
    assert o3.param_groups[0]["lr"] == pytest.approx(o1.param_groups[0]["lr"], rel=1e-12)
    assert o3.param_groups[0]["weight_decay"] == pytest.approx(o1.param_groups[0]["weight_decay"], rel=1e-12)


@pytest.mark.parametrize(
    ("kw", "rho"),
    [
        ({}, lambda k: 2 ** (min(k, 2) / 2)),  # Seesaw: a = √2, β = 2: ρ = (√2·2/2)^k = √2^k, capped at K = 2
        ({"rule": "sgd"}, lambda k: 1.0),  # naive ramp: a = 1, β = 2: ρ = 1
        ({"batch_growth": 4.0, "max_batch_size": 64}, lambda k: 2.0 ** min(k, 2)),  # pure ramp: a = 1, β = 4: 2^k
        ({"weight_decay_correction": "none"}, lambda k: 1.0),
    ],
)
def test_weight_decay_correction_keeps_the_base_decay_per_token(kw, rho) -> None:
    s = schedule(base=CosineDecay(0.05), **kw)  # 4 halvings: two ramped cuts, then two plain decays
    lam = 0.1
    w = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.AdamW([w], lr=0.5, weight_decay=lam)
    sched = SeesawLR(opt, s)
    seen_k = set()
    while not sched.finished:
        n = sched.tokens_seen
        k = int(s.cuts(n)) if n >= s.warmup_tokens else 0
        seen_k.add(k)
        assert s.weight_decay_multiplier(n) == pytest.approx(rho(k), rel=1e-12)
        assert opt.param_groups[0]["weight_decay"] == pytest.approx(lam * rho(k), rel=1e-12)
        if n >= s.warmup_tokens and kw.get("weight_decay_correction") != "none":
            # η ρ λ / B equals the base staircase's η₀ α^{-k} λ / B₀ (decay per sample).
            base = s.peak_lr * 2.0**-k * lam / s.base_batch_size
            assert opt.param_groups[0]["lr"] * opt.param_groups[0]["weight_decay"] / s.batch_size(n) == pytest.approx(
                base, rel=1e-12
            )
        opt.step()
        sched.step()
    assert seen_k == {0, 1, 2, 3, 4}


def test_weight_decay_correction_is_validated() -> None:
    with pytest.raises(ValueError, match="weight_decay_correction must be one of"):
        schedule(weight_decay_correction="per_step")
