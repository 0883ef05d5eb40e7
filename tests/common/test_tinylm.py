"""The tiny transformer LM: causality, RoPE, the feed-forward contract, parameter and FLOP counts."""

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
