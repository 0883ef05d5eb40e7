"""Canvas, mask and channel layout of masked guidance against hand-built cases and the official Wan-I2V shapes."""

from __future__ import annotations

import pytest
import torch

from iclr26.magref.masking import (
    block_layout,
    composite_canvas,
    dit_input,
    downsample_mask,
    latent_frames,
    mask_channels,
    masked_guidance,
    temporal_reference_frames,
)


def test_block_layouts_follow_the_official_arrangement():
    # 480x832 as the official process_refimg: 2 -> two vertical strips of 416; 4 -> 2x2; 6 -> 3 columns x 2 rows
    assert block_layout(1, 480, 832) == [(0, 0, 832, 480)]
    assert block_layout(2, 480, 832) == [(0, 0, 416, 480), (416, 0, 832, 480)]
    assert block_layout(3, 480, 832)[2] == (554, 0, 832, 480)  # the last strip takes the remainder (832 - 2*277)
    assert block_layout(4, 480, 832) == [(0, 0, 416, 240), (416, 0, 832, 240), (0, 240, 416, 480), (416, 240, 832, 480)]
    assert len(block_layout(5, 480, 832)) == 6 and block_layout(5, 480, 832)[4] == (277, 240, 554, 480)
    assert len(block_layout(7, 480, 832)) == 8 and block_layout(8, 480, 832)[3] == (624, 0, 832, 240)


def test_canvas_places_hand_made_references_with_their_masks():
    red = torch.tensor([1.0, -1.0, -1.0])[:, None, None].expand(3, 2, 2).clone()
    blue = torch.tensor([-1.0, -1.0, 1.0])[:, None, None].expand(3, 2, 2).clone()
    cut = torch.tensor([[1.0, 0.0], [1.0, 1.0]])  # blue's cut-out misses its top-right pixel
    cv = composite_canvas([red, blue], [torch.ones(2, 2), cut], height=4, width=8, fit=False, shuffle=False)
    # two 4x4 blocks; a 2x2 reference is centred at offset (1, 1) of its block
    expected_mask = torch.zeros(4, 8)
    expected_mask[1:3, 1:3] = 1
    expected_mask[1:3, 5:7] = cut
    assert torch.equal(cv.mask, expected_mask)
    assert torch.equal(cv.region_masks[0], (torch.arange(8) < 4).float()[None].expand(4, 8) * expected_mask)
    assert (cv.region_masks[0] * cv.region_masks[1]).sum() == 0  # regions never overlap
    assert torch.equal(cv.region_masks.amax(0), cv.mask)
    assert torch.equal(cv.image[:, 1, 1], torch.tensor([1.0, -1.0, -1.0]))  # red pixel
    assert torch.equal(cv.image[:, 1, 6], torch.ones(3))  # cut-out pixel: white, as padding
    assert torch.equal(cv.image[:, 2, 6], torch.tensor([-1.0, -1.0, 1.0]))
    assert torch.equal(cv.image[:, 0, 0], torch.ones(3))  # padding is white
    assert cv.blocks.tolist() == [[0, 0, 4, 4], [4, 0, 8, 4]]


def test_canvas_shuffles_blocks_but_keeps_reference_order():
    refs = [torch.full((3, 2, 2), v) for v in (-1.0, 0.0)]
    seen = set()
    for s in range(20):
        cv = composite_canvas(refs, None, height=4, width=8, fit=False, generator=torch.Generator().manual_seed(s))
        x0 = int(cv.blocks[0, 0])
        assert cv.image[0, 1, x0 + 1] == -1.0  # reference 0 sits in the block recorded for it
        seen.add(x0)
    assert seen == {0, 4}


def test_fit_resizes_keeping_the_aspect_ratio():
    ref = torch.zeros(3, 1, 2)  # w/h = 2 into a 4x4 block: width 4, height int(4 / 2) = 2, centred at row 1
    cv = composite_canvas([ref], None, height=4, width=4, fit=True, shuffle=False)
    assert cv.mask.sum() == 8 and torch.equal(cv.mask[1:3], torch.ones(2, 4))


@pytest.mark.parametrize(
    ("refs", "masks", "kwargs", "message"),
    [
        ([], None, {}, "at least one reference"),
        ([torch.zeros(3, 2, 2)] * 9, None, {}, "at most 8"),
        ([torch.zeros(3, 2, 2), torch.zeros(1, 2, 2)], None, {}, "one C"),
        ([torch.zeros(3, 2, 2)], [torch.ones(3, 2)], {}, r"valid_masks\[0\]"),
        ([torch.zeros(3, 2, 2)], [], {}, "one mask per reference"),
        ([torch.zeros(3, 5, 5)], None, {}, "does not fit"),
    ],
)
def test_canvas_rejects_bad_references(refs, masks, kwargs, message):
    with pytest.raises(ValueError, match=message):
        composite_canvas(refs, masks, height=4, width=4, fit=False, **kwargs)


def test_downsample_marks_a_cell_if_any_pixel_is_set():
    m = torch.zeros(4, 4)
    m[0, 1] = 1  # one pixel in the top-left 2x2 cell
    m[3, 3] = 1
    assert torch.equal(downsample_mask(m, 2), torch.tensor([[1.0, 0.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="multiple of the stride"):
        downsample_mask(torch.zeros(5, 4), 2)


def test_mask_channels_in_the_wan_layout():
    m = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    out = mask_channels(m, 81, 4)  # Wan: 81 frames, temporal stride 4 -> 4 channels x 21 latent frames
    assert out.shape == (4, 21, 2, 2)
    assert all(torch.equal(out[c, 0], m) for c in range(4))  # frame 0 repeated in all 4 channels
    assert out[:, 1:].abs().sum() == 0
    assert latent_frames(81, 4) == 21
    with pytest.raises(ValueError, match="n_frames"):
        mask_channels(m, 6, 4)


def test_channel_concatenation_gives_the_wan_i2v_input_width():
    z_t = torch.randn(16, 21, 6, 10)  # noisy latent, 16 channels (Wan VAE)
    y = masked_guidance(mask_channels(torch.ones(6, 10), 81, 4), torch.randn(16, 21, 6, 10))
    assert y.shape[0] == 20  # 4 mask + 16 VAE channels
    x = dit_input(z_t, y)
    assert x.shape == (36, 21, 6, 10)  # Wan I2V in_dim = 36, noisy latent first
    assert torch.equal(x[:16], z_t) and torch.equal(x[16:20], y[:4])
    xb = dit_input(z_t[None], y[None])
    assert torch.equal(xb[0], x)
    with pytest.raises(ValueError, match="differ"):
        masked_guidance(torch.zeros(4, 20, 6, 10), torch.zeros(16, 21, 6, 10))
    with pytest.raises(ValueError, match="outside channels"):
        dit_input(z_t, y[:, :20])


def test_temporal_frames_put_each_reference_on_its_own_white_frame():
    refs = [torch.zeros(3, 2, 2), torch.full((3, 2, 2), -1.0)]
    frames = temporal_reference_frames(refs, None, height=4, width=4, fit=False)
    assert frames.shape == (2, 3, 4, 4)
    assert frames[1, 0, 1, 1] == -1.0 and frames[0, 0, 1, 1] == 0.0 and frames[0, 0, 0, 0] == 1.0
    with pytest.raises(ValueError, match="at least one"):
        temporal_reference_frames([], None, height=4, width=4, fit=False)
    with pytest.raises(ValueError, match="at most 8"):
        temporal_reference_frames(refs * 5, None, height=4, width=4, fit=False)
