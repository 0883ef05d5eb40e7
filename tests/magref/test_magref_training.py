"""Conditioning layouts, the placebo permutation, one training step, and the metrics' swap/copy-paste logic."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn

from iclr26.magref.data import N_IDENTITIES, ROLES, VOCAB
from iclr26.magref.latent import CausalPatchify
from iclr26.magref.masking import composite_canvas, downsample_mask
from iclr26.magref.metrics import score_clips
from iclr26.magref.model import TinyVideoDiT
from iclr26.magref.training import SpriteWorld, TrainSpec, build_batch, draw_items, permute_regions, train

WORLD = SpriteWorld()
CODEC = CausalPatchify()


def _items(n=3, seed=0, **kw):
    return draw_items(n, WORLD, torch.Generator().manual_seed(seed), **kw)


def test_canvas_layout_puts_the_canvas_first_and_regions_on_frame_zero():
    items = _items(2, multi=True, confusable=True)
    batch = build_batch(items, "canvas", CODEC, WORLD, torch.Generator().manual_seed(7))
    cv = composite_canvas(
        list(items[0].references),
        list(items[0].ref_masks),
        height=16,
        width=16,
        fit=False,
        generator=torch.Generator().manual_seed(7),
    )  # the same shuffle draw
    assert batch.z0.shape == (2, 48, 2, 8, 8) and batch.y.shape == (2, 52, 2, 8, 8)
    lat_canvas = CODEC.encode(cv.image[None, :, None])[0, :, 0]
    assert torch.equal(batch.z0[0, :, 0], lat_canvas)  # the target's first latent frame is the canvas
    assert torch.equal(batch.y[0, 4:, 0], lat_canvas)  # ... and so is the condition's
    assert batch.y[0, 4:, 1].abs().sum() == 0  # later condition frames are zero
    assert torch.equal(batch.y[0, :4, 0], downsample_mask(cv.mask, 2).expand(4, 8, 8))
    assert batch.y[0, :4, 1].abs().sum() == 0
    assert torch.equal(batch.z0[0, :, 1], CODEC.encode(items[0].video[None])[0, :, 1])  # then the clip
    assert torch.equal(batch.regions[0, :, 0], downsample_mask(cv.region_masks, 2))
    assert batch.regions[:, :, 1].abs().sum() == 0 and batch.out_from == 1


def test_temporal_layout_adds_one_masked_frame_per_reference_slot():
    items = _items(1, multi=False)
    batch = build_batch(items, "temporal", CODEC, WORLD, torch.Generator())
    assert batch.z0.shape == (1, 48, 3, 8, 8) and batch.out_from == 2
    assert torch.equal(batch.y[0, :4, 0], torch.ones(4, 8, 8))  # the reference frame is wholly masked
    assert batch.y[0, :4, 1:].abs().sum() == 0  # the empty slot and the clip are not
    assert torch.equal(batch.z0[0, :, 1], CODEC.encode(torch.ones(1, 3, 1, 16, 16))[0, :, 0])  # empty slot: white
    assert batch.regions[0, 0, 1:].abs().sum() == 0 and batch.regions[0, 0, 0].sum() > 0


def test_i2v_and_t2v_layouts():
    items = _items(2)
    i2v = build_batch(items, "i2v", CODEC, WORLD, torch.Generator())
    t2v = build_batch(items, "t2v", CODEC, WORLD, torch.Generator())
    assert torch.equal(i2v.z0, t2v.z0) and t2v.y.abs().sum() == 0
    assert torch.equal(i2v.y[:, 4:, 0], i2v.z0[:, :, 0]) and torch.equal(i2v.y[:, :4, 0], torch.ones(2, 4, 8, 8))


def test_placebo_permutes_regions_per_item():
    regions = torch.arange(2 * 3 * 4, dtype=torch.float32).reshape(2, 3, 4)
    out = permute_regions(regions, torch.Generator().manual_seed(0))
    for b in range(2):
        assert sorted(out[b].tolist()) == sorted(regions[b].tolist())


def test_one_training_step_changes_the_weights():
    torch.manual_seed(0)
    model = TinyVideoDiT(
        in_channels=100,
        out_channels=48,
        max_frames=3,
        height=8,
        width=8,
        dim=8,
        depth=1,
        heads=2,
        vocab=len(VOCAB),
        max_subjects=2,
        roles=ROLES,
    )
    before = {k: v.clone() for k, v in model.state_dict().items()}
    losses = train(model, TrainSpec("canvas", 1.0, False, 2, 2, 1e-2), CODEC, WORLD, torch.Generator().manual_seed(1))
    assert len(losses) == 2 and all(torch.isfinite(torch.tensor(losses)))
    assert not torch.equal(before["out.weight"], model.state_dict()["out.weight"])


class _Oracle(nn.Module):
    """A stand-in classifier whose window embeddings are set by hand."""

    def __init__(self, feats: torch.Tensor) -> None:
        super().__init__()
        self.feats = feats  # (B*F, D, P, P)

    def features(self, frames: torch.Tensor) -> torch.Tensor:
        return self.feats


def test_swap_and_copy_paste_scores_on_hand_made_windows():
    # identities are one-hot prototypes in D = K dimensions; a background window is the (K+1)-th direction
    k = N_IDENTITIES
    protos = torch.eye(k, k + 1)
    b, f, p = 2, 1, 11
    feats = torch.zeros(b * f, k + 1, p, p)
    feats[:, k] = 1.0  # every window: background
    # item 0: identity 3 where subject B (identity 7) was prompted and vice versa -> swapped
    feats[0, :, 5, 5], feats[0, :, 1, 1] = protos[3], protos[7]
    # item 1: identities where prompted -> not swapped; identity 3 sits where its reference sat -> copy-paste
    feats[1, :, 1, 1], feats[1, :, 5, 5] = protos[3], protos[7]
    positions = torch.tensor([[[[1, 1]], [[5, 5]]], [[[1, 1]], [[5, 5]]]])  # (B, N, F, 2)
    ref_pos = torch.tensor([[[0.0, 0.0], [9.0, 9.0]], [[1.0, 2.0], [0.0, 0.0]]])
    sc = score_clips(_Oracle(feats), protos, torch.zeros(b, 3, f, 16, 16), [(3, 7), (3, 7)], positions, ref_pos)
    assert sc.swapped == [1.0, 0.0]
    assert sc.placed == [0.0, 1.0]
    assert sc.id_sim == [1.0, 1.0]  # cos = 1 at the best window: both identities appear somewhere in both clips
    # item 1: subject 0 found at (1, 1), its reference at (1, 2): within one pixel; subject 1 at (5, 5) vs (0, 0): no
    assert sc.copy_paste == [0.0, 0.5]
    # a half-way window: cos(e_3 + e_bg, e_3) = 1/sqrt(2)
    feats[0, :, 5, 5] = protos[3] + feats[0, :, 0, 0]
    half = score_clips(
        _Oracle(feats[:1]), protos, torch.zeros(1, 3, 1, 16, 16), [(3,)], positions[:1, :1], ref_pos[:1, :1]
    )
    assert half.swapped == [None] and abs(half.id_sim[0] - 2**-0.5) < 1e-6


def test_build_batch_rejects_more_subjects_than_slots_and_unknown_layouts():
    it = _items(1, multi=True)[0]
    three = dataclasses.replace(
        it,
        identities=(*it.identities, 0),
        references=(*it.references, it.references[0]),
        ref_masks=(*it.ref_masks, it.ref_masks[0]),
    )
    with pytest.raises(ValueError, match="2 slots"):
        build_batch([three], "canvas", CODEC, WORLD, torch.Generator())
    with pytest.raises(ValueError, match="layout"):
        build_batch([it], "sideways", CODEC, WORLD, torch.Generator())


def test_reference_position_is_where_the_sprite_sits_in_the_canvas():
    items = _items(2, seed=4, multi=True)
    batch = build_batch(items, "canvas", CODEC, WORLD, torch.Generator().manual_seed(2))
    cv = composite_canvas(
        list(items[0].references),
        list(items[0].ref_masks),
        height=16,
        width=16,
        fit=False,
        generator=torch.Generator().manual_seed(2),
    )
    for i in range(2):
        y, x = (int(v) for v in batch.ref_pos[0, i])
        # the 6x6 window at ref_pos holds reference i exactly (white where its cut-out is empty)
        assert torch.equal(cv.image[:, y : y + 6, x : x + 6], items[0].references[i])
