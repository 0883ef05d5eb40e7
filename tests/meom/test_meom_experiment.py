"""The MEOM reproduction: config validation, data, arm definitions, determinism, the metrics, the CLI smoke run."""

from __future__ import annotations

import dataclasses
import json

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from scipy import stats

from iclr26 import cli as iclr26_cli
from iclr26.common.config import ConfigError
from iclr26.common.experiment import RunContext
from iclr26.meom import experiment
from iclr26.meom.config import MEOMConfig
from iclr26.meom.data import (
    DigitsSplit,
    corrupt_images,
    load_corrupted_digits,
    stratified_counts,
    training_subset,
)
from iclr26.meom.experiment import (
    ArmResult,
    arm_loss,
    comparisons,
    make_student,
    paired_difference,
    softening_factor,
    train_student,
    train_teacher,
)
from iclr26.runner import ELAPSED_FILE


@pytest.mark.parametrize(
    ("changes", "name"),
    [
        ({"timesteps": 1}, "timesteps"),
        ({"arms": ("ce", "twd")}, "arms"),
        ({"arms": ("ce", "twd", "twd+tmpd", "meom")}, "arms"),
        ({"data_seed": -1}, "data_seed"),
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


@pytest.mark.parametrize("setting", ["data_seed=-1", "n_student_train=700"])
def test_cli_refuses_a_bad_data_setting_before_any_work(cli, tmp_path, setting):
    # n_student_train=700 is more than the 400 training images that the smoke split (n_test 1397) leaves
    proc = cli("run", "meom", "--scale", "smoke", "--set", setting, "--out", str(tmp_path), "--quiet")
    assert proc.returncode == 2 and setting.split("=")[0] in proc.stderr
    assert "Traceback" not in proc.stderr and not any(tmp_path.iterdir())


def test_a_resumed_run_reports_the_cpu_time_of_all_legs(tmp_path, monkeypatch):
    real_unit = RunContext.unit

    def unit(self, key, compute):  # Ctrl-C while the fourth unit computes
        if len(self.units) >= 3:
            raise KeyboardInterrupt
        return real_unit(self, key, compute)

    with monkeypatch.context() as patch:
        patch.setattr(RunContext, "unit", unit)
        assert iclr26_cli.main(["run", "meom", "--scale", "smoke", "--out", str(tmp_path), "--quiet"]) == 130
    (run_dir,) = (tmp_path / "meom").iterdir()
    first_leg = json.loads((run_dir / ELAPSED_FILE).read_text())["cpu_s"]
    assert first_leg > 0
    assert iclr26_cli.main(["run", "meom", "--resume", str(run_dir), "--quiet"]) == 0
    record = json.loads((run_dir / "result.json").read_text())
    assert record["legs"] == 2 and record["cpu_time_s"] > first_leg
    assert "cpu_time_s" not in record["timings"]  # no figure of the last leg alone beside the record's total


def test_arm_definitions_follow_the_ablation():
    cfg = MEOMConfig()
    assert arm_loss("ce", cfg) == (arm_loss("ce", cfg).__class__(lam=0.0, w_tmpd=0.0, w_tpd=0.0))
    twd, tmpd, tpd, meom = (arm_loss(a, cfg) for a in ("twd", "twd+tmpd", "twd+tpd", "meom"))
    # TWD is TMPD with lambda = 0 (the constant teacher output at every timestep), at TWD's own KD weight 0.2
    assert (twd.lam, twd.w_tmpd, twd.w_tpd, twd.soften) == (0.0, 0.2, 0.0, False)
    # the same at MEOM's weight, and the softened-teacher control at MEOM's weight
    w05, soft = arm_loss("twd-w0.5", cfg), arm_loss("twd-soft", cfg)
    assert (w05.lam, w05.w_tmpd, w05.w_tpd, w05.soften) == (0.0, 0.5, 0.0, False)
    assert (soft.lam, soft.w_tmpd, soft.w_tpd, soft.soften) == (0.0, 0.5, 0.0, True)
    assert arm_loss("twd", dataclasses.replace(cfg, twd_kd_weight=0.7)).w_tmpd == 0.7
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


def test_stratified_counts_hand_computed():
    # sizes (5, 3, 2), total 5: quotas (2.5, 1.5, 1.0) -> floors (2, 1, 1) = 4; the one sample left goes to the
    # largest remainder, a tie 0.5 / 0.5 broken by class order -> (3, 1, 1)
    np.testing.assert_array_equal(stratified_counts(np.array([5, 3, 2]), 5), [3, 1, 1])
    # quotas (3.6, 0.9, 0.5): floors (3, 0, 0), remainders (0.6, 0.9, 0.5) -> the two left go to classes 1, 0
    np.testing.assert_array_equal(stratified_counts(np.array([36, 9, 5]), 5), [4, 1, 0])
    np.testing.assert_array_equal(stratified_counts(np.array([4, 6]), 10), [4, 6])
    with pytest.raises(ValueError, match="total"):
        stratified_counts(np.array([4, 6]), 11)


def test_split_is_fixed_disjoint_and_stratified():
    a = load_corrupted_digits(n_test=797, occlusion=3, noise_std=0.1, data_seed=0)
    b = load_corrupted_digits(n_test=797, occlusion=3, noise_std=0.1, data_seed=0)
    assert torch.equal(a.x_test, b.x_test) and torch.equal(a.y_train, b.y_train)
    assert (len(a.y_test), len(a.y_train)) == (797, 1000)  # exactly n_test, not up to per-class rounding
    full_counts = torch.bincount(torch.cat([a.y_test, a.y_train]), minlength=10).numpy()
    np.testing.assert_array_equal(torch.bincount(a.y_test, minlength=10).numpy(), stratified_counts(full_counts, 797))
    assert a.x_train.shape[1:] == (1, 8, 8)
    assert set(a.y_test.tolist()) == set(range(10)) == set(a.y_train.tolist())
    train_rows = {tuple(r) for r in a.x_train.flatten(1).tolist()}
    assert not any(tuple(r) in train_rows for r in a.x_test.flatten(1).tolist())


def _tiny(cfg_changes: dict) -> tuple[MEOMConfig, DigitsSplit]:
    """A config and data small enough for a unit test (500 train / 200 test images, 2 epochs, < 1 s per arm)."""
    cfg = MEOMConfig(
        timesteps=3, teacher_widths=(8, 8, 16), student_widths=(8, 8, 16), teacher_epochs=2, student_epochs=2,
        batch_size=32, **cfg_changes,
    )  # fmt: skip
    full = load_corrupted_digits(n_test=797, occlusion=3, noise_std=0.1, data_seed=0)
    data = DigitsSplit(full.x_train[:500], full.y_train[:500], full.x_test[:200], full.y_test[:200])
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
    # chance is 10%; at chance, 200 test images give sd sqrt(0.1 * 0.9 / 200) = 2.1 pp, so 20% is > 4 sd above
    assert r1.truncated_acc[-1] > 0.2
    r_twd = train_student(cfg, "twd", data, teacher, init, seed=3, progress=_NoBar())
    assert r_twd.final_loss != r1.final_loss  # the arms really train with different losses
    assert r1.softening == 1.0 == r_twd.softening


def test_softened_teacher_arm_uses_the_factor_matched_to_the_seeds_masks():
    from iclr26.common.seeding import derive_seed

    cfg, data = _tiny({})
    teacher = train_teacher(cfg, data, seed=3)
    s = softening_factor(cfg, data, teacher, derive_seed(3, "masks"))
    # unscaled masks drop 30% of the features, which flattens the mixed targets: the matched factor exceeds 1
    assert s > 1.0
    # with 1/keep rescaling the masked views keep their scale on average: less softening than without
    assert softening_factor(dataclasses.replace(cfg, rescale_masks=True), data, teacher, derive_seed(3, "masks")) < s
    torch.manual_seed(0)
    init = {k: v.clone() for k, v in make_student(cfg, 10).state_dict().items()}
    soft = train_student(cfg, "twd-soft", data, teacher, init, seed=3, progress=_NoBar())
    w05 = train_student(cfg, "twd-w0.5", data, teacher, init, seed=3, progress=_NoBar())
    assert soft.softening == s and soft.final_loss != w05.final_loss


def _fake(acc_by_t: list[float], var_logits: float = 0.1) -> ArmResult:
    acc = np.array(acc_by_t)
    return ArmResult(
        truncated_acc=acc, per_step_acc=acc, var_logits=var_logits, var_acc=1.0, disagreement=0.2, final_loss=0.5
    )


def test_softened_teacher_control_and_both_kd_weights_are_in_the_metrics():
    base = [0.80, 0.85]
    gains = [0.010, 0.012, 0.008, 0.011, 0.009]  # +1.0 pp, ci95 = t_0.975,4 * sqrt(0.1 / 4) / sqrt(5) = 0.196324
    plus = [_fake([a + g for a in base]) for g in gains]

    def soft(g: float) -> ArmResult:
        return dataclasses.replace(_fake([a + g for a in base]), softening=1.2)

    results = {
        "ce": [_fake(base)] * 5,
        "twd": [_fake(base)] * 5,
        "twd-w0.5": [_fake(base)] * 5,
        # the softened teacher gains as much as TMPD: TMPD's gain is not told apart from softening
        "twd-soft": [soft(g) for g in gains],
        "twd+tmpd": plus,
        "twd+tpd": [_fake(base)] * 5,
        "meom": [_fake([a + 2 * g for a in base]) for g in gains],
    }
    out = comparisons(results)
    controls = out["controls"]
    np.testing.assert_allclose(controls["twd+tmpd_minus_twd-soft"]["mean"], [0.0, 0.0], atol=1e-9)
    assert list(controls["twd+tmpd_beats_twd-soft_by_t"]) == [False, False]
    # MEOM: +2 pp over TWD, +1 pp over the softened teacher (ci95 0.196): it beats the control
    np.testing.assert_allclose(controls["meom_minus_twd-soft"]["mean"], [1.0, 1.0], atol=1e-9)
    assert controls["meom_minus_twd-soft"]["ci95"][0] == pytest.approx(0.196324, rel=1e-5)
    assert list(controls["meom_beats_twd-soft_by_t"]) == [True, True]
    np.testing.assert_allclose(controls["softening_factor_per_seed"], [1.2] * 5)
    np.testing.assert_allclose(controls["twd-soft_minus_twd"]["mean"], [1.0, 1.0], atol=1e-9)
    # both TWD KD weights: every arm against TWD at 0.2, and against the ablation base TWD at 0.5
    np.testing.assert_allclose(out["gain_vs_twd_pp"]["meom"]["mean"], [2.0, 2.0], atol=1e-9)
    np.testing.assert_allclose(out["gain_vs_ablation_base_pp"]["meom"]["mean"], [2.0, 2.0], atol=1e-9)
    assert out["secondary"]["ablation_base"] == "twd-w0.5"


def test_secondary_checks_are_computed_from_the_arms():
    twd_acc = [[0.80, 0.85], [0.81, 0.86], [0.82, 0.87]]
    # TWD+TPD: +2, +3, +2.5 pp at t = 1 -> mean 2.5, sd 0.5, se 0.5 / sqrt(3) = 0.288675,
    # ci95 = t_0.975,2 (4.302653) * se = 1.242069 < 2.5: a significant rise
    tpd_acc = [[0.82, 0.85], [0.84, 0.86], [0.845, 0.87]]
    # TWD+TMPD logit variance 0.8, 0.85, 0.95 against TWD's 1.0, 1.1, 1.2: change -0.2, -0.25, -0.25 ->
    # mean -0.233333, sd 0.028868, se 0.016667, ci95 0.071711: a significant drop
    results = {
        "ce": [_fake(a) for a in twd_acc],
        "twd": [_fake(a, v) for a, v in zip(twd_acc, (1.0, 1.1, 1.2), strict=True)],
        "twd-soft": [_fake(a) for a in twd_acc],
        "twd+tmpd": [_fake(a, v) for a, v in zip(twd_acc, (0.8, 0.85, 0.95), strict=True)],
        "twd+tpd": [_fake(a) for a in tpd_acc],
        "meom": [_fake(a) for a in tpd_acc],
    }
    out = comparisons(results)
    sec = out["secondary"]
    assert sec["ablation_base"] == "twd"  # without twd-w0.5 the base is TWD itself
    assert sec["tpd_raises_t1"] and sec["tpd_raises_t1_significant"]
    tpd = out["gain_vs_twd_pp"]["twd+tpd"]
    np.testing.assert_allclose(tpd["mean"], [2.5, 0.0], atol=1e-9)
    assert tpd["ci95"][0] == pytest.approx(1.242069, rel=1e-5)
    assert sec["tmpd_var_logits_change"] == pytest.approx(-0.233333, rel=1e-5)
    assert sec["tmpd_var_logits_change_ci95"] == pytest.approx(0.071711, rel=1e-4)
    assert sec["tmpd_lowers_var_logits_significant"]
    assert sec["tmpd_disagreement_change"] == 0.0 and not sec["tmpd_lowers_disagreement"]
    assert set(out["gain_vs_twd_pp"]) == {"ce", "twd-soft", "twd+tmpd", "twd+tpd", "meom"}


def test_paired_significance_is_a_student_t_test():
    # d = (-0.5, 1, 2, 3, 4.5): mean 2, squared deviations 6.25 + 1 + 0 + 1 + 6.25 = 14.5, sd = sqrt(14.5 / 4)
    # = 1.90394, se = sd / sqrt(5) = 0.851469, mean / se = 2.349. A "> 2 SE" rule calls this significant; the
    # paired t-test with 4 dof (t_0.975 = 2.776445) does not: ci95 = 2.776445 * 0.851469 = 2.364063 > 2.
    d = np.array([-0.5, 1.0, 2.0, 3.0, 4.5])
    out = paired_difference(d, np.zeros(5))
    assert out["mean"] == pytest.approx(2.0)
    assert out["se"] == pytest.approx(0.851469, rel=1e-5)
    assert out["ci95"] == pytest.approx(2.364063, rel=1e-5)
    assert not out["significant"] and out["wins"] == 4
    # (2, 2, 2, 2, 4): mean 2.4, sd sqrt(3.2 / 4) = 0.894427, se 0.4, ci95 = 1.110578 < 2.4: significant
    assert paired_difference(np.array([2.0, 2, 2, 2, 4]), np.zeros(5))["significant"]
    # equivalence with scipy's paired t-test on random pairs: significant iff p < 0.05
    rng = np.random.default_rng(0)
    a, b = rng.normal(0.3, 1.0, (5, 200)), rng.normal(0.0, 1.0, (5, 200))
    expected = stats.ttest_rel(a, b, axis=0).pvalue < 0.05
    np.testing.assert_array_equal(paired_difference(a, b)["significant"], expected)
    assert 0 < expected.sum() < 200  # both outcomes occur
    # a single seed is never significant
    assert not paired_difference(np.array([[5.0]]), np.zeros((1, 1)))["significant"].any()


def test_smoke_run_through_cli(smoke):
    record = smoke("meom")
    metrics = record["metrics"]
    assert set(metrics["arms"]) == {"ce", "twd", "twd-w0.5", "twd-soft", "twd+tmpd", "meom"}
    t = record["config"]["timesteps"]
    assert len(record["evidence"]["meom_minus_twd_by_t"]["mean"]) == t
    assert len(metrics["arms"]["meom"]["truncated_acc_mean"]) == t
    tolerance = record["evidence"]["thresholds"]["claim_tolerance"]
    assert tolerance["value"] == 0.0 and "strictly better" in tolerance["source"]
    # one seed is fewer than the 5 the paired tests need, and its interval is unbounded: inconclusive
    assert record["claim_held"] == "inconclusive"
    assert record["failed_gates"] == ["enough_seeds", "distillation_helps"]
    assert record["evidence"]["meom_beats_twd_by_t"] == [False] * t  # one seed: never above 0
    # the run's CPU time is the record's (summed over resumed legs), not a figure of the module
    assert record["cpu_time_s"] > 0 and "cpu_time_s" not in record["timings"]
    assert "cpu_time_s" not in metrics and "cpu_time_s" not in record["evidence"]
    assert record["units"][:2] == ["teacher-seed0", "student-ce-seed0"] and len(record["units"]) == 7
    assert set(record["plots"]) == {"accuracy_vs_timestep.png", "meom_minus_twd.png"}


def test_training_subset_is_a_fixed_stratified_draw_of_the_training_images():
    full = load_corrupted_digits(n_test=797, occlusion=3, noise_std=0.1, data_seed=0)
    sub = training_subset(full, 200, seed=5)
    assert len(sub.y_train) == 200 and sub.x_test is full.x_test and sub.y_test is full.y_test
    counts = torch.bincount(full.y_train, minlength=10).numpy()
    np.testing.assert_array_equal(torch.bincount(sub.y_train, minlength=10).numpy(), stratified_counts(counts, 200))
    rows = {tuple(r) for r in full.x_train.flatten(1).tolist()}
    assert all(tuple(r) in rows for r in sub.x_train.flatten(1).tolist())
    assert torch.equal(training_subset(full, 200, seed=5).x_train, sub.x_train)
    assert not torch.equal(training_subset(full, 200, seed=6).x_train, sub.x_train)
    assert training_subset(full, 1000, seed=5) is full
    with pytest.raises(ValueError, match="n_train"):
        training_subset(full, 1001, seed=5)


def test_the_teacher_sees_every_training_image_and_the_students_the_subset(tmp_path, monkeypatch):
    seen: dict[str, int] = {}
    real_teacher, real_student = experiment.train_teacher, experiment.train_student

    def teacher(config, data, seed):
        seen["teacher"] = len(data.y_train)
        return real_teacher(config, data, seed)

    def student(config, arm, data, *args, **kwargs):
        seen[arm] = len(data.y_train)
        return real_student(config, arm, data, *args, **kwargs)

    monkeypatch.setattr(experiment, "train_teacher", teacher)
    monkeypatch.setattr(experiment, "train_student", student)
    config = MEOMConfig.preset("smoke")  # 1797 - 1397 = 400 training images, 100 for the students
    out = experiment.run(config, RunContext(out_dir=tmp_path, seed=0, quiet=True))
    plt.close("all")
    assert config.n_student_train == 100 and seen == {"teacher": 400, **{arm: 100 for arm in config.arms}}
    assert out.claim_held == "inconclusive"  # one seed


def test_the_verdict_reads_each_arm_in_percent(tmp_path):
    # five seeds, T = 2; fractions in [0, 1] as train_student returns them. TWD(0.5) is the stronger TWD; MEOM is
    # 1 pp above it at both t, TWD+TMPD 1 pp above the softened teacher, CE 2 pp below TWD(0.5): held. Were an arm
    # read in place of another, or the fractions not turned into percent, the numbers below would differ
    spread = (0.0, 0.002, -0.002, 0.001, -0.001)
    base = [0.60, 0.62]

    def arm(gain: float) -> list[ArmResult]:
        return [_fake([a + gain + e for a in base]) for e in spread]

    results = {"ce": arm(-0.02), "twd": arm(-0.005), "twd-w0.5": arm(0.0), "twd-soft": arm(0.0),
               "twd+tmpd": arm(0.01), "twd+tpd": arm(0.0), "meom": arm(0.01)}  # fmt: skip
    config = MEOMConfig(timesteps=2, n_seeds=5)
    out = experiment._outcome(config, RunContext(out_dir=tmp_path, seed=0, quiet=True), results, [0.9] * 5)
    plt.close("all")
    assert out.claim_held == "held", out.measurement
    assert out.evidence["twd_arm"] == "twd-w0.5"
    np.testing.assert_allclose(out.evidence["meom_minus_twd_by_t"]["mean"], [1.0, 1.0], atol=1e-9)
    assert out.evidence["gates"]["distillation_helps"]["twd_minus_ce_full_T"]["mean"] == pytest.approx(2.0)
    assert out.evidence["twd+tmpd_minus_twd-soft_full_T"]["mean"] == pytest.approx(1.0)
    assert out.evidence["acc_full_T"]["meom"] == pytest.approx(63.0)
    assert out.evidence["teacher_acc"] == pytest.approx(90.0)
