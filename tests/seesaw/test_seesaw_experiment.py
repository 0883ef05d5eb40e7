"""The reproduction's schedules, its config validation, and one smoke run through the real CLI."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iclr26.common.config import ConfigError
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
    lm = m["lm"]
    # Equal tokens, fewer serial steps for the ramps, a ramped batch, and losses below the uniform ln 256.
    assert lm["seesaw"]["serial_steps"] < lm["cosine"]["serial_steps"]
    assert lm["seesaw"]["max_batch_size"] > lm["cosine"]["max_batch_size"]
    assert all(v < math.log(256) for arm in ("cosine", "seesaw", "naive") for v in lm[arm]["final_val_loss"])
    assert m["lm_step_reduction"] == pytest.approx(1 - lm["seesaw"]["serial_steps"] / lm["cosine"]["serial_steps"])
    # The verdict is computed from the evidence against the stated tolerances.
    ev = record["evidence"]
    lm_held = abs(ev["lm_loss_gap"]) <= ev["loss_tolerance"] and ev["step_reduction"] >= ev["min_step_reduction"]
    g, tol = ev["theory_gaps"], ev["gap_tolerance"]
    assert set(g) == {"sgd_ramp", "sgd_mixed", "nsgd_seesaw", "nsgd_naive", "adam_seesaw", "adam_naive"}
    theory_held = all(g[k] <= tol for k in ("sgd_ramp", "sgd_mixed", "nsgd_seesaw", "adam_seesaw")) and all(
        g[k] > tol for k in ("nsgd_naive", "adam_naive")
    )
    assert m["theory_held"] == theory_held and m["lm_held"] == lm_held
    assert record["claim_held"] == (lm_held and theory_held)
    # The gaps are the phase-end risks' largest relative distance to LR decay, recomputed from the record.
    th = m["theory"]
    for family, arm, key in (
        ("sgd", "naive", "sgd_ramp"),
        ("nsgd", "seesaw", "nsgd_seesaw"),
        ("adam", "naive", "adam_naive"),
    ):
        a, b = np.array(th[family][arm]["phase_end_risk"]), np.array(th[family]["decay"]["phase_end_risk"])
        assert g[key] == pytest.approx(float(np.max(np.abs(a - b) / b)), rel=1e-12)
