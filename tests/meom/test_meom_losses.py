"""MEOM losses against hand-computed values, limiting cases, loop references and bad input."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from iclr26.meom import (
    cumulative_mean_logits,
    kd_kl,
    meom_loss,
    multi_perspective_teacher_logits,
    per_timestep_ce,
    sample_temporal_masks,
    temporal_kd_loss,
    tmpd_loss,
    tpd_loss,
    twd_loss,
)

LN2, LN3 = math.log(2.0), math.log(3.0)
D64 = torch.float64


def identity_head(f: torch.Tensor) -> torch.Tensor:
    """W_c = identity on 2-d features, so z~_t = f^A * m_t can be read off by hand."""
    return f


def test_per_timestep_ce_hand_computed():
    # T = 2, y = 0: z1 = (0, 0) -> CE = ln 2; z2 = (ln 3, 0) -> p = 3/4, CE = ln(4/3). Mean = ln(8/3) / 2.
    z = torch.tensor([[[0.0, 0.0]], [[LN3, 0.0]]], dtype=D64)
    assert per_timestep_ce(z, torch.tensor([0])).item() == pytest.approx(math.log(8 / 3) / 2, rel=1e-12)


def test_kd_kl_hand_computed():
    # tau = 2: teacher (2 ln 3, 0)/2 -> p_T = (3/4, 1/4); student (0, 0) -> p_S = (1/2, 1/2).
    # KL = 3/4 ln(3/2) + 1/4 ln(1/2); times tau^2 = 4 gives 3 ln(3/2) - ln 2.
    value = kd_kl(torch.zeros(1, 2, dtype=D64), torch.tensor([[2 * LN3, 0.0]], dtype=D64), tau=2.0)
    assert value.item() == pytest.approx(3 * math.log(1.5) - LN2, rel=1e-12)


def test_temporal_kd_matches_twd_code_loop():
    # reference: the TWD code's kd_loss (F.kl_div, reduction none, sum over classes, batch mean, * tau^2)
    # averaged over a python loop on timesteps
    torch.manual_seed(0)
    s, t, tau = torch.randn(5, 7, 4, dtype=D64), torch.randn(7, 4, dtype=D64), 3.0
    ref = (
        sum(
            F.kl_div(F.log_softmax(s[i] / tau, 1), F.softmax(t / tau, 1), reduction="none").sum(1).mean() * tau**2
            for i in range(5)
        )
        / 5
    )
    torch.testing.assert_close(temporal_kd_loss(s, t, tau=tau), ref)


def test_tmpd_hand_computed():
    # f^A = (0, 4 ln 2), masks m1 = (1, 1), m2 = (1, 0), lambda = 1/2, W_c = identity:
    # z^1 = z^A = (0, 4 ln 2); z^2 = (1/2)(0, 4 ln 2) + (1/2)(0, 0) = (0, 2 ln 2).
    # tau = 2: p1 = softmax(0, 2 ln 2) = (1/5, 4/5); p2 = softmax(0, ln 2) = (1/3, 2/3); student p = (1/2, 1/2).
    # L = tau^2/T (KL1 + KL2) = 2 (KL1 + KL2).
    f = torch.tensor([[0.0, 4 * LN2]], dtype=D64)
    masks = torch.tensor([[1.0, 1.0], [1.0, 0.0]], dtype=D64)
    z_hat = multi_perspective_teacher_logits(f, identity_head, masks, lam=0.5)
    torch.testing.assert_close(z_hat, torch.tensor([[[0.0, 4 * LN2]], [[0.0, 2 * LN2]]], dtype=D64))
    kl1 = 0.2 * math.log(0.4) + 0.8 * math.log(1.6)
    kl2 = (1 / 3) * math.log(2 / 3) + (2 / 3) * math.log(4 / 3)
    value = tmpd_loss(torch.zeros(2, 1, 2, dtype=D64), z_hat, tau=2.0)
    assert value.item() == pytest.approx(2 * (kl1 + kl2), rel=1e-12)


def test_tmpd_reduces_to_twd_kd_in_both_limits():
    torch.manual_seed(1)
    student = torch.randn(4, 6, 10, dtype=D64)
    f = torch.randn(6, 5, 3, 3, dtype=D64)
    head = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(45, 10)).to(D64)
    kd = temporal_kd_loss(student, head(f), tau=3.0)
    random_masks = sample_temporal_masks(4, (5, 3, 3), keep_prob=0.5, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        # lambda = 0: the masked view has no weight, z^_t = z^A for every mask
        z0 = multi_perspective_teacher_logits(f, head, random_masks.to(D64), lam=0.0)
        # masks that keep everything: z~_t = z^A for every lambda
        z1 = multi_perspective_teacher_logits(f, head, torch.ones(4, 5, 3, 3, dtype=D64), lam=1.0)
    torch.testing.assert_close(tmpd_loss(student, z0, tau=3.0), kd)
    torch.testing.assert_close(tmpd_loss(student, z1, tau=3.0), kd)


def test_per_sample_masks_equal_broadcast_shared_masks():
    torch.manual_seed(2)
    f = torch.randn(3, 4, 2, 2, dtype=D64)
    head = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 5)).to(D64)
    shared = (torch.rand(6, 4, 2, 2) < 0.6).to(D64)
    with torch.no_grad():
        a = multi_perspective_teacher_logits(f, head, shared, lam=0.3)
        b = multi_perspective_teacher_logits(f, head, shared.unsqueeze(1).expand(6, 3, 4, 2, 2), lam=0.3)
        # loop reference over timesteps and samples
        ref = torch.stack(
            [torch.stack([0.7 * head(f[i : i + 1])[0] + 0.3 * head(f[i : i + 1] * shared[t])[0] for i in range(3)])
             for t in range(6)]
        )  # fmt: skip
    torch.testing.assert_close(a, b)
    torch.testing.assert_close(a, ref)


def test_cumulative_mean_matches_loop():
    z = torch.randn(5, 3, 4, dtype=D64)
    ref = torch.stack([z[: t + 1].mean(dim=0) for t in range(5)])
    torch.testing.assert_close(cumulative_mean_logits(z), ref)


def test_tpd_hand_computed():
    # tau = 1, T = 3: z1 = (0, 0), z2 = (2 ln 3, 0), z3 = (ln 3, 0) give cumulative means
    # zbar1 = (0, 0), zbar2 = zbar3 = (ln 3, 0): p1 = (1/2, 1/2), p2 = p3 = (3/4, 1/4).
    # CE: pair 1 = -(3/4 + 1/4) ln(1/2) = ln 2; pair 2 = H(p2) = ln 4 - (3/4) ln 3; L = mean of the two.
    # KL: pair 1 = ln 2 - H(p2) = (3/4) ln 3 - ln 2; pair 2 = 0.
    z = torch.tensor([[[0.0, 0.0]], [[2 * LN3, 0.0]], [[LN3, 0.0]]], dtype=D64)
    ce = tpd_loss(z, tau=1.0, divergence="ce")
    kl = tpd_loss(z, tau=1.0, divergence="kl")
    assert ce.item() == pytest.approx((LN2 + 2 * LN2 - 0.75 * LN3) / 2, rel=1e-12)
    assert kl.item() == pytest.approx((0.75 * LN3 - LN2) / 2, rel=1e-12)


def test_tpd_when_all_timesteps_agree():
    # identical logits at every t: every cumulative mean is the same p, so KL-TPD = 0 and
    # CE-TPD = tau^2 H(p) (the target's entropy), with zero gradient for the KL form
    z1 = torch.randn(1, 4, 6, dtype=D64)
    z = z1.expand(5, 4, 6).clone().requires_grad_(True)
    kl = tpd_loss(z, tau=3.0, divergence="kl", detach_target=False)
    assert kl.item() == pytest.approx(0.0, abs=1e-12)
    kl.backward()
    assert z.grad.abs().max().item() < 1e-12
    p = F.softmax(z1[0] / 3.0, dim=-1)
    entropy = -(p * p.log()).sum(-1).mean()
    assert tpd_loss(z.detach(), tau=3.0, divergence="ce").item() == pytest.approx(9 * entropy.item(), rel=1e-12)


def test_tpd_ce_and_kl_have_equal_gradients_with_detached_target():
    torch.manual_seed(3)
    z = torch.randn(4, 5, 7, dtype=D64, requires_grad=True)
    (g_ce,) = torch.autograd.grad(tpd_loss(z, divergence="ce", detach_target=True), z)
    (g_kl,) = torch.autograd.grad(tpd_loss(z, divergence="kl", detach_target=True), z)
    torch.testing.assert_close(g_ce, g_kl)
    # the last timestep only feeds the target, so a detached target gives it no gradient
    assert g_ce[-1].abs().max().item() == 0.0
    (g_free,) = torch.autograd.grad(tpd_loss(z, divergence="ce", detach_target=False), z)
    assert g_free[-1].abs().max().item() > 0.0


def test_meom_with_lambda_zero_and_no_tpd_is_twd():
    torch.manual_seed(4)
    student = torch.randn(3, 8, 10, dtype=D64)
    f = torch.randn(8, 6, 2, 2, dtype=D64)
    head = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(24, 10)).to(D64)
    y = torch.randint(0, 10, (8,))
    out = meom_loss(student, f, head, y, lam=0.0, w_tmpd=0.5, w_tpd=0.0, keep_prob=0.3)
    ref = twd_loss(student, head(f), y, tau=3.0, kd_weight=0.5)
    torch.testing.assert_close(out.total, ref.total)
    torch.testing.assert_close(out.tmpd, ref.kd)
    torch.testing.assert_close(out.ce, ref.ce)


def test_meom_total_combines_terms_and_only_the_student_gets_gradients():
    torch.manual_seed(5)
    student = torch.randn(4, 8, 10, dtype=D64, requires_grad=True)
    f = torch.randn(8, 6, 2, 2, dtype=D64, requires_grad=True)
    head = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(24, 10)).to(D64)
    y = torch.randint(0, 10, (8,))
    out = meom_loss(student, f, head, y)
    torch.testing.assert_close(out.total, 1.0 * out.ce + 0.5 * out.tmpd + 0.3 * out.tpd)
    assert out.perspective_logits.shape == (4, 8, 10)
    out.total.backward()
    assert student.grad is not None and student.grad.abs().sum() > 0
    assert f.grad is None
    assert all(p.grad is None for p in head.parameters())


def test_resampled_masks_are_reproducible_under_a_generator():
    torch.manual_seed(6)
    student, f = torch.randn(4, 8, 10), torch.randn(8, 6, 2, 2)
    head = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(24, 10))
    y = torch.randint(0, 10, (8,))
    a = meom_loss(student, f, head, y, mask_mode="resample", generator=torch.Generator().manual_seed(9))
    b = meom_loss(student, f, head, y, mask_mode="resample", generator=torch.Generator().manual_seed(9))
    torch.testing.assert_close(a.total, b.total)


def test_single_timestep_student_without_tpd():
    student, f = torch.randn(1, 8, 10), torch.randn(8, 6, 2, 2)
    head = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(24, 10))
    out = meom_loss(student, f, head, torch.zeros(8, dtype=torch.long), w_tpd=0.0)
    assert out.tpd is None
    with pytest.raises(ValueError, match=r"student_logits_per_t: TPD needs T >= 2"):
        meom_loss(student, f, head, torch.zeros(8, dtype=torch.long))
    with pytest.raises(ValueError, match=r"T >= 2"):
        tpd_loss(student)


def test_sample_temporal_masks():
    gen = torch.Generator().manual_seed(0)
    m = sample_temporal_masks(6, (32, 4, 4), keep_prob=0.7, generator=gen)
    assert m.shape == (6, 32, 4, 4)
    assert set(m.unique().tolist()) == {0.0, 1.0}
    assert m.mean().item() == pytest.approx(0.7, abs=0.03)  # 3072 Bernoulli draws: sd ~ 0.008
    assert not torch.equal(m[0], m[1])  # a different view per timestep
    assert sample_temporal_masks(2, (3,), keep_prob=1.0).eq(1.0).all()
    with pytest.raises(ValueError, match="keep_prob"):
        sample_temporal_masks(2, (3,), keep_prob=0.0)


# ---- bad input: each error names the argument ----

STUDENT = torch.randn(4, 8, 10)
FEATS = torch.randn(8, 6, 2, 2)
HEAD = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(24, 10))
TARGETS = torch.zeros(8, dtype=torch.long)


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"masks": torch.ones(4, 6, 3, 3)}, "masks: expected shape"),
        ({"masks": torch.ones(3, 6, 2, 2)}, "masks: expected one mask per timestep"),
        ({"masks": torch.ones(4)}, "masks: expected one mask per timestep"),
        ({"lam": 1.5}, "lam"),
        ({"tau": 0.0}, "tau"),
        ({"w_tpd": -1.0}, "w_tpd"),
        ({"tpd_divergence": "js"}, "divergence"),
    ],
)
def test_meom_bad_arguments(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        meom_loss(STUDENT, FEATS, HEAD, TARGETS, **kwargs)


def test_meom_class_count_mismatch():
    head3 = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(24, 3))
    with pytest.raises(ValueError, match=r"teacher_head: .*class count C=10"):
        meom_loss(STUDENT, FEATS, head3, TARGETS)
    with pytest.raises(ValueError, match="teacher_logits: .*class counts must agree"):
        temporal_kd_loss(STUDENT, torch.randn(8, 3))
    with pytest.raises(ValueError, match="teacher_logits: class count"):
        kd_kl(STUDENT, torch.randn(8, 3))
    with pytest.raises(ValueError, match="teacher_logits: class count"):  # C = 1 would silently broadcast
        kd_kl(STUDENT, torch.randn(8, 1))
    with pytest.raises(ValueError, match="teacher_logits: shape .* does not broadcast"):
        kd_kl(STUDENT, torch.randn(5, 10))
    with pytest.raises(ValueError, match="teacher_logits: shape .* does not broadcast"):
        kd_kl(torch.randn(8, 10), STUDENT)  # the teacher may not enlarge the student's shape


def test_twd_rejects_negative_kd_weight():
    with pytest.raises(ValueError, match="kd_weight"):
        twd_loss(STUDENT, torch.randn(8, 10), TARGETS, kd_weight=-0.1)


def test_meom_shape_errors():
    with pytest.raises(ValueError, match=r"student_logits_per_t: expected per-timestep logits of shape \(T, B, C\)"):
        meom_loss(torch.randn(8, 10), FEATS, HEAD, TARGETS)
    with pytest.raises(ValueError, match="teacher_features: .*B=8"):
        meom_loss(STUDENT, torch.randn(5, 6, 2, 2), HEAD, TARGETS)
    with pytest.raises(ValueError, match="targets: expected class indices"):
        meom_loss(STUDENT, FEATS, HEAD, torch.zeros(7, dtype=torch.long))
    with pytest.raises(ValueError, match="perspective_logits"):
        tmpd_loss(STUDENT, torch.randn(4, 8, 3))


def _with(x: torch.Tensor, index: tuple[int, ...], value: float) -> torch.Tensor:
    """A copy of ``x`` with one element replaced."""
    y = x.clone()
    y[index] = value
    return y


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_meom_rejects_non_finite_inputs_naming_the_argument(bad):
    with pytest.raises(ValueError, match=r"^student_logits_per_t: holds 1 non-finite value"):
        meom_loss(_with(STUDENT, (1, 2, 3), bad), FEATS, HEAD, TARGETS)
    with pytest.raises(ValueError, match=r"^teacher_features: holds 1 non-finite value"):
        meom_loss(STUDENT, _with(FEATS, (0, 1, 0, 1), bad), HEAD, TARGETS)
    with pytest.raises(ValueError, match=r"^masks: holds 1 non-finite value"):
        meom_loss(STUDENT, FEATS, HEAD, TARGETS, masks=_with(torch.ones(4, 6, 2, 2), (2, 0, 0, 0), bad))
    # the TWD baseline and the separate terms refuse the same input
    with pytest.raises(ValueError, match=r"^teacher_logits: holds 1 non-finite value"):
        twd_loss(STUDENT, _with(torch.randn(8, 10), (0, 0), bad), TARGETS)
    with pytest.raises(ValueError, match=r"^perspective_logits: holds 1 non-finite value"):
        tmpd_loss(STUDENT, _with(torch.randn(4, 8, 10), (0, 0, 0), bad))
    with pytest.raises(ValueError, match=r"^student_logits_per_t: holds 1 non-finite value"):
        tpd_loss(_with(STUDENT, (0, 0, 0), bad))


def test_meom_rejects_a_teacher_head_that_returns_non_finite_logits():
    broken = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(24, 10))
    with torch.no_grad():
        broken[1].bias[3] = float("nan")
    with pytest.raises(ValueError, match=r"^teacher_head: produced NaN or inf logits"):
        meom_loss(STUDENT, FEATS, broken, TARGETS)


@pytest.mark.parametrize(
    ("targets", "pattern"),
    [
        (
            torch.full((8,), 10),
            r"^targets: class indices must lie in \[0, 10\) \(C = 10 logits\), got range \[10, 10\]",
        ),
        (torch.tensor([0, 1, 2, -1, 4, 5, 6, 7]), r"^targets: class indices must lie in \[0, 10\).*\[-1, 7\]"),
        (torch.zeros(8), r"^targets: expected integer class indices, got dtype torch.float32"),
        (torch.zeros(8, dtype=torch.bool), r"^targets: expected integer class indices"),
    ],
)
def test_meom_rejects_targets_out_of_range_naming_the_argument(targets, pattern):
    with pytest.raises(ValueError, match=pattern):
        meom_loss(STUDENT, FEATS, HEAD, targets)
    with pytest.raises(ValueError, match=pattern):
        per_timestep_ce(STUDENT, targets)
    with pytest.raises(ValueError, match=pattern):
        twd_loss(STUDENT, torch.randn(8, 10), targets)


def test_meom_accepts_the_largest_class_index():
    # C - 1 = 9 is a valid class: the range check is [0, C), not [0, C - 1)
    out = meom_loss(STUDENT, FEATS, HEAD, torch.full((8,), 9))
    # L_CE is the mean over (t, b) of -log softmax(z^S_t[b])[9], the class taken as given
    torch.testing.assert_close(out.ce, -torch.log_softmax(STUDENT, dim=-1)[..., 9].mean())
    assert torch.isfinite(out.total)
