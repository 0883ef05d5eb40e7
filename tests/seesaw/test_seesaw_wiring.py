"""The reproduction's wiring: Seesaw differs from cosine in the ramp alone and from the naive ramp in the LR rule
alone; models and batches on the configured device; user data in the layout a user has; bounded config fields checked
before any work; component errors that name the argument."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
import torch

from iclr26 import cli
from iclr26.common.config import ConfigError, apply_overrides
from iclr26.common.corpus import load_corpus
from iclr26.common.distributed import World
from iclr26.common.experiment import RunContext
from iclr26.common.lmtrain import TokenData, TrainHistory
from iclr26.seesaw import CosineDecay, Seesaw, SeesawLR
from iclr26.seesaw import experiment as seesaw_experiment
from iclr26.seesaw.config import SeesawConfig
from iclr26.seesaw.experiment import lm_schedules, train_run


def test_seesaw_changes_the_lr_and_batch_at_cosines_halvings_and_the_naive_ramp_only_the_batch():
    c = SeesawConfig()
    arms = lm_schedules(c, 6e-3)
    cosine, seesaw, naive = arms["cosine"], arms["seesaw"], arms["naive"]
    plan = seesaw.plan()
    assert np.array_equal(plan.batch_size, naive.plan().batch_size)  # the same ramp; only the LR rule differs
    assert seesaw.rule == "adam" and naive.rule == "sgd"
    for field in ("peak_lr", "base_batch_size", "total_tokens", "warmup_tokens", "max_batch_size", "base"):
        assert getattr(seesaw, field) == getattr(naive, field), field
    assert seesaw.warmup_tokens == cosine.warmup_tokens and seesaw.base == CosineDecay(cosine.final_lr_frac)
    warmup = int(c.warmup_frac * c.total_tokens)
    for n, lr, b in zip(plan.tokens_before, plan.lr, plan.batch_size, strict=True):
        if n < warmup:  # warmup unchanged: cosine's LR at cosine's batch
            assert lr == pytest.approx(cosine.lr_at(int(n)), rel=1e-12) and b == c.base_batch_size
            continue
        # Halvings of the base so far, all ramped (cap 8 B0); the planned batch (the last one is cut to the budget).
        k = round(math.log2(seesaw.batch_size(int(n)) / c.base_batch_size))
        # Seesaw: LR ÷ √2 and batch × 2 per halving of cosine; the naive ramp keeps the peak LR.
        assert lr == pytest.approx(6e-3 * 2 ** (-k / 2), rel=1e-12)
        assert naive.lr(int(n)) == pytest.approx(6e-3, rel=1e-12)
        f = CosineDecay(c.final_lr_frac)((n - warmup) / (c.total_tokens - warmup))
        assert 2.0 ** -(k + 1) < f <= 2.0**-k + 1e-12  # the batch doubled exactly where cosine's LR halved


def test_models_and_batches_land_on_the_configured_device(monkeypatch, tmp_path):
    seen = {}

    def fake_train_lm(model, data, schedule, config, *, progress=None, world=None, **_):
        seen["params"] = {p.device for p in model.parameters()}
        seen["world"], seen["autocast"] = world, config.autocast
        return TrainHistory(step=[0], tokens=[config.total_tokens], eval_tokens=[0, 1], val_loss=[5.0, 1.0])

    monkeypatch.setattr(seesaw_experiment, "train_lm", fake_train_lm)
    world = World(rank=0, size=1, local_rank=0)
    ctx = RunContext(out_dir=tmp_path, seed=0, quiet=True, world=world, device=torch.device("cpu"))
    rng = np.random.default_rng(0)
    data = TokenData(rng.integers(0, 256, 5000, dtype=np.int64), rng.integers(0, 256, 2000, dtype=np.int64))
    c = SeesawConfig.preset("smoke")
    train_run(c, data, lm_schedules(c, 3e-3)["seesaw"], 0, ctx, "x")
    assert seen["params"] == {ctx.device} and seen["world"] is world and seen["autocast"] is True


def test_a_folder_of_text_files_trains_every_schedule(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "corpus"
    folder.mkdir()
    for i in range(60):
        (folder / f"doc{i:02d}.md").write_text(f"# Note {i}\n\nSeesaw ramps the batch where cosine decays.\n" * 10)
    c = apply_overrides(SeesawConfig.preset("smoke"), [f"data={folder}"])
    data = TokenData.from_corpus(load_corpus(c.data))
    ctx = RunContext(out_dir=tmp_path / "run", seed=0, quiet=True)
    for arm, schedule in lm_schedules(c, 3e-3).items():
        history = train_run(c, data, schedule, 0, ctx, arm)
        assert history.tokens_seen == c.total_tokens and history.final_val_loss < history.val_loss[0], arm


def test_an_empty_data_file_names_a_fix_the_config_has(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path / "cache"))
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    out = tmp_path / "o"
    assert cli.main(["run", "seesaw", "--scale", "smoke", "--out", str(out), "--set", f"data={empty}"]) == 2
    err = capsys.readouterr().err
    assert "config field 'data'" in err and "pass a longer file" in err and "val_fraction" not in err


def test_a_huge_phase_count_is_refused_at_once():
    start = time.process_time()
    with pytest.raises(ConfigError, match=r"'theory_phases': must be <= 12"):
        apply_overrides(SeesawConfig.preset("smoke"), ["theory_phases=1e10"])
    assert time.process_time() - start < 1.0  # the bound is checked before 4**(phases - 1) is computed


@pytest.mark.parametrize(
    "field",
    ["theory_dim", "theory_samples_per_phase", "adam_seeds", "total_tokens", "d_model", "eval_tokens", "n_seeds"],
)
def test_every_size_field_has_an_upper_bound(field):
    with pytest.raises(ConfigError, match=f"'{field}'.*must be <="):
        apply_overrides(SeesawConfig.preset("smoke"), [f"{field}=1e18"])


def test_float_fields_have_upper_bounds():
    for field in ("sgd_lr", "gap_tolerance", "tolerance_sigmas", "theory_noise_var", "adam_horizon_fraction"):
        with pytest.raises(ConfigError, match=f"'{field}'"):
            apply_overrides(SeesawConfig.preset("smoke"), [f"{field}=1e300"])


def test_seesaw_lr_refuses_an_optimizer_that_is_not_one():
    schedule = Seesaw(peak_lr=1.0, base_batch_size=4, total_tokens=100, max_batch_size=8)
    with pytest.raises(TypeError, match="^SeesawLR optimizer must be a torch.optim.Optimizer, got str"):
        SeesawLR("opt", schedule)


def test_the_schedule_refuses_a_token_count_past_its_budget_and_the_scheduler_stops_at_it():
    s = Seesaw(peak_lr=1.0, base_batch_size=4, total_tokens=100, base=CosineDecay(0.25), max_batch_size=8)
    assert s.lr(100) == pytest.approx(0.25 * math.sqrt(2))  # the last token: f = 1/4, two cuts, one ramped
    for method in (s.lr, s.batch_size, s.multiplier, s.weight_decay_multiplier, s.cuts):
        with pytest.raises(ValueError, match="tokens=101 is past total_tokens=100"):
            method(101)
    with pytest.raises(ValueError, match="tokens_seen=150 is past total_tokens=100"):
        s(0, 150)
    # SeesawLR's last step may end a partial sample past the budget (tokens_per_sample 3: 99 -> 102); its LR is then
    # the schedule's at the budget.
    t = Seesaw(peak_lr=1.0, base_batch_size=1, total_tokens=100, base=CosineDecay(0.25), tokens_per_sample=3,
               max_batch_size=2)  # fmt: skip
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    scheduler = SeesawLR(opt, t)
    while not scheduler.finished:
        opt.step()
        scheduler.step()
    assert scheduler.tokens_seen > 100
    assert opt.param_groups[0]["lr"] == pytest.approx(t.lr(100))
