"""Tokenizer round trip, patchify, VQ, the causal transformer's masking, the loss and the AR sampler."""

from __future__ import annotations

import pytest
import torch

from iclr26.common.seeding import torch_generator
from iclr26.nextstep.data import load_digits_set, prompt_ids
from iclr26.nextstep.heads import DiscreteHead, FlowMatchingHead, RegressionHead
from iclr26.nextstep.model import ARTransformer, nextstep_loss
from iclr26.nextstep.sampler import generate
from iclr26.nextstep.tokenizer import (
    ConvAutoencoder,
    TokenizerSpec,
    VectorQuantizer,
    channel_norm,
    patchify,
    train_tokenizer,
    unpatchify,
)


def test_patchify_layout_and_inverse():
    z = torch.arange(2 * 3 * 4 * 4, dtype=torch.float32).reshape(2, 3, 4, 4)
    tok = patchify(z, 2)
    assert tok.shape == (2, 4, 12)
    # token 1 = top-right 2x2 patch; its first 4 entries are channel 0's pixels (0,2),(0,3),(1,2),(1,3)
    assert tok[0, 1, :4].tolist() == [2.0, 3.0, 6.0, 7.0]
    assert torch.equal(unpatchify(tok, 2, 3), z)
    with pytest.raises(ValueError, match="divisible"):
        patchify(torch.zeros(1, 1, 5, 5), 2)


def test_channel_norm_standardises_each_token():
    t = channel_norm(torch.randn(3, 5, 16) * 4 + 2)
    assert torch.allclose(t.mean(-1), torch.zeros(3, 5), atol=1e-5)
    assert torch.allclose(t.var(-1, unbiased=False), torch.ones(3, 5), atol=1e-3)


def test_tokenizer_round_trip_error_is_small():
    # 300 steps on 400 digits: held-out reconstruction MSE must be well below the pixel variance (~0.17)
    digits = load_digits_set()
    train, test = digits.images[:400], digits.images[1500:1600]
    torch.manual_seed(0)
    tok = train_tokenizer(
        train, TokenizerSpec("continuous", 4, 2, 16), steps=300, noise_strength=0.1, generator=torch_generator(0)
    )
    mse = ((tok.reconstruct(test) - test) ** 2).mean().item()
    variance = test.var().item()
    assert mse < 0.1 * variance, (mse, variance)
    tokens, codes = tok.tokens(test)
    assert tokens.shape == (100, 4, 16) and codes is None
    assert torch.allclose(tokens.mean(-1), torch.zeros(100, 4), atol=1e-4)  # channel-normalised


def test_vq_tokens_are_codebook_entries():
    vq = VectorQuantizer(5, 3)
    z = torch.randn(2, 4, 3, requires_grad=True)
    q = vq(z)
    assert torch.allclose(q.tokens, vq.codebook[q.codes])
    # nearest code: no other code is closer
    d = torch.cdist(z.detach().reshape(-1, 3), vq.codebook.detach())
    assert torch.equal(d.argmin(-1), q.codes.reshape(-1))
    q.tokens.sum().backward()  # straight-through: gradient 1 reaches z
    assert torch.allclose(z.grad, torch.ones_like(z))


def test_tokenizer_rejects_bad_images():
    ae = ConvAutoencoder(latent_channels=2, patch=2)
    with pytest.raises(ValueError, match="images must have shape"):
        ae.encode(torch.zeros(2, 3, 8, 8))
    with pytest.raises(ValueError, match="divisible"):
        ae.encode(torch.zeros(2, 1, 6, 6))
    with pytest.raises(ValueError, match="NaN"):
        ae.encode(torch.full((2, 1, 8, 8), float("nan")))
    with pytest.raises(ValueError, match="tokens must have shape"):
        ae.decode(torch.zeros(2, 4, 7))
    with pytest.raises(ValueError, match="noise_strength"):
        train_tokenizer(torch.zeros(4, 1, 8, 8), TokenizerSpec("continuous", 2, 2, 4), steps=1, noise_strength=-1,
                        generator=torch_generator(0))  # fmt: skip


def _model(token_dim=4):
    torch.manual_seed(0)
    return ARTransformer(vocab_size=13, token_dim=token_dim, d_model=16, n_layers=2, n_heads=2, context_len=12).eval()


def test_no_position_sees_the_future():
    model = _model()
    text = torch.tensor([[12, 3, 11]])
    image = torch.randn(1, 5, 4)
    base = model(text, image)
    for k in range(5):
        changed = image.clone()
        changed[0, k] += 10.0
        out = model(text, changed)
        # image_cond[i] sits at position S-1+i and conditions token i: it may see tokens < i only
        assert torch.allclose(out.image_cond[0, : k + 1], base.image_cond[0, : k + 1], atol=1e-6)
        assert not torch.allclose(out.image_cond[0, k + 1 :], base.image_cond[0, k + 1 :])
        assert torch.allclose(out.text_logits, base.text_logits, atol=1e-6)
    other = model(torch.tensor([[12, 4, 11]]), image)
    assert not torch.allclose(other.image_cond[0, 0], base.image_cond[0, 0])  # the prompt conditions token 0


def test_model_rejects_bad_input():
    model = _model()
    with pytest.raises(ValueError, match="text must be"):
        model(torch.zeros(1, 3), torch.zeros(1, 2, 4))
    with pytest.raises(ValueError, match="image must have shape"):
        model(torch.zeros(1, 3, dtype=torch.long), torch.zeros(1, 2, 5))
    with pytest.raises(ValueError, match="context_len"):
        model(torch.zeros(1, 3, dtype=torch.long), torch.zeros(1, 10, 4))


def test_loss_weights_text_and_image_terms():
    model = _model()
    head = RegressionHead(4, 16, dim=8, layers=1)
    text = prompt_ids(torch.tensor([1, 2]), 10)
    image = torch.randn(2, 3, 4)
    parts = nextstep_loss(model, head, text, image, lm_weight=0.01, im_weight=1.0)
    # the regression head starts at zero output, so the image loss is mean(image^2)
    assert parts.image.item() == pytest.approx((image**2).mean().item(), rel=1e-5)
    assert parts.total.item() == pytest.approx(0.01 * parts.text.item() + parts.image.item(), rel=1e-5)
    # the text CE at initialisation is near log V (small logits)
    assert parts.text.item() == pytest.approx(torch.log(torch.tensor(13.0)).item(), abs=0.1)


@pytest.mark.parametrize("kind", ["fm", "reg", "vq"])
def test_generate_shapes_and_feedback(kind):
    model = _model()
    codebook = torch.randn(6, 4)
    head = {
        "fm": FlowMatchingHead(4, 16, dim=8, layers=1),
        "reg": RegressionHead(4, 16, dim=8, layers=1),
        "vq": DiscreteHead(6, 16, token_dim=4, dim=8, layers=1),
    }[kind]
    labels = torch.tensor([0, 1, 2])
    out = generate(
        model, head, prompt_ids(labels, 10), num_tokens=3, null_prompts=prompt_ids(labels, 10, null=True),
        cfg_scale=2.0, steps=4, codebook=codebook, generator=torch_generator(0),
    )  # fmt: skip
    assert out.shape == (3, 3, 4)
    if kind == "vq":
        assert all(any(torch.equal(row, c) for c in codebook) for row in out.reshape(-1, 4))
    else:
        assert torch.allclose(out.mean(-1), torch.zeros(3, 3), atol=1e-5)  # fed back layer-normalised
    with pytest.raises(ValueError, match="null_prompts"):
        generate(model, head, prompt_ids(labels, 10), num_tokens=2, cfg_scale=2.0, codebook=codebook)
