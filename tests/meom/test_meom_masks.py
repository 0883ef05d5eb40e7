"""Static masks by default, the 1/keep rescaling option, and the softening matched to the masks."""

from __future__ import annotations

import math

import pytest
import torch

from iclr26.meom.losses import (
    matched_softening,
    mean_entropy,
    meom_loss,
    multi_perspective_teacher_logits,
    sample_temporal_masks,
    static_temporal_masks,
)

D64 = torch.float64


def _setup(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    student = torch.randn(4, 8, 10, generator=g, dtype=D64)
    feats = torch.rand(8, 6, 2, 2, generator=g, dtype=D64)
    head = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(24, 10)).to(D64)
    y = torch.randint(0, 10, (8,), generator=g)
    return student, feats, head, y


def test_default_masks_are_static_across_calls_and_fixed_by_mask_seed():
    # the drop-in default is what the reproduction measures: the same T masks at every call (whatever the global
    # RNG does in between), namely static_temporal_masks(T, F, keep_prob, mask_seed)
    student, feats, head, y = _setup()
    a = meom_loss(student, feats, head, y, mask_seed=3)
    torch.manual_seed(123)
    torch.rand(1000)  # global RNG moves: static masks must not
    b = meom_loss(student, feats, head, y, mask_seed=3)
    assert torch.equal(a.perspective_logits, b.perspective_logits) and torch.equal(a.total, b.total)
    masks = static_temporal_masks(4, (6, 2, 2), keep_prob=0.7, mask_seed=3, dtype=D64)
    explicit = meom_loss(student, feats, head, y, masks=masks)
    assert torch.equal(a.perspective_logits, explicit.perspective_logits)
    # they are the (float32, CPU) draws of a generator seeded with mask_seed, i.e. "drawn once per seed", then cast
    gen = torch.Generator().manual_seed(3)
    assert torch.equal(masks, sample_temporal_masks(4, (6, 2, 2), keep_prob=0.7, generator=gen).to(D64))
    # another seed, other masks; the timesteps' masks differ from each other
    other = meom_loss(student, feats, head, y, mask_seed=4)
    assert not torch.equal(a.perspective_logits, other.perspective_logits)
    assert not torch.equal(masks[0], masks[1])


def test_static_masks_cache_is_not_shared_with_the_caller():
    m = static_temporal_masks(2, (3,), keep_prob=0.5, mask_seed=1)
    m.zero_()
    assert static_temporal_masks(2, (3,), keep_prob=0.5, mask_seed=1).sum() > 0


def test_resample_mode_draws_new_masks_every_call():
    student, feats, head, y = _setup()
    g = torch.Generator().manual_seed(0)
    a = meom_loss(student, feats, head, y, mask_mode="resample", generator=g)
    b = meom_loss(student, feats, head, y, mask_mode="resample", generator=g)
    assert not torch.equal(a.perspective_logits, b.perspective_logits)


def test_mask_mode_and_generator_misuse_name_the_argument():
    student, feats, head, y = _setup()
    with pytest.raises(ValueError, match="generator"):
        meom_loss(student, feats, head, y, generator=torch.Generator().manual_seed(0))  # static mode ignores it
    with pytest.raises(ValueError, match="mask_mode"):
        meom_loss(student, feats, head, y, mask_mode="per_call")


def test_rescaled_masks_are_the_same_pattern_divided_by_keep():
    # keep 0.5: kept elements become 2, dropped stay 0; the mean over many elements is ~1 (E[m/keep] = 1)
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    plain = sample_temporal_masks(3, (40, 8, 8), keep_prob=0.5, generator=g1)
    scaled = sample_temporal_masks(3, (40, 8, 8), keep_prob=0.5, generator=g2, rescale=True)
    assert torch.equal(scaled, plain * 2.0)
    assert set(scaled.unique().tolist()) == {0.0, 2.0}
    assert scaled.mean().item() == pytest.approx(1.0, abs=0.03)  # 7680 draws: sd of the mean ~0.011


def test_rescale_option_in_the_loss_keeps_a_linear_heads_mean_logit():
    # a bias-free linear head on pooled features: E[W (f * m / keep)] = W f, so averaged over many masks the
    # rescaled view's logits match the teacher's, while the unscaled ones shrink by keep (hand derivation:
    # E[m] = keep). With lambda = 1 the perspective logits are the masked view itself.
    g = torch.Generator().manual_seed(2)
    feats = torch.rand(4, 400, generator=g, dtype=D64)
    head = torch.nn.Linear(400, 3, bias=False).to(D64)
    with torch.no_grad():
        head.weight.copy_(torch.rand(3, 400, generator=g, dtype=D64))
    student = torch.zeros(50, 4, 3, dtype=D64)
    y = torch.zeros(4, dtype=torch.long)
    z = head(feats).detach()
    kw = dict(keep_prob=0.5, lam=1.0, w_tpd=0.0, mask_seed=0)
    scaled = meom_loss(student, feats, head, y, rescale_masks=True, **kw).perspective_logits.mean(0)
    plain = meom_loss(student, feats, head, y, **kw).perspective_logits.mean(0)
    torch.testing.assert_close(scaled, z, rtol=0.02, atol=0)
    torch.testing.assert_close(plain, 0.5 * z, rtol=0.02, atol=0)
    masks = static_temporal_masks(50, (400,), keep_prob=0.5, mask_seed=0, rescale=True, dtype=D64)
    explicit = multi_perspective_teacher_logits(feats, head, masks, lam=1.0)
    torch.testing.assert_close(explicit.mean(0), scaled)


def test_matched_softening_recovers_a_known_factor():
    # perspectives that are the teacher logits divided by 1.7 at every timestep: the matched factor is 1.7;
    # perspectives equal to the teacher's: 1
    z = 3.0 * torch.randn(64, 10, generator=torch.Generator().manual_seed(0), dtype=D64)
    assert matched_softening(z, torch.stack([z / 1.7] * 3), tau=3.0) == pytest.approx(1.7, rel=1e-6)
    assert matched_softening(z, torch.stack([z] * 2), tau=2.0) == pytest.approx(1.0, rel=1e-6)
    # it matches the mean entropy, not each sample: mixed factors 1 and 3 give one s between them
    views = torch.stack([z, z / 3.0])
    s = matched_softening(z, views, tau=1.0)
    assert 1.0 < s < 3.0
    assert mean_entropy(z / s) == pytest.approx(mean_entropy(views), rel=1e-6)


def test_mean_entropy_hand_computed():
    # uniform over 4 classes: log 4; a one-hot-like logit vector (1000, 0): ~0
    assert mean_entropy(torch.zeros(3, 4)) == pytest.approx(math.log(4))
    assert mean_entropy(torch.tensor([[1000.0, 0.0]])) == pytest.approx(0.0, abs=1e-12)


def test_matched_softening_errors_name_the_argument():
    z = torch.randn(5, 4, dtype=D64)
    with pytest.raises(ValueError, match="perspective_logits"):
        matched_softening(z, torch.randn(3, 6, 4, dtype=D64))
    with pytest.raises(ValueError, match="perspective_logits"):
        # targets sharper than the teacher can be at any factor >= 1e-4 on ties: all-equal logits have entropy log C
        matched_softening(torch.zeros(5, 4, dtype=D64), torch.stack([10 * z]))
    with pytest.raises(ValueError, match="tau"):
        matched_softening(z, torch.stack([z]), tau=0.0)


def test_the_readme_example_runs_and_uses_static_masks():
    # the module README's drop-in example, executed as written: it asserts that a second call reuses the masks
    from pathlib import Path

    readme = Path(__file__).parents[2] / "src" / "iclr26" / "meom" / "README.md"
    text = readme.read_text(encoding="utf-8")
    block = text[text.index("```python") + len("```python") :]
    block = block[: block.index("```")]
    assert "meom_loss(" in block and "generator=" not in block.split("# options")[0]
    namespace: dict = {}
    exec(compile(block, str(readme), "exec"), namespace)  # noqa: S102 - our own README
    assert torch.equal(namespace["again"].perspective_logits, namespace["out"].perspective_logits)
