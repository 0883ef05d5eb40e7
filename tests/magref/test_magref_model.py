"""Subject disentanglement: the value injection touches only the subject's region, with the layer's own values."""

from __future__ import annotations

import pytest
import torch

from iclr26.magref.data import ROLES, VOCAB
from iclr26.magref.model import TinyVideoDiT, inject_values, subject_values


def test_subject_values_average_the_subjects_tokens():
    values = torch.tensor([[[1.0, 0.0], [3.0, 2.0], [5.0, 4.0]]])  # (B=1, J=3, D=2)
    tokens = torch.tensor([[[True, True, False], [False, False, False]]])  # subject 0: tokens 0, 1; subject 1: none
    out = subject_values(values, tokens)
    # subject 0: mean of (1, 0) and (3, 2) = (2, 1); a subject without tokens gets 0
    assert torch.equal(out, torch.tensor([[[2.0, 1.0], [0.0, 0.0]]]))
    with pytest.raises(ValueError, match="disagree"):
        subject_values(values, tokens[:, :, :2])


def test_injection_only_touches_the_subjects_region():
    h = torch.randn(1, 4, 3)
    regions = torch.tensor([[[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]]])  # subject 0 -> token 0, 1 -> token 2
    v = torch.tensor([[[1.0, 2.0, 3.0], [10.0, 20.0, 30.0]]])
    out = inject_values(h, regions, v, 0.5)
    # h'_0 = h_0 + 0.5 v_0; h'_2 = h_2 + 0.5 v_1; tokens 1 and 3 unchanged
    assert torch.allclose(out[0, 0], h[0, 0] + torch.tensor([0.5, 1.0, 1.5]))
    assert torch.allclose(out[0, 2], h[0, 2] + torch.tensor([5.0, 10.0, 15.0]))
    assert torch.equal(out[0, 1], h[0, 1]) and torch.equal(out[0, 3], h[0, 3])
    assert torch.equal(inject_values(h, regions, v, 0.0), h)
    with pytest.raises(ValueError, match="regions"):
        inject_values(h, regions[:, :, :3], v, 1.0)
    with pytest.raises(ValueError, match="values"):
        inject_values(h, regions, v[:, :1], 1.0)


def _model():
    torch.manual_seed(0)
    m = TinyVideoDiT(
        in_channels=100,
        out_channels=48,
        max_frames=3,
        height=2,
        width=2,
        dim=8,
        depth=2,
        heads=2,
        vocab=len(VOCAB),
        max_subjects=2,
        roles=ROLES,
    )
    for p in m.parameters():  # zero-initialised heads would hide every difference
        torch.nn.init.normal_(p, std=0.3)
    return m


def test_model_shapes_and_that_alpha_zero_turns_the_injection_off():
    m = _model()
    x, t = torch.randn(2, 100, 2, 2, 2), torch.rand(2)
    tokens = torch.tensor([[1, 5, 8, 12, 16, 2, 5, 8, 13, 17], [1, 5, 8, 12, 16, 0, 0, 0, 0, 0]])
    sub = torch.zeros(2, 2, 10, dtype=torch.bool)
    sub[:, 0, :3] = True
    sub[0, 1, 5:8] = True
    reg = torch.zeros(2, 2, 2, 2, 2)
    reg[:, 0, 0, 0, 0] = 1.0
    plain = m(x, t, tokens)
    assert plain.shape == (2, 48, 2, 2, 2)
    assert torch.equal(m(x, t, tokens, regions=reg, subject_tokens=sub, alpha=0.0), plain)
    assert not torch.allclose(m(x, t, tokens, regions=reg, subject_tokens=sub, alpha=1.0), plain)


def test_injection_uses_each_layers_value_projection():
    m = _model()
    x, t = torch.randn(1, 100, 2, 2, 2), torch.rand(1)
    tokens = torch.tensor([[1, 5, 8, 12, 16, 0, 0, 0, 0, 0]])
    sub = torch.zeros(1, 2, 10, dtype=torch.bool)
    sub[0, 0, :3] = True
    reg = torch.zeros(1, 2, 2, 2, 2)
    reg[0, 0, 0, 1, 1] = 1.0
    seen = []
    hook = m.blocks[1].v.register_forward_hook(lambda mod, inp, out: seen.append(out.detach()))
    m(x, t, tokens, regions=reg, subject_tokens=sub, alpha=1.0)
    hook.remove()
    assert len(seen) == 1  # block 1's value projection ran once, for both cross-attention and injection
    with torch.no_grad():
        m.blocks[1].v.weight.zero_()
        m.blocks[1].v.bias.zero_()
    # with block 1's values zero, its injection adds nothing: same output with and without regions in block 1 alone
    full = m(x, t, tokens, regions=reg, subject_tokens=sub, alpha=1.0)
    m.blocks[0].v.weight.data.zero_()
    m.blocks[0].v.bias.data.zero_()
    assert torch.allclose(m(x, t, tokens, regions=reg, subject_tokens=sub, alpha=1.0), m(x, t, tokens))
    assert full.shape == (1, 48, 2, 2, 2)


def test_model_rejects_bad_inputs():
    m = _model()
    tokens = torch.ones(1, 10, dtype=torch.long)
    with pytest.raises(ValueError, match="channels"):
        m(torch.randn(1, 99, 2, 2, 2), torch.rand(1), tokens)
    with pytest.raises(ValueError, match="exceeds"):
        m(torch.randn(1, 100, 4, 2, 2), torch.rand(1), tokens)
    with pytest.raises(ValueError, match="heads"):
        TinyVideoDiT(
            in_channels=4,
            out_channels=2,
            max_frames=1,
            height=1,
            width=1,
            dim=6,
            depth=1,
            heads=4,
            vocab=3,
            max_subjects=1,
            roles=1,
        )
