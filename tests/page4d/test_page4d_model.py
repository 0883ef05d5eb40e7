"""The tiny VGGT: shapes, input checks, where the mask acts, the fine-tuning recipe and the losses."""

from __future__ import annotations

import pytest
import torch

from iclr26.page4d.aggregator import MaskSchedule
from iclr26.page4d.finetune import GroupSpec, apply_recipe, train_step, trainable_groups, warmup_cosine
from iclr26.page4d.model import TinyVGGT, depth_loss, pose_loss


def _model(**kw):
    torch.manual_seed(0)
    args = dict(img_size=(16, 16), patch=4, dim=16, depth=4, heads=2, middle=(1, 3), mask_hidden=4)
    return TinyVGGT(**{**args, **kw})


def _batch(b=2, s=3):
    g = torch.Generator().manual_seed(0)
    return {"images": torch.rand(b, s, 3, 16, 16, generator=g),
            "pose_enc": torch.rand(b, s, 7, generator=g),
            "depth": torch.rand(b, s, 16, 16, generator=g) + 1.0}  # fmt: skip


def test_shapes_and_mask_only_with_alpha():
    model = _model()
    out = model(_batch()["images"])
    assert out.pose_enc.shape == (2, 3, 7) and out.depth.shape == (2, 3, 16, 16) and out.mask is None
    assert bool((out.depth > 0).all())
    model.alpha = 64.0
    masked = model(_batch()["images"])
    assert masked.mask.shape == (2, 3, 4, 4)


def test_input_errors_name_the_problem():
    model = _model()
    with pytest.raises(ValueError, match="B, S, 3, H, W"):
        model(torch.rand(2, 3, 16, 16))
    with pytest.raises(ValueError, match="no frames"):
        model(torch.rand(2, 0, 3, 16, 16))
    with pytest.raises(ValueError, match="takes"):
        model(torch.rand(1, 2, 3, 8, 8))
    nan = torch.rand(1, 2, 3, 16, 16)
    nan[0, 1, 0, 3, 3] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        model(nan)
    with pytest.raises(ValueError, match="divisible"):
        _model(img_size=(15, 16))
    with pytest.raises(ValueError, match="middle"):
        _model(middle=(0, 3))


def test_mask_changes_only_the_pose_pathway_in_the_first_masked_block():
    # In the first middle global block, patch queries (r = 0) attend as without the mask; only camera/register
    # rows change. The first masked block is global block 1 (middle = (1, 3)); compare its outputs.
    model = _model()
    images = _batch()["images"]
    seen = {}

    def hook(_m, _inp, out):
        seen.setdefault("outs", []).append(out.detach())

    handle = model.global_blocks[1].register_forward_hook(hook)
    model.alpha = 0.0
    model(images)
    model.alpha = 64.0
    model(images)
    handle.remove()
    plain, masked = (o.reshape(2, 3, model.n_special + 16, 16) for o in seen["outs"])
    assert torch.allclose(plain[:, :, model.n_special :], masked[:, :, model.n_special :], atol=1e-6)
    assert not torch.allclose(plain[:, :, : model.n_special], masked[:, :, : model.n_special], atol=1e-4)


def test_alpha_zero_is_the_plain_model_and_early_blocks_are_unaffected():
    model = _model()
    images = _batch()["images"]
    a = model(images)
    model.alpha = 0.0
    b = model(images)
    assert torch.equal(a.pose_enc, b.pose_enc) and torch.equal(a.depth, b.depth)


def test_frozen_blocks_stay_bit_identical_and_trained_ones_change():
    model = _model()
    before = {k: v.clone() for k, v in model.named_parameters()}
    spec = GroupSpec(lr=1e-2, warmup=0.0, weight_decay=0.01)
    groups = trainable_groups(model, "page4d", blocks=spec, mask_head=spec)
    opt = apply_recipe(model, groups)
    for step in range(2):
        res = train_step(model, opt, [s for _, s in groups], _batch(), step=step, total=4,
                         schedule=MaskSchedule(float("inf"), float("inf")))  # fmt: skip
    assert res.alpha == 64.0
    after = dict(model.named_parameters())
    trained = {n for n in after if n.startswith(("frame_blocks.1.", "frame_blocks.2.", "global_blocks.1.",
                                                 "global_blocks.2.", "mask_head."))}  # fmt: skip
    for name, p in after.items():
        if name in trained:
            assert not torch.equal(before[name], p), f"{name} did not change"
        else:
            assert torch.equal(before[name], p), f"frozen {name} changed"
            assert not p.requires_grad


def test_recipes_select_the_documented_parameters():
    model = _model()
    spec = GroupSpec(lr=1e-3, warmup=0.05, weight_decay=0.01)
    names = {id(p): n for n, p in model.named_parameters()}

    def selected(recipe):
        return [{names[id(p)] for p in ps} for ps, _ in trainable_groups(model, recipe, blocks=spec, mask_head=spec)]

    naive = selected("naive")
    assert len(naive) == 1
    assert {n.split(".")[0] + "." + n.split(".")[1] for n in naive[0]} == {
        "frame_blocks.1", "frame_blocks.2", "global_blocks.1", "global_blocks.2"}  # fmt: skip
    page = selected("page4d")
    assert page[0] == naive[0] and all(n.startswith("mask_head.") for n in page[1])
    full = selected("full")[0]
    assert full == {n for n in names.values() if not n.startswith("mask_head.")}
    with pytest.raises(ValueError, match="recipe"):
        trainable_groups(model, "lora", blocks=spec, mask_head=spec)


def test_warmup_cosine_hand_values():
    # 100 steps, 10% warm-up, peak 1, floor 0: step 5 -> 0.5; step 10 -> peak; step 55 -> half-way down the
    # cosine: ½(1 + cos(π/2)) = 0.5; step 100 -> floor.
    assert warmup_cosine(5, 100, peak=1.0, warmup=0.1, floor=0.0) == pytest.approx(0.5)
    assert warmup_cosine(10, 100, peak=1.0, warmup=0.1, floor=0.0) == pytest.approx(1.0)
    assert warmup_cosine(55, 100, peak=1.0, warmup=0.1, floor=0.0) == pytest.approx(0.5)
    assert warmup_cosine(100, 100, peak=1.0, warmup=0.1, floor=0.0) == pytest.approx(0.0)
    with pytest.raises(ValueError, match="total"):
        warmup_cosine(0, 0, peak=1.0, warmup=0.1)


def test_loss_hand_values():
    # pose: |T̂ − T| = 1 on each of 3 entries -> mean 1; quaternion exact -> 0
    pred = torch.zeros(1, 1, 7)
    target = torch.tensor([[[1.0, -1.0, 1.0, 0.0, 0.0, 0.0, 0.0]]])
    assert pose_loss(pred, target).item() == pytest.approx(1.0)
    # depth: pred 2 everywhere vs a horizontal ramp 0, 1, 2 (1 row): reg = (2 + 1 + 0)/3 = 1; ∇x of the ramp is
    # (1, 1), of pred (0, 0): |Δ| mean 1; no vertical differences (one row: empty, mean NaN is avoided by 2 rows)
    target_d = torch.tensor([[[[0.0, 1.0, 2.0], [0.0, 1.0, 2.0]]]])
    pred_d = torch.full_like(target_d, 2.0)
    # reg = 1, gx = 1, gy = 0 (rows equal) -> 1 + 0.5·(1 + 0) = 1.5
    assert depth_loss(pred_d, target_d, grad_weight=0.5).item() == pytest.approx(1.5)
    with pytest.raises(ValueError, match="same shape"):
        pose_loss(pred, target[..., :6])


def test_rope_scores_depend_only_on_relative_position():
    # RoPE rotates q and k by angles linear in position, so q·k depends on positions only through their
    # difference: shifting both tokens by the same (dy, dx) leaves every score unchanged; position 0 is no rotation.
    from iclr26.page4d.model import rope_2d

    g = torch.Generator().manual_seed(0)
    q, k = (
        torch.randn(1, 1, 2, 8, generator=g, dtype=torch.float64),
        torch.randn(1, 1, 2, 8, generator=g, dtype=torch.float64),
    )
    pos = torch.tensor([[1, 2], [3, 1]])
    shifted = pos + torch.tensor([2, 5])
    scores = rope_2d(q, pos) @ rope_2d(k, pos).transpose(-1, -2)
    assert torch.allclose(scores, rope_2d(q, shifted) @ rope_2d(k, shifted).transpose(-1, -2), atol=1e-12)
    assert torch.equal(rope_2d(q, torch.zeros(2, 2, dtype=torch.long)), q)
    assert not torch.allclose(rope_2d(q, pos), q)  # it does rotate
    with pytest.raises(ValueError, match="divisible by 4"):
        rope_2d(torch.zeros(1, 1, 2, 6), pos)
