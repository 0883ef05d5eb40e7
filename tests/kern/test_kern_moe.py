"""Tests of the MoE feed-forward block: dispatch vs a per-token reference, capacity, gradients, counts, errors."""

from __future__ import annotations

import pytest
import torch

from iclr26.common.tinylm import FFNOutput, TinyLM, TinyLMConfig
from iclr26.kern import ROUTERS, MoEFeedForward, expert_capacity, group_by_expert


def naive_moe(block: MoEFeedForward, x: torch.Tensor, keep: torch.Tensor | None = None) -> torch.Tensor:
    """Per-token loop reference: y_t = Σ_j g_tj · E_{i_tj}(x_t), skipping assignments with keep[t, j] False."""
    flat = x.reshape(-1, block.d_model)
    routed = block.router(flat)
    out = torch.zeros_like(flat)
    for t in range(flat.shape[0]):
        for j in range(block.k):
            if keep is not None and not keep[t, j]:
                continue
            e = int(routed.expert_index[t, j])
            out[t] += routed.combine_weights[t, j] * block.expert(e, flat[t : t + 1])[0]
    return out.reshape(x.shape)


def make_block(router: str = "kern", **kwargs) -> MoEFeedForward:
    torch.manual_seed(0)
    block = MoEFeedForward(12, num_experts=6, k=2, d_expert=10, router=router, **kwargs).double()
    with torch.no_grad():  # non-zero biases so that the reference also checks them
        for p in (block.b1, block.b2, block.router.proj.bias):
            p.normal_(0, 0.1)
    return block


@pytest.mark.parametrize("router", sorted(ROUTERS))
def test_dispatch_equals_per_token_reference(router):
    block = make_block(router)
    x = torch.randn(3, 7, 12, dtype=torch.float64)
    out = block(x)
    assert isinstance(out, FFNOutput) and out.y.shape == x.shape
    torch.testing.assert_close(out.y, naive_moe(block, x), rtol=1e-12, atol=1e-12)


def test_group_by_expert_hand_example():
    # Tokens 0..2, k = 2: assignments (flat index: expert) 0:2, 1:0, 2:2, 3:1, 4:0, 5:2.
    index = torch.tensor([[2, 0], [2, 1], [0, 2]])
    d = group_by_expert(index, 3)
    # Stable sort by expert: expert 0 ← flat 1, 4; expert 1 ← flat 3; expert 2 ← flat 0, 2, 5.
    assert d.assignment.tolist() == [1, 4, 3, 0, 2, 5]
    assert d.token.tolist() == [0, 2, 1, 0, 1, 2]
    assert d.counts.tolist() == [2, 1, 3] and d.dropped == 0
    # Capacity 2: expert 2 keeps its first two assignments in token order (flat 0, 2) and drops flat 5.
    d = group_by_expert(index, 3, capacity=2)
    assert d.assignment.tolist() == [1, 4, 3, 0, 2]
    assert d.counts.tolist() == [2, 1, 2] and d.dropped == 1


def test_capacity_drops_overflow_and_matches_masked_reference():
    block = make_block("softmax", capacity_factor=0.5)
    x = torch.randn(2, 9, 12, dtype=torch.float64)
    n = 18
    capacity = expert_capacity(n, 2, 6, 0.5)  # ⌈0.5 · 18 · 2 / 6⌉ = 3
    assert capacity == 3
    routed = block.router(x.reshape(-1, 12))
    # Reference mask: the c-th assignment (in token order, then slot order) to an expert is kept iff c < capacity.
    keep = torch.zeros(n, 2, dtype=torch.bool)
    seen = [0] * 6
    for t in range(n):
        for j in range(2):
            e = int(routed.expert_index[t, j])
            keep[t, j] = seen[e] < capacity
            seen[e] += 1
    out = block(x)
    torch.testing.assert_close(out.y, naive_moe(block, x, keep), rtol=1e-12, atol=1e-12)
    assert block.dropped == int((~keep).sum()) > 0
    assert int(block.load_counts.max()) <= capacity


def test_load_counts_stats_and_reset():
    block = make_block()
    x = torch.randn(4, 5, 12, dtype=torch.float64)
    block(x)
    block(x)
    assert int(block.load_counts.sum()) == 2 * 20 * 2  # two calls, N = 20 tokens, k = 2
    assert block.router_calls == 0 and block.router_time_s == 0.0
    block.time_router = True
    block(x)
    assert block.router_calls == 1 and block.router_time_s > 0
    block.reset_stats()
    assert int(block.load_counts.sum()) == 0 and block.router_calls == 0 and block.dropped == 0


def test_aux_loss_is_coefficient_times_balance_loss():
    block = make_block(aux_loss_coef=0.5)
    x = torch.randn(2, 4, 12, dtype=torch.float64)
    balance = block.router(x.reshape(-1, 12)).balance_loss
    torch.testing.assert_close(block(x).aux_loss, 0.5 * balance)
    assert make_block(aux_loss_coef=0.0)(x).aux_loss is None


def test_gradients_flow_to_router_and_experts_inside_tinylm():
    torch.manual_seed(0)
    cfg = TinyLMConfig(vocab_size=32, context_len=8, d_model=16, n_layers=2, n_heads=2, d_ff=32)
    model = TinyLM(cfg, lambda _i: MoEFeedForward(16, num_experts=4, k=2, d_expert=16, router="kern"))
    idx = torch.randint(0, 32, (4, 8))
    out = model(idx, idx)
    assert out.aux_loss.item() > 0
    (out.loss + out.aux_loss).backward()
    for i, block in enumerate(model.blocks):
        for name, p in block.ffn.named_parameters():
            assert p.grad is not None and torch.isfinite(p.grad).all(), f"layer {i} {name}"
            assert p.grad.abs().sum() > 0, f"layer {i} {name} got a zero gradient"


def test_active_parameters_match_dense_mlp_plus_router():
    # With d_expert = d_ff / k the k active experts hold exactly the dense MLP's parameters except the output bias,
    # counted k times: k·(D·H + H + H·D + D) = D·d_ff + d_ff + d_ff·D + k·D. Router: D·E + E weights and bias, + γ.
    d, d_ff, e, k = 16, 32, 4, 2
    cfg = TinyLMConfig(vocab_size=32, context_len=8, d_model=d, n_layers=2, n_heads=2, d_ff=d_ff)
    dense = TinyLM(cfg)
    moe = TinyLM(cfg, lambda _i: MoEFeedForward(d, num_experts=e, k=k, d_expert=d_ff // k, router="kern"))
    per_layer_extra = (k - 1) * d + (d * e + e) + 1
    assert moe.num_params(active=True) == dense.num_params() + cfg.n_layers * per_layer_extra
    assert moe.num_params() > moe.num_params(active=True)


def test_moe_block_errors_name_the_argument():
    block = make_block()
    with pytest.raises(ValueError, match=r"x: expected hidden size 12"):
        block(torch.randn(2, 3, 11, dtype=torch.float64))
    with pytest.raises(ValueError, match="k must lie"):
        MoEFeedForward(8, num_experts=4, k=5, d_expert=8)
    with pytest.raises(ValueError, match="capacity_factor must be positive"):
        MoEFeedForward(8, num_experts=4, k=2, d_expert=8, capacity_factor=0.0)
    with pytest.raises(ValueError, match="aux_loss_coef must be non-negative"):
        MoEFeedForward(8, num_experts=4, k=2, d_expert=8, aux_loss_coef=-1.0)
    with pytest.raises(ValueError, match="d_expert must be positive"):
        MoEFeedForward(8, num_experts=4, k=2, d_expert=0)
    with pytest.raises(ValueError, match="init_std must be non-negative"):
        MoEFeedForward(8, num_experts=4, k=2, d_expert=8, init_std=-0.02)
    with pytest.raises(ValueError, match=r"expert_index must be \(N, K\)"):
        group_by_expert(torch.tensor([0, 1, 2]), 3)
    with pytest.raises(ValueError, match="capacity must be at least 1"):
        group_by_expert(torch.tensor([[0], [1]]), 3, capacity=0)
