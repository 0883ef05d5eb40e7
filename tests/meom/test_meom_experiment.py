"""The MEOM reproduction: config validation, data, arm definitions, determinism, verdict logic, CLI smoke run."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from iclr26.common.config import ConfigError
from iclr26.common.experiment import RunContext
from iclr26.meom.data import DigitsSplit, corrupt_images, load_corrupted_digits
from iclr26.meom.experiment import (
    ArmResult,
    MEOMConfig,
    _outcome,
    arm_loss,
    make_student,
    train_student,
    train_teacher,
)


@pytest.mark.parametrize(
    ("changes", "name"),
    [
        ({"timesteps": 1}, "timesteps"),
        ({"arms": ("ce", "twd")}, "arms"),
        ({"arms": ("twd", "meom", "twd")}, "arms"),
        ({"lam": 1.5}, "lam"),
        ({"keep_prob": 0.0}, "keep_prob"),
        ({"n_test": 5}, "n_test"),
        ({"student_widths": (8, 0, 8)}, "student_widths"),
        ({"tau": -1.0}, "tau"),
        ({"decay": 0.0}, "decay"),
    ],
)
def test_config_rejects_bad_values_naming_the_field(changes, name):
    with pytest.raises(ConfigError, match=f"'{name}'"):
        MEOMConfig(**changes)


def test_cli_rejects_bad_value(cli):
    proc = cli("run", "meom", "--scale", "smoke", "--set", "lam=2", "--quiet")
    assert proc.returncode != 0
    assert "lam" in proc.stderr


def test_arm_definitions_follow_the_ablation():
    cfg = MEOMConfig()
    assert arm_loss("ce", cfg) == (arm_loss("ce", cfg).__class__(lam=0.0, w_tmpd=0.0, w_tpd=0.0))
    twd, tmpd, tpd, meom = (arm_loss(a, cfg) for a in ("twd", "twd+tmpd", "twd+tpd", "meom"))
    # TWD is TMPD with lambda = 0 (the constant teacher output at every timestep)
    assert (twd.lam, twd.w_tmpd, twd.w_tpd) == (0.0, 0.5, 0.0)
    assert (tmpd.lam, tmpd.w_tmpd, tmpd.w_tpd) == (0.5, 0.5, 0.0)
    assert (tpd.lam, tpd.w_tmpd, tpd.w_tpd) == (0.0, 0.5, 0.3)
    assert (meom.lam, meom.w_tmpd, meom.w_tpd) == (0.5, 0.5, 0.3)


def test_corrupt_images_blanks_one_square():
    images = np.ones((20, 8, 8))
    out = corrupt_images(images, occlusion=3, noise_std=0.0, rng=np.random.default_rng(0))
    assert out.dtype == np.float32
    assert ((out == 0).sum(axis=(1, 2)) == 9).all()  # exactly a 3x3 square per image
    noisy = corrupt_images(images, occlusion=0, noise_std=0.1, rng=np.random.default_rng(0))
    assert abs(float(noisy.std()) - 0.1) < 0.01
    with pytest.raises(ValueError, match="occlusion"):
        corrupt_images(images, occlusion=9, noise_std=0.0, rng=np.random.default_rng(0))


def test_split_is_fixed_disjoint_and_stratified():
    a = load_corrupted_digits(n_test=797, occlusion=3, noise_std=0.1, data_seed=0)
    b = load_corrupted_digits(n_test=797, occlusion=3, noise_std=0.1, data_seed=0)
    assert torch.equal(a.x_test, b.x_test) and torch.equal(a.y_train, b.y_train)
    assert len(a.y_test) + len(a.y_train) == 1797
    assert abs(len(a.y_test) - 797) <= 5  # per-class rounding
    assert a.x_train.shape[1:] == (1, 8, 8)
    assert set(a.y_test.tolist()) == set(range(10)) == set(a.y_train.tolist())
    train_rows = {tuple(r) for r in a.x_train.flatten(1).tolist()}
    assert not any(tuple(r) in train_rows for r in a.x_test.flatten(1).tolist())


def _tiny(cfg_changes: dict) -> tuple[MEOMConfig, DigitsSplit]:
    cfg = MEOMConfig(
        timesteps=3, teacher_widths=(4, 8, 8), student_widths=(4, 8, 8), teacher_epochs=1, student_epochs=1,
        batch_size=32, **cfg_changes,
    )  # fmt: skip
    full = load_corrupted_digits(n_test=1697, occlusion=3, noise_std=0.1, data_seed=0)
    data = DigitsSplit(full.x_train, full.y_train, full.x_test[:64], full.y_test[:64])
    return cfg, data


class _NoBar:
    def update(self, n: int) -> None:
        pass


@pytest.mark.parametrize("mask_mode", ["fixed", "per_step"])
def test_training_is_deterministic_and_learns_something(mask_mode):
    cfg, data = _tiny({"mask_mode": mask_mode})
    teacher = train_teacher(cfg, data, seed=3)
    torch.manual_seed(0)
    init = {k: v.clone() for k, v in make_student(cfg, 10).state_dict().items()}
    r1 = train_student(cfg, "meom", data, teacher, init, seed=3, progress=_NoBar())
    r2 = train_student(cfg, "meom", data, teacher, init, seed=3, progress=_NoBar())
    np.testing.assert_array_equal(r1.truncated_acc, r2.truncated_acc)
    assert r1.final_loss == r2.final_loss and np.isfinite(r1.final_loss)
    assert r1.truncated_acc.shape == (3,)
    r_twd = train_student(cfg, "twd", data, teacher, init, seed=3, progress=_NoBar())
    assert r_twd.final_loss != r1.final_loss  # the arms really train with different losses


def _fake(acc_by_t: list[float]) -> ArmResult:
    acc = np.array(acc_by_t)
    return ArmResult(truncated_acc=acc, per_step_acc=acc, var_logits=0.1, var_acc=1.0, final_loss=0.5)


def test_verdict_requires_a_gain_at_every_timestep(tmp_path):
    cfg = MEOMConfig(timesteps=3, n_seeds=2, arms=("twd", "meom"))
    ctx = RunContext(out_dir=tmp_path, seed=0, quiet=True)
    twd = [_fake([0.80, 0.85, 0.86]), _fake([0.81, 0.84, 0.87])]
    better = [_fake([0.81, 0.86, 0.87]), _fake([0.82, 0.85, 0.88])]  # +1 pp everywhere
    out = _outcome(cfg, ctx, {"twd": twd, "meom": better}, [0.9, 0.9])
    assert out.claim_held is True
    np.testing.assert_allclose(out.evidence["meom_minus_twd_mean_pp_by_t"], [1.0, 1.0, 1.0], atol=1e-9)
    worse_at_t2 = [_fake([0.81, 0.84, 0.87]), _fake([0.82, 0.83, 0.88])]  # -1 pp at t = 2
    out = _outcome(cfg, ctx, {"twd": twd, "meom": worse_at_t2}, [0.9, 0.9])
    assert out.claim_held is False
    strict = dataclasses.replace(cfg, claim_tolerance=1.5)  # +1 pp does not clear a 1.5 pp bar
    assert _outcome(strict, ctx, {"twd": twd, "meom": better}, [0.9, 0.9]).claim_held is False


def test_smoke_run_through_cli(smoke):
    record = smoke("meom")
    metrics = record["metrics"]
    assert set(metrics["arms"]) == {"twd", "meom"}
    t = record["config"]["timesteps"]
    assert len(record["evidence"]["meom_minus_twd_mean_pp_by_t"]) == t
    assert len(metrics["arms"]["meom"]["truncated_acc_mean"]) == t
    gains = np.array(record["evidence"]["meom_minus_twd_mean_pp_by_t"])
    assert record["claim_held"] == bool(np.all(gains > record["evidence"]["tolerance_pp"]))
    assert set(record["plots"]) == {"accuracy_vs_timestep.png", "meom_minus_twd.png"}
