"""The tiny transformer LM: causality, RoPE, the feed-forward contract, parameter and FLOP counts, cached decoding."""

import math

import pytest
import torch
from torch import nn

from iclr26.common.tinylm import FFNOutput, TinyLM, TinyLMConfig, apply_rope, rope_tables

SMALL = TinyLMConfig(context_len=16, d_model=32, n_layers=2, n_heads=4, d_ff=64)


@pytest.mark.parametrize("positional", ["rope", "learned"])
def test_changing_a_future_token_leaves_earlier_logits_unchanged(positional):
    torch.manual_seed(0)
    model = TinyLM(TinyLMConfig(**{**SMALL.__dict__, "positional": positional})).eval()
    idx = torch.randint(0, 256, (2, 16))
    changed = idx.clone()
    changed[:, 9] = (changed[:, 9] + 1) % 256
    a, b = model(idx).logits, model(changed).logits
    torch.testing.assert_close(a[:, :9], b[:, :9], rtol=0, atol=0)
    assert not torch.allclose(a[:, 9:], b[:, 9:])  # the changed position and later ones do see it


def test_rope_rotates_pairs_and_preserves_norms_and_relative_angles():
    cos, sin = rope_tables(5, 4, 10_000.0, dtype=torch.float64)
    # pair 0 of position t turns by angle t (base^0 = 1): (1, 0) -> (cos t, sin t)
    x = torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=torch.float64).expand(1, 1, 5, 4)
    y = apply_rope(x, cos, sin)
    torch.testing.assert_close(y[0, 0, :, 0], torch.arange(5.0, dtype=torch.float64).cos())
    torch.testing.assert_close(y[0, 0, :, 1], torch.arange(5.0, dtype=torch.float64).sin())
    q, k = torch.randn(1, 1, 5, 4, dtype=torch.float64), torch.randn(1, 1, 5, 4, dtype=torch.float64)
    torch.testing.assert_close(apply_rope(q, cos, sin).norm(dim=-1), q.norm(dim=-1))
    # <R_m q, R_n k> depends on m - n only: same vectors at positions (1, 3) and (2, 4) give the same score
    qs, ks = q[:, :, :1].expand(1, 1, 5, 4), k[:, :, :1].expand(1, 1, 5, 4)
    rq, rk = apply_rope(qs, cos, sin), apply_rope(ks, cos, sin)
    assert torch.isclose((rq[..., 1, :] * rk[..., 3, :]).sum(), (rq[..., 2, :] * rk[..., 4, :]).sum())


def _rope_real_form(x, cos, sin):
    """The defining real form, written out: (x_2i cos - x_2i+1 sin, x_2i sin + x_2i+1 cos)."""
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_rope_complex_path_equals_the_real_form(dtype):
    cos, sin = rope_tables(7, 8, 10_000.0, dtype=dtype)
    g = torch.Generator().manual_seed(0)
    qkv = torch.randn(2, 7, 3, 3, 8, generator=g, dtype=dtype).permute(2, 0, 3, 1, 4)  # (3, B, H, T, Dh), strided
    odd = torch.randn(2, 3, 7, 9, generator=g, dtype=dtype)[..., :8]  # odd strides: no complex view without a copy
    ulp = torch.finfo(dtype).eps
    for x in (qkv[:2], qkv[0], odd):
        # one complex multiplication rounds like the real form up to one rounding of each product
        torch.testing.assert_close(apply_rope(x, cos, sin), _rope_real_form(x, cos, sin), rtol=4 * ulp, atol=4 * ulp)
    # q and k rotated together (as the attention does) equal q and k rotated one by one
    both = apply_rope(qkv[:2], cos, sin)
    assert torch.equal(both[1], apply_rope(qkv[1], cos, sin))
    assert not torch.allclose(apply_rope(odd, cos, sin), odd)  # it does rotate


def test_rope_in_bfloat16_matches_float64_to_bf16_precision():
    cos64, sin64 = rope_tables(6, 8, 10_000.0, dtype=torch.float64)
    cos, sin = rope_tables(6, 8, 10_000.0, dtype=torch.bfloat16)
    x = torch.randn(1, 2, 6, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    y = apply_rope(x.bfloat16(), cos, sin)
    assert y.dtype == torch.bfloat16
    torch.testing.assert_close(y.double(), _rope_real_form(x, cos64, sin64), atol=0.05, rtol=0.02)


def test_rope_tables_are_cached_and_usable_for_backward_after_inference_mode():
    with torch.inference_mode():
        cos, sin = rope_tables(5, 4, 500.0)
    assert rope_tables(5, 4, 500.0)[0] is cos  # one table per (T, Dh, base, device, dtype)
    x = torch.randn(1, 1, 5, 4, requires_grad=True)
    apply_rope(x, cos, sin).sum().backward()  # inference tensors could not be saved for backward
    assert x.grad is not None and torch.isfinite(x.grad).all()


class ScaledFFN(nn.Module):
    """A toy feed-forward block with an auxiliary loss and a declared active-parameter count."""

    def __init__(self, d):
        super().__init__()
        self.lin = nn.Linear(d, d)
        self.unused = nn.Linear(d, d)  # stands for experts a token does not visit

    def forward(self, x):
        return FFNOutput(self.lin(x), x.pow(2).mean() * 0.5)

    def active_parameters(self):
        return sum(p.numel() for p in self.lin.parameters())


def test_pluggable_ffn_aux_loss_is_summed_and_counts_use_active_parameters():
    torch.manual_seed(0)
    model = TinyLM(SMALL, ffn_factory=lambda i: ScaledFFN(SMALL.d_model))
    idx = torch.randint(0, 256, (2, 8))
    out = model(idx, idx)
    assert out.aux_loss.ndim == 0 and out.aux_loss > 0 and out.loss is not None
    out.aux_loss.backward()
    assert model.blocks[0].ffn.lin.weight.grad is not None
    unused = sum(p.numel() for p in model.blocks[0].ffn.unused.parameters())
    assert model.num_params() - model.num_params(active=True) == SMALL.n_layers * unused
    d, L, T = SMALL.d_model, SMALL.n_layers, SMALL.context_len
    expected = 6 * (model.num_params(active=True) + 256 * d) + 6 * L * T * d  # Kaplan: 6N + 6 L T D, head counted
    assert model.flops_per_token() == expected


def test_dense_model_parameter_count_by_hand():
    model = TinyLM(SMALL)
    d, f, L = 32, 64, 2
    per_block = 2 * 2 * d + (3 * d * d + 3 * d) + (d * d + d) + (d * f + f) + (f * d + d)  # 2 LN, qkv, proj, mlp
    assert model.num_params() == L * per_block + 2 * d  # + final LayerNorm; tied head counted with embeddings
    assert model.num_params(embeddings=True) == model.num_params() + 256 * d


def test_initial_loss_is_near_uniform_and_errors_are_clear():
    torch.manual_seed(0)
    model = TinyLM(SMALL)
    idx, targets = torch.randint(0, 256, (4, 16)), torch.randint(0, 256, (4, 16))
    # small init: logits ~ 0, so the loss of independent random targets is ~ ln 256
    assert abs(model(idx, targets).loss.item() - math.log(256)) < 0.1
    with pytest.raises(ValueError, match="exceeds context_len=16"):
        model(torch.zeros(1, 17, dtype=torch.long))
    with pytest.raises(ValueError, match=r"\(B, T\) long tensor"):
        model(torch.zeros(1, 4))
    with pytest.raises(ValueError, match="targets shape"):
        model(idx, idx[:, :3])
    with pytest.raises(ValueError, match="'n_heads': must divide d_model"):
        TinyLMConfig(d_model=30, n_heads=4)
    bad = TinyLM(SMALL, ffn_factory=lambda i: nn.Linear(SMALL.d_model, 3))
    with pytest.raises(ValueError, match="feed-forward block returned shape"):
        bad(idx)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
# float32: 8 and 12 take the contiguous product, 16 and 32 not; 32 and 64 (float64: 16 and up) take the rotations laid
# out per head, 3 heads a row length that is no power of two
@pytest.mark.parametrize("head_dim,n_heads", [(8, 2), (12, 2), (16, 2), (32, 2), (64, 3)])
def test_fused_rope_attention_equals_the_autograd_rotation_bit_for_bit(dtype, head_dim, n_heads):
    # in float32/64 the attention rotates q and k in one autograd node (_RopeQKV) whose backward is
    # written by hand; it must give the outputs and gradients of apply_rope on qkv[:2] under autograd, bit for bit
    from iclr26.common.tinylm import rope_rotations

    torch.manual_seed(0)
    d = n_heads * head_dim
    cfg = TinyLMConfig(d_model=d, n_heads=n_heads, n_layers=1, context_len=9)
    attn = TinyLM(cfg).blocks[0].attn.to(dtype)
    x0 = torch.randn(3, 9, d, dtype=dtype)
    w = torch.randn(3, 9, d, dtype=dtype)
    cos, sin = rope_tables(9, head_dim, cfg.rope_base, dtype=dtype)
    fused = (cos, sin) + rope_rotations(9, head_dim, float(cfg.rope_base), torch.device("cpu"), dtype, n_heads)
    results = []
    for rope in (fused, (cos, sin)):
        x = x0.clone().requires_grad_(True)
        y = attn(x, rope)
        grads = torch.autograd.grad((y * w).sum(), [x, attn.qkv.weight, attn.qkv.bias])
        results.append((y.detach(), *grads))
    for a, b in zip(*results, strict=True):
        assert torch.equal(a, b)
    assert not torch.equal(results[0][0], attn(x0, None))  # the rotation is applied


@pytest.mark.parametrize("d_model,n_heads", [(32, 4), (128, 4)])  # head widths 8 and 32 (rotations laid out per head)
def test_tinylm_training_steps_are_the_same_with_and_without_the_fused_rotation(monkeypatch, d_model, n_heads):
    # three AdamW steps of a whole model: the fused path (default) against the unfused one, bit for bit
    from iclr26.common import tinylm

    def train():
        torch.manual_seed(0)
        model = TinyLM(TinyLMConfig(d_model=d_model, n_heads=n_heads, n_layers=2, context_len=16))
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
        idx = torch.randint(0, 256, (2, 16), generator=torch.Generator().manual_seed(1))
        for _ in range(3):
            opt.zero_grad()
            model(idx, idx.roll(-1, 1)).loss.backward()
            opt.step()
        return [p.detach().clone() for p in model.parameters()]

    fused = train()
    monkeypatch.setattr(tinylm, "_RopeQKV", None)  # must not be reached on the unfused path
    monkeypatch.setattr(tinylm, "rope_rotations", lambda *a: ())
    unfused = train()
    assert all(torch.equal(a, b) for a, b in zip(fused, unfused, strict=True))


def test_rope_attention_under_autocast_takes_the_real_form():
    # under autocast the projection runs in bfloat16 while the residual stream and the tables stay float32 (CUDA's
    # autocast keeps embeddings in float32): the fused complex rotation must step aside (view_as_complex has no
    # bfloat16) and the real-form rotation runs
    from iclr26.common.tinylm import rope_rotations

    torch.manual_seed(0)
    attn = TinyLM(SMALL).blocks[0].attn
    x = torch.randn(2, 8, 32, requires_grad=True)
    cos, sin = rope_tables(8, 8, SMALL.rope_base)
    rope = (cos, sin) + rope_rotations(8, 8, float(SMALL.rope_base), torch.device("cpu"), torch.float32, 4)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = attn(x, rope)
        y_real = attn(x, (cos, sin))  # the real-form rotation
    assert torch.equal(y, y_real)
    y.float().sum().backward()
    assert y.dtype == torch.bfloat16 and torch.isfinite(x.grad).all()


# ------------------------------------------------------------------------------------------------ generate
GEN = TinyLMConfig(vocab_size=23, context_len=40, d_model=16, n_layers=2, n_heads=2, d_ff=32)
EOS, PAD = 22, 0


def _varied_model(seed: int = 0) -> TinyLM:
    torch.manual_seed(seed)
    model = TinyLM(GEN).eval()
    with torch.no_grad():  # larger weights than the init, so continuations vary from step to step
        for p in model.parameters():
            p.mul_(8.0)
    return model


def _reference(model, prompt, max_new, *, temperature=0.0, generator=None):
    """Decoding by the full forward pass over the growing, unpadded sequence (no cache)."""
    x, out = torch.tensor([prompt]), []
    for _ in range(max_new):
        last = model(x).logits[0, -1]
        if temperature > 0:
            t = int(torch.multinomial(torch.softmax(last / temperature, -1)[None], 1, generator=generator))
        else:
            t = int(last.argmax())
        out.append(t)
        if t == EOS:
            break
        x = torch.cat([x, torch.tensor([[t]])], dim=1)
    return out


def test_generate_greedy_equals_the_full_forward_pass_with_left_padding():
    model = _varied_model()
    prompts = [[3, 4, 5, 6, 7, 8], [9, 10], [11, 12, 13], [14]]  # left-padded to 6 in one batch
    with torch.no_grad():
        want = [_reference(model, p, 12) for p in prompts]
    got = model.generate(prompts, max_new_tokens=12, eos_id=EOS, pad_id=PAD)
    assert got.rows() == want
    assert got.lengths.tolist() == [len(r) for r in want]
    assert got.finished.tolist() == [r[-1] == EOS for r in want]
    assert len({tuple(r) for r in want}) > 1 and any(len(set(r)) > 1 for r in want)  # the test can tell rows apart
    # after a row's end the tokens are padding
    for i, n in enumerate(got.lengths.tolist()):
        assert (got.tokens[i, n:] == PAD).all()


def test_generate_rows_do_not_depend_on_their_batch():
    model = _varied_model(2)
    prompts = [[3, 4, 5], [6], [7, 8, 9, 10, 11, 12, 13]]
    batch = model.generate(prompts, max_new_tokens=10, eos_id=EOS, pad_id=PAD).rows()
    alone = [model.generate([p], max_new_tokens=10, eos_id=EOS, pad_id=PAD).rows()[0] for p in prompts]
    assert batch == alone


def test_generate_sampling_is_reproducible_under_a_generator_and_equals_the_reference_sampler():
    model = _varied_model(3)
    prompt = [4, 5, 6]

    def sample(seed, temperature=1.0):
        g = torch.Generator().manual_seed(seed)
        return model.generate([prompt], max_new_tokens=15, eos_id=EOS, temperature=temperature, generator=g).rows()[0]

    assert sample(0) == sample(0)
    assert len({tuple(sample(s)) for s in range(6)}) > 1  # sampling does vary with the seed
    with torch.no_grad():
        want = _reference(model, prompt, 15, temperature=0.7, generator=torch.Generator().manual_seed(11))
    assert sample(11, 0.7) == want  # one draw per step from softmax(logits / T), as the reference sampler
    before = model.training
    model.train()
    sample(0)
    assert model.training  # the model's mode is restored
    model.train(before)


def test_generate_stops_at_eos_and_checks_its_inputs():
    model = _varied_model(4)
    first = model.generate([[3, 4]], max_new_tokens=1, eos_id=EOS).rows()[0][0]
    out = model.generate([[3, 4], [3, 4]], max_new_tokens=8, eos_id=first, pad_id=PAD)
    assert out.rows() == [[first], [first]] and out.finished.all() and out.tokens.shape == (2, 1)
    empty = model.generate([[3]], max_new_tokens=0, eos_id=EOS)
    assert empty.rows() == [[]] and not empty.finished.any()
    with pytest.raises(ValueError, match="exceeds context_len=40"):
        model.generate([[3] * 30], max_new_tokens=11, eos_id=EOS)
    with pytest.raises(ValueError, match="at least one token"):
        model.generate([[3], []], max_new_tokens=2, eos_id=EOS)
    with pytest.raises(ValueError, match="positional='rope'"):
        TinyLM(TinyLMConfig(**{**GEN.__dict__, "positional": "learned"})).generate([[3]], max_new_tokens=1, eos_id=EOS)
