"""Hypergraph convolution against hand-computed incidence examples; level one equals its explicit incidence."""

from __future__ import annotations

import math

import pytest
import torch

from iclr26.sthhol.hypergraph import ContextHypergraph, CooccurrenceHypergraph, context_incidence, hypergraph_conv


def test_hypergraph_conv_on_a_hand_computed_binary_incidence():
    # nodes 0,1,2; edge A = {0, 1}, edge B = {1, 2}; x = (1, 2, 4)
    # edge means: A = (1+2)/2 = 1.5, B = (2+4)/2 = 3; node 1 is in both: (1.5 + 3)/2 = 2.25
    h = torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    x = torch.tensor([[1.0], [2.0], [4.0]])
    assert torch.allclose(hypergraph_conv(x, h), torch.tensor([[1.5], [2.25], [3.0]]))


def test_hypergraph_conv_on_a_hand_computed_weighted_incidence():
    # H = [[1, 0], [0.5, 1], [0, 2]]: D_e = (1.5, 3), D_v = (1, 1.5, 2)
    # edge A = (1*1 + 0.5*2)/1.5 = 4/3; edge B = (1*2 + 2*4)/3 = 10/3
    # node 0 = 4/3; node 1 = (0.5*4/3 + 1*10/3)/1.5 = 8/3; node 2 = 2*(10/3)/2 = 10/3
    h = torch.tensor([[1.0, 0.0], [0.5, 1.0], [0.0, 2.0]], dtype=torch.float64)
    x = torch.tensor([[1.0], [2.0], [4.0]], dtype=torch.float64)
    expected = torch.tensor([[4 / 3], [8 / 3], [10 / 3]], dtype=torch.float64)
    assert torch.allclose(hypergraph_conv(x, h), expected, atol=1e-12)
    # batched leading dimensions give the same per item
    assert torch.allclose(hypergraph_conv(torch.stack([x, 2 * x]), h)[1], 2 * expected, atol=1e-12)


def test_isolated_node_gets_zero_and_edge_weights_reweight_nodes():
    h = torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [0.0, 0.0]])
    x = torch.tensor([[1.0], [2.0], [4.0], [7.0]])
    out = hypergraph_conv(x, h, torch.tensor([3.0, 1.0]))
    # node 1 averages edge A (1.5, weight 3) and edge B (3, weight 1): (3*1.5 + 3)/4 = 1.875
    assert torch.allclose(out, torch.tensor([[1.5], [1.875], [3.0], [0.0]]))


def test_level_one_equals_the_explicit_incidence_convolution():
    torch.manual_seed(0)
    n, c, m, d = 3, 2, 2, 5
    layer = ContextHypergraph(c, m, d)
    with torch.no_grad():
        layer.theta_e.copy_(torch.randn(c, m))
    x, s = torch.randn(1, n, c, d), torch.randn(1, n, m, d)
    nodes = torch.cat([x.reshape(n * c, d), s.reshape(n * m, d)])  # crime nodes then context nodes
    full = hypergraph_conv(nodes, context_incidence(layer.weights().detach(), n))
    assert torch.allclose(layer.hyperedge_means(x, s).reshape(n * c, d), full[: n * c], atol=1e-6)


def test_level_one_hand_value_with_unit_contribution():
    # a = softplus(log(e - 1)) = 1: e = (x + 1*s)/(1 + 1) = (2 + 4)/2 = 3
    layer = ContextHypergraph(1, 1, 1)
    with torch.no_grad():
        layer.theta_e.fill_(math.log(math.e - 1))
    e = layer.hyperedge_means(torch.full((1, 1, 1, 1), 2.0), torch.full((1, 1, 1, 1), 4.0))
    assert e.item() == pytest.approx(3.0, rel=1e-6)


def test_level_two_is_a_residual_convolution_over_the_learned_incidence_and_trains_it():
    layer = CooccurrenceHypergraph(6, 4, 3, generator=torch.Generator().manual_seed(0))
    x = torch.randn(2, 3, 2, 3, generator=torch.Generator().manual_seed(1))  # (B, N, C, D), N*C = 6 nodes
    with torch.no_grad():  # W = I, no bias: x̂ = x̃ + GELU(D_v^-1 H D_e^-1 H^T x̃), H = softplus(Θ_o)^T
        layer.proj.weight.copy_(torch.eye(3))
        layer.proj.bias.zero_()
    conv = hypergraph_conv(x.reshape(2, 6, 3), torch.nn.functional.softplus(layer.theta_o).T).reshape(x.shape)
    torch.testing.assert_close(layer(x), x + torch.nn.functional.gelu(conv))
    # the nodes share hyperedges: changing node (region 0, category 0) moves the outputs of the other regions
    moved = x.clone()
    moved[:, 0, 0] += 1.0
    assert (layer(moved) - layer(x))[:, 1:].abs().amin(dim=-1).gt(0).all()
    layer(x).sum().backward()
    assert layer.theta_o.grad is not None and layer.theta_o.grad.abs().sum() > 0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: hypergraph_conv(torch.ones(3, 1), torch.ones(2, 2)), "x must be"),
        (lambda: hypergraph_conv(torch.ones(3, 1), torch.ones(3)), "incidence must be"),
        (lambda: hypergraph_conv(torch.ones(2, 1), -torch.ones(2, 2)), "non-negative"),
        (lambda: hypergraph_conv(torch.ones(2, 1), torch.ones(2, 2), torch.ones(3)), "edge_weight"),
        (lambda: ContextHypergraph(2, 1, 3)(torch.ones(1, 2, 3, 3), torch.ones(1, 2, 1, 3)), "categories"),
        (lambda: ContextHypergraph(2, 1, 3)(torch.ones(2, 3, 3), torch.ones(1, 2, 1, 3)), "x must be"),
        (lambda: CooccurrenceHypergraph(6, 2, 3)(torch.ones(1, 2, 2, 3)), "N\\*C=6"),
    ],
)
def test_bad_shapes_are_rejected_with_the_argument_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()
