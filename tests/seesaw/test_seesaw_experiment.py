"""The reproduction's schedules, its config validation, and one smoke run through the real CLI."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from iclr26 import cli
from iclr26.common.config import ConfigError, apply_overrides
from iclr26.common.experiment import RunContext
from iclr26.common.lmtrain import TrainHistory
from iclr26.seesaw import experiment
from iclr26.seesaw.config import SeesawConfig
from iclr26.seesaw.experiment import lm_schedules
from iclr26.seesaw.verdict import Measurements, best_lr, lm_comparison, pooled_seed_std, theory_holds


def test_cpu_schedules_save_the_closed_form_share_of_steps() -> None:
    # Cosine to r = 0.1 after 5% warmup has 3 halvings, at f = 1/2, 1/4, 1/8 of the decay:
    # f(p) = r + (1 - r)(1 + cos πp)/2 = 2^-k  ⇔  p_k = arccos(2 (2^-k - r)/(1 - r) - 1)/π.
    # Seesaw's batch is B0·2^k on [p_k, p_{k+1}), so its steps are a share
    # w + (1 - w) Σ_k (p_{k+1} - p_k) 2^-k of cosine's (w = warmup share).
    c = SeesawConfig()
    r, w = c.final_lr_frac, c.warmup_frac
    p = [0.0] + [math.acos(2 * (2.0**-k - r) / (1 - r) - 1) / math.pi for k in (1, 2, 3)] + [1.0]
    share = w + (1 - w) * sum((p[k + 1] - p[k]) * 2.0**-k for k in range(4))
    assert share == pytest.approx(0.7031, abs=1e-4)
    schedules = lm_schedules(c, 3e-3)
    cosine_steps = math.ceil(c.total_tokens / (c.base_batch_size * c.context_len))
    seesaw_steps = schedules["seesaw"].serial_steps()
    assert seesaw_steps / cosine_steps == pytest.approx(share, abs=0.01)
    # The naive ramp has the same batches (so the same steps) but never decays the LR after warmup.
    assert schedules["naive"].serial_steps() == seesaw_steps
    assert schedules["naive"].plan().lr[-1] == pytest.approx(3e-3)
    assert max(schedules["seesaw"].plan().batch_size) == c.max_batch_size == 8 * c.base_batch_size


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        (dict(max_batch_size=100), "max_batch_size"),
        (dict(final_lr_frac=0.0), "final_lr_frac"),
        (dict(theory_samples_per_phase=1000), "theory_samples_per_phase"),
        (dict(n_heads=3), "n_heads"),
        (dict(adam_beta2s=(0.9, 1.0)), "adam_beta2s"),
        (dict(adam_horizon_fraction=0.0), "adam_horizon_fraction"),
        (dict(n_seeds=1), "n_seeds"),
        (dict(total_tokens=1000), "total_tokens"),
        (dict(peak_lrs=()), "peak_lrs"),
        (dict(theory_spectrum_exponent=float("nan")), "theory_spectrum_exponent"),
        (dict(tolerance_sigmas=float("nan")), "tolerance_sigmas"),
        (dict(warmup_frac=0.5), "warmup_frac"),
    ],
)
def test_config_rejects_bad_values(kwargs, name) -> None:
    with pytest.raises(ConfigError, match=f"config field '{name}'"):
        SeesawConfig(**kwargs)


def test_presets_are_valid() -> None:
    for scale in ("smoke", "cpu", "gpu"):
        SeesawConfig.preset(scale)


def test_cli_rejects_a_cap_off_the_ramp(cli) -> None:
    proc = cli("run", "seesaw", "--scale", "smoke", "--set", "max_batch_size=20", "--quiet")
    assert proc.returncode == 2 and "max_batch_size" in proc.stderr


def test_smoke_run_writes_a_record(smoke) -> None:
    record = smoke("seesaw")
    m = record["metrics"]
    assert set(record["plots"]) == {"linreg_risk.png", "adam_beta2.png", "lm_loss.png"}
    # Every schedule at every LR on every seed: the same search for each arm.
    assert record["units"] == ["theory-linreg"] + [
        f"lm-{arm}-lr={lr}-seed{i}"
        for i in range(2)
        for lr in ("0.003", "0.006")
        for arm in ("cosine", "seesaw", "naive")
    ]
    # Wall-clock only in `timings`; the smoke summary prints no figures rounded to zero.
    assert set(record["timings"]["lm_train_wall_time_s"]) == {"cosine", "seesaw", "naive"}
    assert not any("wall" in key for arm in m["lm"].values() for key in arm)
    assert record["measurement"].startswith("tiny LM (3.31K params, 4.1K tokens, 2 seeds, each schedule at its best")
    assert "0.00M" not in record["measurement"]
    lm = m["lm"]
    # Equal tokens, fewer serial steps for the ramps, a ramped batch, and losses below the uniform ln 256.
    assert lm["seesaw"]["serial_steps"] < lm["cosine"]["serial_steps"]
    assert lm["seesaw"]["max_batch_size"] > lm["cosine"]["max_batch_size"]
    assert all(v < math.log(256) for arm in ("cosine", "seesaw", "naive") for v in lm[arm]["final_val_loss"])
    # The step saving is the plan's (reported), equal to the measured one, and not a threshold of the verdict.
    assert m["lm_step_reduction"] == pytest.approx(m["lm_planned_step_reduction"], abs=1e-9)
    # Each arm is taken at its own best LR, by seed mean.
    for arm in ("cosine", "seesaw", "naive"):
        by_lr = m["lm_final_val_loss_by_lr"][arm]
        best = min(by_lr, key=lambda lr, by_lr=by_lr: np.mean(by_lr[lr]))
        assert m["lm_best_lr"][arm] == float(best) and lm[arm]["final_val_loss"] == by_lr[best]
    # The verdict is recomputed from the record against the stated thresholds, each with its source.
    ev = record["evidence"]
    th = {name: t["value"] for name, t in ev["thresholds"].items()}
    assert th == {"tolerance_sigmas": 2.0, "gap_tolerance": 0.1, "adam_horizon_fraction": 1.0}
    assert all(len(t["source"]) > 40 for t in ev["thresholds"].values())  # each with the reason for its value
    cosine = m["lm_final_val_loss_by_lr"]["cosine"]
    spread = pooled_seed_std({float(lr): v for lr, v in cosine.items()})
    assert ev["lm_loss_tolerance"] == pytest.approx(2.0 * spread, rel=1e-12)
    separated = ev["lm_naive_gap"] > ev["lm_loss_tolerance"]
    assert ev["gates"]["naive_ramp_separated"]["passed"] == separated
    within = abs(ev["lm_loss_gap"]) <= ev["lm_loss_tolerance"]
    g = ev["theory_gaps"]
    assert set(g) == {"sgd_ramp", "sgd_mixed", "nsgd_seesaw", "nsgd_naive"}
    # Smoke: the shortest Seesaw phase has 128 / 16 = 8 steps, so no β2 (horizons 10 and 1000) is in the regime.
    assert m["theory_adam_in_claim_regime"] == {"0.9": False, "0.999": False} and ev["adam_gaps_in_claim_regime"] == {}
    assert m["theory_held"] is False and m["lm_held"] == (within and separated)
    failed = [name for name, gate in ev["gates"].items() if not gate["passed"]]
    assert record["claim_held"] == ("inconclusive" if failed else "not held")
    assert record["failed_gates"] == failed
    # The gaps are the phase-end risks' largest relative distance to LR decay, recomputed from the record.
    theory = m["theory"]
    for family, arm, value in (
        ("sgd", "naive", g["sgd_ramp"]),
        ("nsgd", "seesaw", g["nsgd_seesaw"]),
        ("adam_b2=0.999", "naive", m["theory_adam_gaps_by_beta2"]["0.999"]["naive"]),
    ):
        a = np.array(theory[family][arm]["phase_end_risk"])
        b = np.array(theory[family]["decay"]["phase_end_risk"])
        assert value == pytest.approx(float(np.max(np.abs(a - b) / b)), rel=1e-12)


def test_every_arm_gets_the_same_lr_search_on_every_seed(tmp_path) -> None:
    # The training is replaced by a stub whose loss depends on the arm and the LR: each arm's best LR is its own.
    config = dataclasses.replace(SeesawConfig.preset("smoke"), peak_lrs=(3e-3, 6e-3), n_seeds=2)
    ctx = RunContext(out_dir=tmp_path, seed=0, quiet=True)
    calls = []
    loss = {("cosine", 3e-3): 2.0, ("cosine", 6e-3): 1.0, ("naive", 3e-3): 1.5, ("naive", 6e-3): 1.7}

    def fake_train(config, data, schedule, seed_index, ctx, desc):
        arm = (
            "cosine"
            if type(schedule).__name__ == "CosineSchedule"
            else ("seesaw" if schedule.rule == "adam" else "naive")
        )
        calls.append((arm, schedule.peak_lr, seed_index))
        value = loss.get((arm, schedule.peak_lr), 1.2) + 0.01 * seed_index
        return TrainHistory(step=[1], batch_size=[4], eval_tokens=[0, 1], val_loss=[5.0, value])

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(experiment, "train_run", fake_train)
        runs = experiment.run_lm(config, ctx)
    expected = [(arm, lr, i) for i in range(2) for lr in (3e-3, 6e-3) for arm in ("cosine", "seesaw", "naive")]
    assert calls == expected and len(ctx.units) == 12
    finals = {arm: {lr: [h.final_val_loss for h in hs] for lr, hs in by_lr.items()} for arm, by_lr in runs.items()}
    assert {arm: best_lr(v) for arm, v in finals.items()} == {"cosine": 6e-3, "seesaw": 3e-3, "naive": 3e-3}
    assert finals["naive"][3e-3] == [1.5, 1.51]


def test_pooled_seed_std_hand_computed() -> None:
    # LR a: (1.00, 1.02, 0.98), deviations ±0.02, 0: SS 0.0008; LR b: (2.0, 2.1): SS 0.005.
    # Pooled: √((0.0008 + 0.005) / (2 + 1)).
    got = pooled_seed_std({1e-3: [1.00, 1.02, 0.98], 2e-3: [2.0, 2.1]})
    assert got == pytest.approx(math.sqrt(0.0058 / 3), rel=1e-12)
    with pytest.raises(ValueError, match="at least 2 seeds"):
        pooled_seed_std({1e-3: [1.0]})


def test_lm_comparison_measures_seesaw_inside_and_the_naive_control_above_the_tolerance() -> None:
    # Cosine's seed sd is 0.02 at both LRs, so the tolerance is 2 × 0.02 = 0.04; its best LR is 1e-3 (mean 1.00).
    cosine = {1e-3: [1.00, 1.02, 0.98], 2e-3: [1.10, 1.12, 1.08]}

    def compare(seesaw_mean: float, naive_mean: float) -> dict:
        finals = {"cosine": cosine, "seesaw": {1e-3: [seesaw_mean] * 3}, "naive": {1e-3: [naive_mean] * 3}}
        return lm_comparison(Measurements({}, {}, {}, finals), 2.0)

    v = compare(1.03, 1.05)
    assert v["tolerance"] == pytest.approx(0.04) and v["seesaw_gap"] == pytest.approx(0.03)
    assert v["seesaw_within"] and v["naive_outside"]
    assert not compare(1.03, 1.03)["naive_outside"]  # the control within the tolerance
    assert not compare(1.05, 1.10)["seesaw_within"]  # Seesaw outside
    assert compare(0.97, 1.05)["seesaw_within"]  # two-sided for Seesaw: |gap| counts
    assert not compare(1.0, 0.95)["naive_outside"]  # one-sided for the control: it must lose, not win


def test_adam_regime_is_the_beta2_horizon_against_the_shortest_phase() -> None:
    # cpu: 2048 samples per phase, Seesaw batch B0·2^4 = 64 in the last phase: 32 steps. Horizons 1/(1-β2):
    # 10, 20 (inside), 100, 1000 (outside).
    c = SeesawConfig()
    assert [experiment.adam_regime(c, b) for b in c.adam_beta2s] == [True, True, False, False]
    assert experiment.adam_regime(dataclasses.replace(c, adam_horizon_fraction=4.0), 0.99)  # 100 <= 128


def test_theory_verdict_judges_adam_only_inside_the_regime() -> None:
    good = {"sgd_ramp": 0.02, "sgd_mixed": 0.01, "nsgd_seesaw": 0.01, "nsgd_naive": 0.2}
    adam = {0.95: {"seesaw": 0.03, "naive": 0.4}, 0.99: {"seesaw": 0.21, "naive": 0.3}}

    def holds(gaps, regime):
        return theory_holds(Measurements(gaps, adam, regime, {}), 0.1)

    assert holds(good, {0.95: True, 0.99: False})
    assert not holds(good, {0.95: True, 0.99: True})
    assert not holds(good, {0.95: False, 0.99: False})  # nothing judged: no claim
    assert not holds(good | {"nsgd_naive": 0.05}, {0.95: True, 0.99: False})


def test_repeated_peak_lrs_are_rejected() -> None:
    with pytest.raises(ConfigError, match="config field 'peak_lrs': must not repeat"):
        SeesawConfig(peak_lrs=(3e-3, 3e-3))


def test_gpu_scale_without_cuda_exits_2_and_writes_nothing(capsys, tmp_path) -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    assert cli.main(["run", "seesaw", "--scale", "gpu", "--out", str(tmp_path / "out")]) == 2
    assert "config field 'device': 'cuda' requested but CUDA is not available" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_bad_user_data_is_rejected_before_any_folder(capsys, tmp_path, monkeypatch) -> None:
    # Smoke: context_len 16, so each split needs 18 bytes.
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path / "cache"))
    random_bytes = tmp_path / "random.txt"
    random_bytes.write_bytes(bytes(range(128, 256)) * 32)  # 4 KiB, not UTF-8
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    tiny = tmp_path / "tiny.txt"
    tiny.write_text("x" * 200)  # 190 training bytes, 10 validation bytes
    no_text = tmp_path / "no_text"
    no_text.mkdir()
    (no_text / "weights.bin").write_bytes(b"\0" * 64)
    locked = tmp_path / "locked.txt"
    locked.write_text("text " * 100)
    real_read = Path.read_bytes

    def read_bytes(self):  # permissions do not stop root, so the read itself fails as for an unreadable file
        if self == locked:
            raise PermissionError(13, "Permission denied", str(self))
        return real_read(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    out = tmp_path / "out"
    for key, data, message in [
        ("data", tmp_path / "missing.txt", "does not exist"),
        ("data", random_bytes, "is not UTF-8 text (undecodable byte at offset 0)"),
        ("data", empty, "the split left 0 training"),
        ("data", tiny, "leaves 10 bytes in the validation split, fewer than the 18 this config needs"),
        ("data", no_text, "holds no text files"),
        ("data", locked, "[Errno 13] Permission denied"),
        ("corpus", tiny, "leaves 10 bytes in the validation split"),  # the old key, an alias of data
    ]:
        assert cli.main(["run", "seesaw", "--scale", "smoke", "--out", str(out), "--set", f"{key}={data}"]) == 2
        err = capsys.readouterr().err
        assert "config field 'data': " in err and message in err, err
    assert not (out / "seesaw").exists()


def test_old_corpus_key_sets_data(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path / "cache"))
    text = tmp_path / "text.txt"
    text.write_text("y" * 400)  # 5% validation: 20 bytes, at least context_len + 2 = 18
    config = apply_overrides(SeesawConfig.preset("smoke"), [f"corpus={text}"])
    assert config.data == str(text) and SeesawConfig.ALIASES == {"corpus": "data"}
