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
from iclr26.seesaw.experiment import SeesawConfig, lm_schedules


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
        (dict(adam_beta2=1.0), "adam_beta2"),
        (dict(total_tokens=1000), "total_tokens"),
        (dict(peak_lrs=()), "peak_lrs"),
        (dict(theory_spectrum_exponent=float("nan")), "theory_spectrum_exponent"),
        (dict(loss_tolerance=float("nan")), "loss_tolerance"),
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
    assert set(record["plots"]) == {"linreg_risk.png", "lm_loss.png"}
    assert record["units"] == ["theory-linreg", "lm-cosine-seed0", "lm-seesaw-seed0", "lm-naive-seed0"]
    # Wall-clock only in `timings`; the smoke summary prints no figures rounded to zero.
    assert set(record["timings"]["lm_train_wall_time_s"]) == {"cosine", "seesaw", "naive"}
    assert not any("wall" in key for arm in m["lm"].values() for key in arm)
    assert record["measurement"].startswith("tiny LM (3.31K params, 4.1K tokens, 1 seed): ")
    assert "0.00M" not in record["measurement"] and record["notes"].startswith("one LM seed: no seed spread")
    lm = m["lm"]
    # Equal tokens, fewer serial steps for the ramps, a ramped batch, and losses below the uniform ln 256.
    assert lm["seesaw"]["serial_steps"] < lm["cosine"]["serial_steps"]
    assert lm["seesaw"]["max_batch_size"] > lm["cosine"]["max_batch_size"]
    assert all(v < math.log(256) for arm in ("cosine", "seesaw", "naive") for v in lm[arm]["final_val_loss"])
    assert m["lm_step_reduction"] == pytest.approx(1 - lm["seesaw"]["serial_steps"] / lm["cosine"]["serial_steps"])
    # The verdict is computed from the evidence against the stated thresholds, each with its source.
    ev = record["evidence"]
    th = {name: t["value"] for name, t in ev["thresholds"].items()}
    assert th == {"loss_tolerance": 0.02, "min_step_reduction": 0.2, "gap_tolerance": 0.1}
    assert all("source" in t["source"] for t in ev["thresholds"].values())
    lm_held = abs(ev["lm_loss_gap"]) <= th["loss_tolerance"] and ev["step_reduction"] >= th["min_step_reduction"]
    g, tol = ev["theory_gaps"], th["gap_tolerance"]
    assert set(g) == {"sgd_ramp", "sgd_mixed", "nsgd_seesaw", "nsgd_naive", "adam_seesaw", "adam_naive"}
    theory_held = all(g[k] <= tol for k in ("sgd_ramp", "sgd_mixed", "nsgd_seesaw", "adam_seesaw")) and all(
        g[k] > tol for k in ("nsgd_naive", "adam_naive")
    )
    assert m["theory_held"] == theory_held and m["lm_held"] == lm_held
    assert record["claim_held"] == (lm_held and theory_held)
    # The gaps are the phase-end risks' largest relative distance to LR decay, recomputed from the record.
    theory = m["theory"]
    for family, arm, key in (
        ("sgd", "naive", "sgd_ramp"),
        ("nsgd", "seesaw", "nsgd_seesaw"),
        ("adam", "naive", "adam_naive"),
    ):
        a = np.array(theory[family][arm]["phase_end_risk"])
        b = np.array(theory[family]["decay"]["phase_end_risk"])
        assert g[key] == pytest.approx(float(np.max(np.abs(a - b) / b)), rel=1e-12)


def test_units_of_an_lr_sweep_run_are_named_by_lr(tmp_path) -> None:
    # Two peak LRs: the sweep trains cosine on seed 0 at each (one unit per LR), then the arms at the best LR, where
    # cosine's seed 0 is the sweep's run (no unit of its own). The training itself is replaced by a stub.
    config = dataclasses.replace(SeesawConfig.preset("smoke"), peak_lrs=(3e-3, 6e-3))
    ctx = RunContext(out_dir=tmp_path, seed=0, quiet=True)
    calls = []

    def fake_train(config, data, model_cfg, schedule, seed_index, ctx, desc):
        calls.append((type(schedule).__name__, schedule.peak_lr, seed_index))
        loss = {3e-3: 2.0, 6e-3: 1.0}[schedule.peak_lr]
        return TrainHistory(step=[1], batch_size=[4], eval_tokens=[0, 1], val_loss=[5.0, loss])

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(experiment, "_train", fake_train)
        lm = experiment.run_lm(config, ctx)
    assert ctx.units == ["lm-sweep-cosine-lr=0.003", "lm-sweep-cosine-lr=0.006", "lm-seesaw-seed0", "lm-naive-seed0"]
    assert lm["best_lr"] == 6e-3 and calls[2:] == [("Seesaw", 6e-3, 0), ("Seesaw", 6e-3, 0)]


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
