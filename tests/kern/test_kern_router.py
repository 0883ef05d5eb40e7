"""Tests of the KERN router family: hand-computed gates, reductions to Softmax/Sigmoid, top-k, balance loss, errors."""

from __future__ import annotations

import math

import pytest
import torch

from iclr26.kern import (
    ROUTERS,
    GateCost,
    MoEFeedForward,
    Router,
    RouterSpec,
    activate,
    gate_cost,
    gate_scores,
    normalize,
    projection_flops,
    select_top_k,
    switch_balance_loss,
)
from iclr26.kern.analysis import init_output_second_moment


def identity_router(spec: str | RouterSpec, k: int, n: int = 4) -> Router:
    """A float64 router whose logits equal its input (W = I, b = 0), so tests can choose the logits directly."""
    router = Router(n, n, k, spec, eps=1e-30).double()
    with torch.no_grad():
        router.proj.weight.copy_(torch.eye(n, dtype=torch.float64))
        router.proj.bias.zero_()
    return router


def test_kern_gates_hand_computed_norm_then_relu():
    # s = (3, 4, -12, 0): ‖s‖₂ = 13, s̄ = (3, 4, -12, 0)/13, ReLU(s̄) = (3/13, 4/13, 0, 0);
    # with γ = 2: ĝ = (6/13, 8/13, 0, 0). Top-2 by s: experts 1 (s=4) then 0 (s=3); no renormalisation.
    router = identity_router("kern", k=2)
    with torch.no_grad():
        router.gamma.fill_(2.0)
    out = router(torch.tensor([[3.0, 4.0, -12.0, 0.0]], dtype=torch.float64))
    torch.testing.assert_close(out.gates, torch.tensor([[6 / 13, 8 / 13, 0.0, 0.0]], dtype=torch.float64))
    assert out.expert_index.tolist() == [[1, 0]]
    torch.testing.assert_close(out.combine_weights, torch.tensor([[8 / 13, 6 / 13]], dtype=torch.float64))


def test_kern_gates_hand_computed_relu_then_norm():
    # Other order, Eq. (4): ReLU(s) = (3, 4, 0, 0), ‖·‖₂ = 5, so ĝ = γ (0.6, 0.8, 0, 0); γ = 1 at initialisation.
    router = identity_router("kern_act_norm", k=2)
    out = router(torch.tensor([[3.0, 4.0, -12.0, 0.0]], dtype=torch.float64))
    torch.testing.assert_close(out.gates, torch.tensor([[0.6, 0.8, 0.0, 0.0]], dtype=torch.float64))
    torch.testing.assert_close(out.combine_weights, torch.tensor([[0.8, 0.6]], dtype=torch.float64))


def test_kern_gamma_starts_at_one_and_is_the_only_new_parameter():
    kern, softmax = Router(8, 4, 2, "kern"), Router(8, 4, 2, "softmax")
    assert kern.gamma.item() == 1.0
    extra = {n for n, _ in kern.named_parameters()} - {n for n, _ in softmax.named_parameters()}
    assert extra == {"gamma"}
    assert sum(p.numel() for p in kern.parameters()) == sum(p.numel() for p in softmax.parameters()) + 1


def test_kern_fewer_positive_scores_than_k_gives_zero_weights():
    # s = (5, -1, -2, -3): only expert 0 has a positive normalised score; top-2 keeps experts 0 and 1 (the larger
    # logit among the ties at ReLU = 0), expert 1 with weight 0. ĝ_0 = 5 / √(25 + 1 + 4 + 9) = 5 / √39.
    out = identity_router("kern", k=2)(torch.tensor([[5.0, -1.0, -2.0, -3.0]], dtype=torch.float64))
    assert out.expert_index.tolist() == [[0, 1]]
    torch.testing.assert_close(out.combine_weights, torch.tensor([[5 / math.sqrt(39), 0.0]], dtype=torch.float64))


def test_softmax_router_is_exp_then_l1_of_the_family():
    # The family member exp + ℓ1 (activation first) with γ = 1 is softmax over all experts, then top-k.
    torch.manual_seed(0)
    logits = torch.randn(50, 8, dtype=torch.float64) * 3
    probs = torch.softmax(logits, dim=-1)  # reference written independently of the package
    ref_w, ref_i = probs.topk(3, dim=-1)
    out = identity_router("softmax", k=3, n=8)(logits)
    assert torch.equal(out.expert_index, ref_i)
    torch.testing.assert_close(out.combine_weights, ref_w)
    # The generic path exp(s) / ‖exp(s)‖₁ (no log-sum-exp shortcut) agrees with softmax for moderate logits.
    torch.testing.assert_close(normalize(activate(logits, "exp"), "l1", 0.0), probs)


def test_softmax_with_top_k_renormalisation_is_softmax_over_the_top_k_logits():
    # Renormalising the kept softmax probabilities gives softmax over the kept logits (Mixtral's formulation):
    # p_i / Σ_{j∈K} p_j = e^{s_i} / Σ_{j∈K} e^{s_j}.
    torch.manual_seed(1)
    logits = torch.randn(40, 8, dtype=torch.float64)
    spec = RouterSpec(activation="exp", normalization="l1", order="act_norm", renormalize=True)
    out = identity_router(spec, k=2, n=8)(logits)
    top = logits.topk(2, dim=-1).values
    torch.testing.assert_close(out.combine_weights, torch.softmax(top, dim=-1))


def test_sigmoid_router_is_sigmoid_without_normalisation_renormalised_over_selected():
    # DeepSeek-V3 style reference: σ(s), top-k by score, selected weights divided by their sum.
    torch.manual_seed(2)
    logits = torch.randn(60, 8, dtype=torch.float64) * 2
    scores = torch.sigmoid(logits)
    ref_v, ref_i = scores.topk(2, dim=-1)
    out = identity_router("sigmoid", k=2, n=8)(logits)
    assert torch.equal(out.expert_index, ref_i)
    torch.testing.assert_close(out.combine_weights, ref_v / ref_v.sum(-1, keepdim=True))
    torch.testing.assert_close(out.gates, scores)  # the dense gates are σ(s): "no normalisation"


def test_tanh_router_gates_are_tanh_of_logits():
    torch.manual_seed(3)
    logits = torch.randn(10, 8, dtype=torch.float64)
    out = identity_router("tanh", k=2, n=8)(logits)
    torch.testing.assert_close(out.gates, torch.tanh(logits))


@pytest.mark.parametrize("name", sorted(ROUTERS))
def test_top_k_on_logits_selects_the_largest_gates(name):
    # Every activation of the family is non-decreasing and every normalisation divides by a positive number, so
    # the experts chosen by their logits carry the largest dense gates ĝ: the smallest chosen gate is at least the
    # largest gate left out (ties, e.g. KERN's zeros, may go either way). Checked on ĝ, before any renormalisation.
    torch.manual_seed(4)
    out = identity_router(name, k=3, n=8)(torch.randn(100, 8, dtype=torch.float64))
    chosen = out.gates.gather(-1, out.expert_index)  # (N, K)
    left_out = out.gates.scatter(-1, out.expert_index, float("-inf")).max(dim=-1).values  # (N,)
    assert torch.all(chosen.min(dim=-1).values >= left_out)
    # The combine weights are the chosen gates (renormalised to sum to one for the Sigmoid router).
    expected = chosen / chosen.sum(-1, keepdim=True) if ROUTERS[name].renormalize else chosen
    torch.testing.assert_close(out.combine_weights, expected)


def test_combine_weight_normalisation_per_router():
    torch.manual_seed(5)
    x = torch.randn(200, 8, dtype=torch.float64) * 2
    # Sigmoid: the kept weights sum to one.
    torch.testing.assert_close(
        identity_router("sigmoid", k=2, n=8)(x).combine_weights.sum(-1), torch.ones(200, dtype=torch.float64)
    )
    # Softmax (no renormalisation): the kept weights are probabilities, summing to at most one.
    sums = identity_router("softmax", k=2, n=8)(x).combine_weights.sum(-1)
    assert torch.all(sums <= 1 + 1e-12) and torch.all(sums > 2 / 8 - 1e-12)
    # KERN: no simplex; the kept weights lie in a ball of radius γ, ‖g‖₂ ≤ γ, and with k = E and γ = 2 the
    # squared norm is γ² ‖ReLU(s̄)‖² = 4 Σ_{s_m > 0} s_m² / ‖s‖².
    router = identity_router("kern", k=8, n=8)
    with torch.no_grad():
        router.gamma.fill_(2.0)
    w = router(x).combine_weights
    expected = 4 * (x.clamp(min=0) ** 2).sum(-1) / (x**2).sum(-1)
    torch.testing.assert_close((w**2).sum(-1), expected)
    assert torch.all(w.norm(dim=-1) <= 2 + 1e-12)
    assert not torch.allclose(w.sum(-1), torch.ones(200, dtype=torch.float64))


def test_gradients_reach_router_weights_gamma_and_input():
    torch.manual_seed(6)
    router = Router(16, 8, 2, "kern").double()
    x = torch.randn(32, 16, dtype=torch.float64, requires_grad=True)
    out = router(x)
    (out.combine_weights.pow(2).sum() + out.balance_loss).backward()
    for name, p in router.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all() and p.grad.abs().sum() > 0, name
    assert x.grad.abs().sum() > 0


def test_kern_gates_gradcheck_float64():
    # Away from the ReLU kink (|s̄| not tiny), the KERN gate map is smooth; check autograd against finite
    # differences, with respect to both the logits and γ.
    torch.manual_seed(7)
    logits = torch.randn(5, 6, dtype=torch.float64)
    logits = torch.where(logits.abs() < 0.1, logits + 0.3, logits).requires_grad_(True)
    gamma = torch.tensor(1.3, dtype=torch.float64, requires_grad=True)

    def f(s, g):
        return gate_scores(s, activation="relu", normalization="l2", order="norm_act", gamma=g, eps=1e-12)

    assert torch.autograd.gradcheck(f, (logits, gamma))


def test_switch_balance_loss_hand_computed():
    # Two experts, two tokens, top-1. Token 1 logits (ln 3, 0) → softmax (3/4, 1/4); token 2 (0, ln 3) → (1/4, 3/4).
    l3 = math.log(3.0)
    logits = torch.tensor([[l3, 0.0], [0.0, l3]], dtype=torch.float64)
    # Balanced: assignments (0, 1): f = (1/2, 1/2), P = (1/2, 1/2), loss = 2 · (1/4 + 1/4) = 1 (the minimum).
    assert switch_balance_loss(logits, torch.tensor([[0], [1]])).item() == pytest.approx(1.0)
    # Collapsed: both tokens' logits (ln 3, 0), both assigned to expert 0: f = (1, 0), P = (3/4, 1/4),
    # loss = 2 · (1 · 3/4) = 1.5.
    same = torch.tensor([[l3, 0.0], [l3, 0.0]], dtype=torch.float64)
    assert switch_balance_loss(same, torch.tensor([[0], [0]])).item() == pytest.approx(1.5)


def test_switch_balance_loss_counts_every_top_k_assignment():
    # E = 4, k = 2, one token to experts (0, 1): f = (1/2, 1/2, 0, 0); uniform logits give P = 1/4 each;
    # loss = 4 · (1/2 · 1/4 + 1/2 · 1/4) = 1.
    loss = switch_balance_loss(torch.zeros(1, 4, dtype=torch.float64), torch.tensor([[0, 1]]))
    assert loss.item() == pytest.approx(1.0)


def test_kern_output_scale_does_not_depend_on_number_of_experts():
    # The paper's scale claim, with the expert ratio fixed (k = M/8) as in its sparsity sweep: at initialisation
    # (Gaussian x, router weights N(0, 0.02²)), s is i.i.d. Gaussian across experts given x, s̄ ≈ z / √M, and the
    # kept squared gates are the top 1/8 of z²/M. For M → ∞ their sum tends to E[z² 1(z > q)] = q φ(q) + 1 − Φ(q)
    # with Φ(q) = 7/8, independent of M. Softmax's kept squared gates instead shrink like 1/M (p ≈ 1/M each).
    gen = torch.Generator().manual_seed(0)
    kern = {
        m: init_output_second_moment("kern", d_model=64, num_experts=m, k=m // 8, n_tokens=2000, generator=gen)
        for m in (32, 256)
    }
    soft = {
        m: init_output_second_moment("softmax", d_model=64, num_experts=m, k=m // 8, n_tokens=2000, generator=gen)
        for m in (32, 256)
    }
    normal = torch.distributions.Normal(0.0, 1.0)
    q = normal.icdf(torch.tensor(7 / 8, dtype=torch.float64))
    limit = float(q * normal.log_prob(q).exp() + 1 / 8)  # ≈ 0.3625
    assert kern[256] == pytest.approx(limit, rel=0.03)
    assert 0.85 < kern[32] / kern[256] < 1.15
    assert soft[32] / soft[256] > 5.0  # 8x fewer-but-larger probabilities: ≈ 8


def test_dense_kern_second_moment_is_one_half():
    # k = M: Σ_m ReLU(s̄_m)² is the squared norm of the positive part of a unit vector with symmetric entries,
    # whose expectation is 1/2 for any M.
    gen = torch.Generator().manual_seed(1)
    for m in (8, 64):
        value = init_output_second_moment("kern", d_model=32, num_experts=m, k=m, n_tokens=4000, generator=gen)
        assert value == pytest.approx(0.5, abs=0.02)


def test_router_is_deterministic_under_a_seed():
    x = torch.randn(10, 16, generator=torch.Generator().manual_seed(0))
    outs = []
    for _ in range(2):
        torch.manual_seed(123)
        outs.append(Router(16, 8, 2, "kern")(x).combine_weights)
    assert torch.equal(outs[0], outs[1])


def test_k_larger_than_number_of_experts_is_rejected():
    with pytest.raises(ValueError, match=r"k must lie in \[1, num_experts=4\], got 5"):
        Router(8, 4, 5, "kern")
    with pytest.raises(ValueError, match="k must lie"):
        Router(8, 4, 0, "kern")
    with pytest.raises(ValueError, match=r"k must lie in \[1, num_experts=3\]"):
        select_top_k(torch.zeros(2, 3), torch.zeros(2, 3), 4, renormalize=False)


def test_non_finite_router_input_is_rejected_naming_x():
    router = Router(8, 4, 2, "kern")
    x = torch.randn(3, 8)
    x[1, 2] = float("nan")
    with pytest.raises(ValueError, match=r"x: contains NaN or inf \(1 NaN, 0 inf of 24 values\)"):
        router(x)
    x[1, 2] = float("inf")
    with pytest.raises(ValueError, match=r"x: contains NaN or inf \(0 NaN, 1 inf of 24 values\)"):
        router(x)


def test_non_finite_router_weights_are_reported_as_floating_point_error():
    router = Router(8, 4, 2, "kern")
    with torch.no_grad():
        router.proj.weight[0, 0] = float("inf")
    with pytest.raises(FloatingPointError, match="router logits contain NaN or inf from a finite input x"):
        router(torch.randn(3, 8))


def test_dtype_mismatch_names_both_dtypes():
    with pytest.raises(
        TypeError, match=r"x: dtype torch.float64 differs from the router's weights' dtype torch.float32"
    ):
        Router(8, 4, 2, "kern")(torch.randn(3, 8, dtype=torch.float64))
    with pytest.raises(TypeError, match=r"x: dtype torch.float32 differs .* dtype torch.float64"):
        Router(8, 4, 2, "softmax").double()(torch.randn(3, 8))
    with pytest.raises(TypeError, match=r"x: dtype torch.bfloat16 differs"):
        MoEFeedForward(8, num_experts=4, k=2, d_expert=4)(torch.randn(2, 3, 8, dtype=torch.bfloat16))


def test_dtype_mismatch_is_allowed_under_autocast():
    # Under torch.autocast the linear layer casts its operands itself, as in mixed-precision training.
    router = Router(8, 4, 2, "kern")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = router(torch.randn(3, 8, dtype=torch.bfloat16))
    assert out.expert_index.shape == (3, 2)


def test_gate_scores_reject_non_finite_logits_and_gamma():
    s = torch.zeros(2, 4)
    s[0, 1] = float("nan")
    s[1, 3] = float("-inf")
    kw = dict(activation="relu", normalization="l2", order="norm_act")
    with pytest.raises(ValueError, match=r"logits: contain NaN or inf \(1 NaN, 1 inf of 8 values\)"):
        gate_scores(s, **kw)
    with pytest.raises(ValueError, match=r"gamma: must be finite, got nan"):
        gate_scores(torch.zeros(2, 4), gamma=float("nan"), **kw)
    with pytest.raises(ValueError, match=r"gamma: must be finite, got inf"):
        gate_scores(torch.zeros(2, 4), gamma=torch.tensor(float("inf")), **kw)


def test_wrong_hidden_size_is_rejected():
    with pytest.raises(ValueError, match=r"x: expected hidden size 8 .* got shape \(3, 7\)"):
        Router(8, 4, 2, "kern")(torch.randn(3, 7))


def test_bad_router_specs_are_rejected():
    with pytest.raises(ValueError, match="spec: unknown router 'kernel'"):
        Router(8, 4, 2, "kernel")
    with pytest.raises(ValueError, match="renormalize=True needs a non-negative activation"):
        RouterSpec(activation="tanh", normalization="none", order="act_norm", renormalize=True)
    with pytest.raises(ValueError, match="activation must be one of"):
        RouterSpec(activation="gelu", normalization="l2", order="norm_act")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="normalization must be one of"):
        RouterSpec(activation="relu", normalization="l3", order="norm_act")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="order must be one of"):
        RouterSpec(activation="relu", normalization="l2", order="both")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="eps must be positive"):
        Router(8, 4, 2, "kern", eps=0.0)


def test_pure_functions_reject_unknown_names():
    s = torch.zeros(2, 4)
    with pytest.raises(ValueError, match=r"activation must be one of .* got 'gelu'"):
        activate(s, "gelu")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"normalization must be one of .* got 'l3'"):
        normalize(s, "l3", 1e-6)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"order must be one of .* got 'both'"):
        gate_scores(s, activation="relu", normalization="l2", order="both")  # type: ignore[arg-type]


def test_empty_and_mismatched_inputs_are_rejected():
    with pytest.raises(ValueError, match=r"x: needs at least one token, got shape \(0, 8\)"):
        Router(8, 4, 2, "kern")(torch.zeros(0, 8))
    with pytest.raises(ValueError, match=r"logits and gates must have the same shape"):
        select_top_k(torch.zeros(2, 4), torch.zeros(2, 3), 1, renormalize=False)
    with pytest.raises(ValueError, match=r"logits must be \(N, E\) with N >= 1"):
        switch_balance_loss(torch.zeros(0, 4), torch.zeros(0, 2, dtype=torch.long))
    with pytest.raises(ValueError, match=r"expert_index must be \(N, K\) with N = 2"):
        switch_balance_loss(torch.zeros(2, 4), torch.zeros(3, 2, dtype=torch.long))


def test_all_zero_logits_give_zero_kern_gates_not_nan():
    # ‖s‖ = 0: the ε in s / (‖s‖ + ε) keeps the gates at zero instead of 0/0.
    out = identity_router("kern", k=2)(torch.zeros(2, 4, dtype=torch.float64))
    assert torch.equal(out.combine_weights, torch.zeros(2, 2, dtype=torch.float64))


def test_gate_cost_hand_counted_for_four_experts_top_two():
    # E = 4, K = 2, one token, following gate_scores and select_top_k line by line:
    # softmax, torch.softmax(s) then γ·: max over 4 = 3 compare; s - max = 4 add; exp = 4 special; sum = 3 add;
    #   divide = 4; γ· = 4 multiply  ->  3 + 4 + 4 + 3 + 4 + 4 = 22.
    assert gate_cost("softmax", num_experts=4, k=2) == GateCost(multiply=4, add=7, divide=4, compare=3, special=4)
    # kern, γ·ReLU(s / (‖s‖₂ + ε)): 4 squares; 3 adds; 1 sqrt; + ε 1 add; 4 divides; ReLU 4 compare;
    #   γ· 4 multiply  ->  4 + 3 + 1 + 1 + 4 + 4 + 4 = 21.
    assert gate_cost("kern", num_experts=4, k=2) == GateCost(multiply=8, add=4, divide=4, compare=4, special=1)
    # kern_act_norm, γ·ReLU(s)/(‖ReLU(s)‖₂ + ε): the same operations in the other order.
    assert gate_cost("kern_act_norm", num_experts=4, k=2) == gate_cost("kern", num_experts=4, k=2)
    # sigmoid: 4 sigmoid; γ· 4 multiply; top-2 renormalised: 1 add (sum of 2), 1 add (+ ε), 2 divide  ->  12.
    assert gate_cost("sigmoid", num_experts=4, k=2) == GateCost(multiply=4, add=2, divide=2, compare=0, special=4)
    # tanh: 4 tanh; γ· 4 multiply  ->  8.
    assert gate_cost("tanh", num_experts=4, k=2) == GateCost(multiply=4, add=0, divide=0, compare=0, special=4)
    assert [gate_cost(n, num_experts=4, k=2).flops for n in ("softmax", "kern", "sigmoid", "tanh")] == [22, 21, 12, 8]


@pytest.mark.parametrize("e", [1, 8, 64, 256])
def test_gate_cost_closed_forms_of_the_presets(e):
    k = max(1, e // 8)
    assert gate_cost("softmax", num_experts=e, k=k).flops == 6 * e - 2
    assert gate_cost("kern", num_experts=e, k=k).flops == 5 * e + 1
    assert gate_cost("sigmoid", num_experts=e, k=k).flops == 2 * e + 2 * k
    assert gate_cost("tanh", num_experts=e, k=k).flops == 2 * e


def test_gate_cost_of_a_custom_member_adds_its_parts():
    # ℓ1 then sigmoid (norm_act), renormalised over the top 3 of 5: abs 5 compare, 4 + 1 add, 5 divide (ℓ1);
    # 5 sigmoid; γ· 5 multiply; renormalisation 2 + 1 add, 3 divide.
    spec = RouterSpec(activation="sigmoid", normalization="l1", order="norm_act", renormalize=True)
    assert gate_cost(spec, num_experts=5, k=3) == GateCost(multiply=5, add=8, divide=8, compare=5, special=5)
    # Identity without normalisation: only the γ scale is left.
    plain = RouterSpec(activation="identity", normalization="none", order="act_norm")
    assert gate_cost(plain, num_experts=5, k=3) == GateCost(multiply=5, add=0, divide=0, compare=0, special=0)


def test_projection_flops_hand_counted():
    # W x for D = 3, E = 2: each of 2 logits is 3 products and 2 sums, plus 1 bias add: 2 · 6 = 12 = 2 D E.
    assert projection_flops(3, 2) == 12
    assert projection_flops(3, 2, bias=False) == 10


def test_gate_cost_rejects_bad_arguments():
    with pytest.raises(ValueError, match="spec: unknown router 'kernel'"):
        gate_cost("kernel", num_experts=4, k=2)
    with pytest.raises(ValueError, match=r"k must lie in \[1, num_experts=4\], got 5"):
        gate_cost("kern", num_experts=4, k=5)
    with pytest.raises(ValueError, match="num_experts must be positive, got 0"):
        gate_cost("kern", num_experts=0, k=1)
