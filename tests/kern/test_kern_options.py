"""Router precision under bf16 autocast, sync-free dispatch, the renormalised Softmax, the auxiliary-loss-free bias,
and the gate-only timing helpers."""

from __future__ import annotations

import copy
import math

import pytest
import torch

from iclr26.kern import ROUTERS, MoEFeedForward, Router, gate_cost, gate_scores, pad_by_expert
from iclr26.kern.analysis import RouterTiming, coefficient_of_variation, median_paired_ratio, time_gates


def small_logit_router(name: str = "kern") -> tuple[Router, torch.Tensor]:
    """A router whose logits have a norm of about 0.02, where bf16's ε (2⁻⁷ ≈ 0.0078) matters."""
    torch.manual_seed(0)
    router = Router(16, 8, 2, name)
    with torch.no_grad():
        router.proj.weight.mul_(0.015)
        router.proj.bias.zero_()
    x = torch.randn(64, 16)
    return router, x


@pytest.mark.parametrize("name", ["kern", "kern_act_norm", "softmax", "softmax_renorm", "sigmoid", "tanh"])
def test_gates_under_bf16_autocast_match_a_float64_reference(name):
    router, x = small_logit_router(name)
    reference = copy.deepcopy(router).double()(x.double())  # everything in float64, ε of float64
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = router(x)
    assert out.expert_index.tolist() == reference.expert_index.tolist()
    # The gate is computed in float32 (projection included, autocast off); only the combine weights are cast back
    # to the experts' dtype, so they carry bf16's rounding (relative 2⁻⁹) and nothing else.
    assert out.logits.dtype == out.gates.dtype == torch.float32 and out.combine_weights.dtype == torch.bfloat16
    torch.testing.assert_close(out.gates.double(), reference.gates, rtol=1e-4, atol=1e-5)  # float32 ε: 1.2e-7
    torch.testing.assert_close(out.combine_weights.double(), reference.combine_weights, rtol=2**-8, atol=1e-6)


def test_bf16_epsilon_would_shrink_the_kept_gates():
    # What the float32 gate avoids: ĝ = s / (‖s‖ + ε) with bf16's ε shrinks every gate by ‖s‖ / (‖s‖ + 2⁻⁷), which
    # at ‖s‖ ≈ 0.02 is about 0.7; the router's own gates stay within 1e-5 of float64.
    router, x = small_logit_router()
    with torch.no_grad():
        ref = copy.deepcopy(router).double()(x.double())
    norm = ref.logits.norm(dim=-1)
    assert 0.005 < float(norm.median()) < 0.05
    bf16_eps = gate_scores(ref.logits.float(), activation="relu", normalization="l2", order="norm_act", eps=2**-7)
    shrink = bf16_eps.double().max(dim=-1).values / ref.gates.max(dim=-1).values
    torch.testing.assert_close(shrink, norm / (norm + 2**-7), rtol=1e-5, atol=0)
    assert float(shrink.max()) < 0.9


def test_bf16_router_without_autocast_computes_its_gate_in_float32():
    router, x = small_logit_router()
    router = router.to(torch.bfloat16)
    xb = x.to(torch.bfloat16)
    out = router(xb)
    # Reference: the same bf16 numbers, carried in float64.
    reference = copy.deepcopy(router).double()(xb.double())
    assert out.gates.dtype == torch.float32 and out.combine_weights.dtype == torch.bfloat16
    assert out.expert_index.tolist() == reference.expert_index.tolist()
    torch.testing.assert_close(out.combine_weights.double(), reference.combine_weights, rtol=2**-8, atol=1e-6)


def moe(**kw) -> MoEFeedForward:
    torch.manual_seed(1)
    args = dict(num_experts=4, k=2, d_expert=8, router="kern")
    return MoEFeedForward(12, **(args | kw))


@pytest.mark.parametrize("capacity_factor", [None, 0.5])
def test_padded_dispatch_equals_grouped_dispatch(capacity_factor):
    x = torch.randn(3, 7, 12)
    outs = {}
    for mode in ("grouped", "padded"):
        block = moe(dispatch=mode, capacity_factor=capacity_factor)
        xi = x.clone().requires_grad_(True)
        out = block(xi)
        (out.y.square().sum() + out.aux_loss).backward()
        outs[mode] = (out.y, xi.grad, block.w1.grad, block.router.proj.weight.grad, block.load_counts, block.dropped)
    for a, b in zip(outs["grouped"], outs["padded"], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    if capacity_factor is not None:
        assert int(outs["padded"][-1]) > 0  # the capacity did drop assignments, identically in both


def test_pad_by_expert_hand_example():
    # Tokens' experts (K = 2): t0 → (2, 0), t1 → (0, 2), t2 → (1, 0); E = 3, C = 2.
    # Expert 0 gets assignments 1 (t0), 2 (t1), 5 (t2): the third does not fit and is dropped.
    grid = pad_by_expert(torch.tensor([[2, 0], [0, 2], [1, 0]]), 3, capacity=2)
    assert grid.slot_assignment.tolist() == [1, 2, 4, 6, 0, 3]  # 6 = N·K marks an empty slot
    assert grid.slot_token.tolist() == [0, 1, 2, 3, 0, 1]  # 3 = N marks an empty slot
    assert grid.counts.tolist() == [2, 1, 2] and int(grid.dropped) == 1
    with pytest.raises(ValueError, match="capacity must be at least 1"):
        pad_by_expert(torch.tensor([[0]]), 1, capacity=0)


class HostSync(RuntimeError):
    pass


@pytest.fixture
def no_host_reads(monkeypatch):
    """Make every Python-level read of a tensor's value back to the host raise (what synchronises a GPU)."""

    def forbid(name):
        def raiser(*args, **kwargs):
            raise HostSync(name)

        return raiser

    for name in ("item", "tolist", "__bool__", "__int__", "__float__", "__index__", "nonzero", "numpy", "cpu"):
        monkeypatch.setattr(torch.Tensor, name, forbid(name))
    monkeypatch.setattr(torch, "nonzero", forbid("torch.nonzero"))
    monkeypatch.setattr(torch.cuda, "synchronize", forbid("torch.cuda.synchronize"))


def test_padded_dispatch_without_checks_never_reads_a_value_back(no_host_reads):
    block = moe(dispatch="padded", check_finite=False, bias_update_rate=0.01, capacity_factor=None)
    x = torch.randn(2, 5, 12, requires_grad=True)
    out = block(x)  # training mode: the bias update runs too
    (out.y.sum() + out.aux_loss).backward()
    block.eval()
    block(x)


def test_the_host_read_detector_catches_the_grouped_dispatch_and_the_finiteness_check(no_host_reads):
    x = torch.randn(2, 5, 12)
    with pytest.raises(HostSync, match="tolist"):
        moe(dispatch="grouped", check_finite=False)(x)  # the slice sizes are read on the host
    with pytest.raises(HostSync, match="__bool__"):
        moe(dispatch="padded", check_finite=True)(x)  # `if not isfinite(x).all()`


def test_finiteness_check_can_be_turned_off():
    x = torch.randn(4, 12)
    x[0, 0] = math.nan
    with pytest.raises(ValueError, match="x: contains NaN"):
        Router(12, 4, 2, "kern")(x)
    out = Router(12, 4, 2, "kern", check_finite=False)(x)
    assert torch.isnan(out.logits[0]).all() and torch.isfinite(out.logits[1:]).all()


def test_auto_dispatch_is_grouped_on_the_cpu_and_rejects_unknown_modes():
    block = moe()
    assert block.dispatch == "auto"
    with pytest.raises(ValueError, match="dispatch must be one of"):
        moe(dispatch="ragged")


def test_renormalised_softmax_preset_is_softmax_over_the_kept_logits():
    torch.manual_seed(3)
    router = Router(10, 6, 3, "softmax_renorm")
    out = router(torch.randn(5, 10))
    kept = torch.gather(out.logits, -1, out.expert_index)
    torch.testing.assert_close(out.combine_weights, torch.softmax(kept, dim=-1), rtol=1e-5, atol=1e-7)
    plain = Router(10, 6, 3, "softmax")
    plain.load_state_dict(router.state_dict())
    base = plain(torch.randn(5, 10))
    assert float(base.combine_weights.detach().sum(-1).max()) < 1.0  # the plain top-k Softmax does not sum to one
    # Cost: Softmax 6E - 2 plus the renormalisation's (K - 1) + 1 adds and K divides = 6E - 2 + 2K.
    assert gate_cost("softmax_renorm", num_experts=6, k=3).flops == 6 * 6 - 2 + 2 * 3


def one_hot_router(name: str, rate: float) -> tuple[Router, torch.Tensor]:
    """Logits = x (W = I, b = 0); x sends tokens 0-2 to expert 0 and token 3 to expert 1 (top-1)."""
    router = Router(4, 4, 1, name, bias_update_rate=rate)
    with torch.no_grad():
        router.proj.weight.copy_(torch.eye(4))
        router.proj.bias.zero_()
    x = torch.tensor([[1.0, 0, 0, 0], [1.0, 0, 0, 0], [1.0, 0, 0, 0], [0, 1.0, 0, 0]])
    return router, x


@pytest.mark.parametrize("name", sorted(ROUTERS))
def test_loss_free_bias_update_hand_computed_for_every_router(name):
    router, x = one_hot_router(name, 0.1)
    out = router(x)
    assert out.expert_index.flatten().tolist() == [0, 0, 0, 1]
    # counts c = (3, 1, 0, 0), mean 1: b ← b + u · sign(c̄ − c) = 0.1 · (−1, 0, +1, +1).
    assert router.selection_bias.tolist() == pytest.approx([-0.1, 0.0, 0.1, 0.1])
    router.eval()
    router(x)  # no update outside training
    assert router.selection_bias.tolist() == pytest.approx([-0.1, 0.0, 0.1, 0.1])
    assert "selection_bias" in router.state_dict()  # saved with checkpoints


def test_loss_free_bias_moves_the_selection_but_not_the_gates():
    router, x = one_hot_router("kern", 0.1)
    plain_gates = router(x).gates.detach()
    with torch.no_grad():
        router.selection_bias.copy_(torch.tensor([0.0, 0.0, 0.0, 5.0]))
    router.eval()
    out = router(x)
    assert out.expert_index.flatten().tolist() == [3, 3, 3, 3]
    torch.testing.assert_close(out.gates, plain_gates)
    # The weight is the gate of the chosen expert: ReLU(s̄_3) = 0 for these tokens.
    assert out.combine_weights.flatten().tolist() == [0.0, 0.0, 0.0, 0.0]
    # Off (u = 0), a bias is ignored.
    off, _ = one_hot_router("kern", 0.0)
    with torch.no_grad():
        off.selection_bias.fill_(5.0)
    assert off(x).expert_index.flatten().tolist() == [0, 0, 0, 1]
    with pytest.raises(ValueError, match="bias_update_rate must be non-negative"):
        Router(4, 4, 1, "kern", bias_update_rate=-0.1)


def test_loss_free_bias_balances_a_skewed_router():
    torch.manual_seed(0)
    router = Router(8, 4, 1, "kern", bias_update_rate=0.02)
    with torch.no_grad():
        router.proj.bias.copy_(torch.tensor([0.5, 0.0, 0.0, 0.0]))  # expert 0 wins almost every token
    x = torch.randn(512, 8) * 0.1
    before = coefficient_of_variation(torch.bincount(router(x).expert_index.flatten(), minlength=4))
    for _ in range(100):
        out = router(x)
    after = coefficient_of_variation(torch.bincount(out.expert_index.flatten(), minlength=4))
    assert before > 1.0 and after < 0.2


def test_median_paired_ratio_hand_computed():
    a = RouterTiming(4.0, 2.0, 3, (2.0, 4.0, 6.0))
    b = RouterTiming(1.0, 1.0, 3, (1.0, 1.0, 2.0))
    assert median_paired_ratio(a, b) == 3.0  # round ratios 2, 4, 3
    with pytest.raises(ValueError, match="same positive number of rounds"):
        median_paired_ratio(a, RouterTiming(1.0, 1.0, 1, (1.0,)))


def test_time_gates_times_every_gate_on_the_same_logits():
    timings = time_gates({"softmax": "softmax", "kern": "kern"}, torch.randn(32, 8), 2, repeats=3, warmup=1)
    assert set(timings) == {"softmax", "kern"}
    assert all(len(t.times_ms) == 3 and t.min_ms > 0 for t in timings.values())
    with pytest.raises(ValueError, match="repeats >= 1"):
        time_gates({"kern": "kern"}, torch.randn(4, 8), 2, repeats=0)


def test_benchmark_script_reports_the_gate_alone_with_median_paired_ratios(monkeypatch, capsys):
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "kern_router.py"
    spec = importlib.util.spec_from_file_location("kern_router_bench", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    argv = ["kern_router.py", "--tokens", "32", "--d-model", "16", "--experts", "8", "--k", "2", "--repeats", "2"]
    monkeypatch.setattr(sys, "argv", argv)
    module.main()
    out = capsys.readouterr().out
    assert "gate only" in out and "whole router" in out and "median paired ratio / softmax" in out
    # Softmax's paired ratio to itself is exactly 1; each part lists every preset.
    gate_part = out.split("gate only")[1].split("whole router")[0]
    assert all(name in gate_part for name in ROUTERS)
    assert [line.split()[3] for line in gate_part.splitlines() if line.startswith("softmax ")] == ["1.000"]
