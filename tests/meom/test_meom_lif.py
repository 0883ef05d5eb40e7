"""LIF neuron: hand-computed steps of the difference equation, a NumPy reference loop, and surrogate gradients."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from iclr26.meom import LIF, lif_multistep, spike


def reference_lif(x: np.ndarray, decay: float, v_th: float, v_reset: float | None) -> tuple[np.ndarray, np.ndarray]:
    """The LIF difference equation, written out independently over (T, N) inputs in float64."""
    v = np.full(x.shape[1], 0.0 if v_reset is None else v_reset)
    spikes, mem = [], []
    for x_t in x:
        h = decay * v + x_t if v_reset is None else v_reset + decay * (v - v_reset) + x_t
        s = (h >= v_th).astype(float)
        v = h - v_th * s if v_reset is None else np.where(s > 0, v_reset, h)
        spikes.append(s)
        mem.append(v)
    return np.array(spikes), np.array(mem)


def test_hard_reset_hand_computed():
    # decay 0.5, V_th 1, V_reset 0, X = 0.6, 0.6, 0.6, 1.2, 0.1:
    # H1 = 0.6 -> V1 = 0.6; H2 = 0.3 + 0.6 = 0.9 -> V2 = 0.9; H3 = 0.45 + 0.6 = 1.05 -> spike, V3 = 0;
    # H4 = 0 + 1.2 -> spike, V4 = 0; H5 = 0.1 -> V5 = 0.1
    x = torch.tensor([0.6, 0.6, 0.6, 1.2, 0.1], dtype=torch.float64).view(5, 1)
    out = lif_multistep(x, decay=0.5, v_threshold=1.0, v_reset=0.0, membrane=True)
    assert out.spikes.flatten().tolist() == [0.0, 0.0, 1.0, 1.0, 0.0]
    torch.testing.assert_close(out.membrane.flatten(), torch.tensor([0.6, 0.9, 0.0, 0.0, 0.1], dtype=torch.float64))


def test_soft_reset_hand_computed():
    # soft reset subtracts V_th: H3 = 1.05 -> V3 = 0.05; H4 = 0.025 + 1.2 = 1.225 -> spike, V4 = 0.225;
    # H5 = 0.1125 + 0.1 = 0.2125 -> no spike
    x = torch.tensor([0.6, 0.6, 0.6, 1.2, 0.1], dtype=torch.float64).view(5, 1)
    out = lif_multistep(x, decay=0.5, v_threshold=1.0, v_reset=None, membrane=True)
    assert out.spikes.flatten().tolist() == [0.0, 0.0, 1.0, 1.0, 0.0]
    torch.testing.assert_close(
        out.membrane.flatten(), torch.tensor([0.6, 0.9, 0.05, 0.225, 0.2125], dtype=torch.float64)
    )


def test_nonzero_reset_potential_and_threshold_equality():
    # V_reset = 0.25: H1 = 0.25 + 0.5 (0.25 - 0.25) + 0.25 = 0.5; H2 = 0.25 + 0.5 (0.5 - 0.25) + 0.625 = 1.0
    # exactly at threshold: Theta(0) = 1 spikes (as spikingjelly), and V2 resets to 0.25
    x = torch.tensor([0.25, 0.625]).view(2, 1)
    out = lif_multistep(x, decay=0.5, v_threshold=1.0, v_reset=0.25, membrane=True)
    assert out.spikes.flatten().tolist() == [0.0, 1.0]
    assert out.membrane.flatten().tolist() == [0.5, 0.25]


@pytest.mark.parametrize("v_reset", [0.0, None, -0.3])
def test_matches_reference_difference_equation(v_reset):
    rng = np.random.default_rng(0)
    x = rng.normal(0.4, 0.8, size=(12, 50))
    s_ref, v_ref = reference_lif(x, decay=0.7, v_th=0.9, v_reset=v_reset)
    out = lif_multistep(torch.from_numpy(x), decay=0.7, v_threshold=0.9, v_reset=v_reset, membrane=True)
    np.testing.assert_array_equal(out.spikes.numpy(), s_ref)
    np.testing.assert_allclose(out.membrane.numpy(), v_ref, rtol=0, atol=1e-12)
    assert 0 < s_ref.mean() < 1  # the input exercises both firing and silence


def test_layer_is_elementwise_over_trailing_dims_and_stateless_between_calls():
    torch.manual_seed(0)
    x = torch.randn(4, 3, 2, 5, 5)
    layer = LIF()
    y1 = layer(x)
    assert y1.shape == x.shape
    torch.testing.assert_close(layer(x), y1)  # the state starts from rest at every call
    flat = lif_multistep(x.reshape(4, -1)).spikes.reshape(x.shape)
    torch.testing.assert_close(y1, flat)


def test_surrogate_gradient_is_sigmoid_derivative():
    # d/dx sigmoid(alpha x) = alpha s (1 - s); at x = 0 with alpha = 4 this is 4 * 0.25 = 1
    x = torch.tensor([0.0, 0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = spike(x, alpha=4.0)
    assert y.tolist() == [1.0, 1.0, 0.0, 1.0]
    y.sum().backward()
    s = torch.sigmoid(4.0 * x.detach())
    torch.testing.assert_close(x.grad, 4.0 * s * (1 - s))
    assert x.grad[0].item() == pytest.approx(1.0)


@pytest.mark.parametrize("detach_reset", [False, True])
def test_gradient_flows_back_through_time(detach_reset):
    # one neuron, X = (0.5, 0.5), decay 0.5, V_th 1, V_reset 0, alpha 4; loss = S_2.
    # H1 = 0.5, S1 = 0, sg1 = 4 sig(-2)(1 - sig(-2)); V1 = H1 (1 - S1) so dV1/dH1 = 1 - S1 - H1 sg1
    # (the reset path; = 1 with detach_reset). H2 = 0.5 V1 + 0.5 = 0.75, sg2 = 4 sig(-1)(1 - sig(-1)).
    # dS2/dX1 = sg2 * 0.5 * dV1/dH1;  dS2/dX2 = sg2.
    x = torch.tensor([[0.5], [0.5]], dtype=torch.float64, requires_grad=True)
    out = lif_multistep(x, decay=0.5, v_threshold=1.0, v_reset=0.0, alpha=4.0, detach_reset=detach_reset)
    out.spikes[1].sum().backward()

    def sg(u: float) -> float:
        s = 1 / (1 + math.exp(-4 * u))
        return 4 * s * (1 - s)

    dv1 = 1.0 if detach_reset else 1.0 - 0.5 * sg(-0.5)
    assert x.grad[0, 0].item() == pytest.approx(sg(-0.25) * 0.5 * dv1, rel=1e-12)
    assert x.grad[1, 0].item() == pytest.approx(sg(-0.25), rel=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"decay": 0.0}, "decay"), ({"decay": 1.5}, "decay"), ({"alpha": 0.0}, "alpha"),
     ({"v_threshold": -1.0}, "v_threshold")],
)  # fmt: skip
def test_bad_settings_name_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        lif_multistep(torch.zeros(2, 1), **kwargs)
    with pytest.raises(ValueError, match=name):
        LIF(**kwargs)


def test_input_without_time_axis_is_rejected():
    with pytest.raises(ValueError, match="x: expected shape"):
        lif_multistep(torch.zeros(5))


def _reference_hard_reset(x, decay, v_threshold, alpha, detach_reset):
    """The textbook loop with V_reset = 0 and separate autograd ops: H = V_reset + beta (V - V_reset) + X,
    S = spike(H - V_th), V = H (1 - S) + V_reset S (the general path of lif.py before the fast path)."""
    v = torch.zeros_like(x[0])
    spikes, potentials = [], []
    for x_t in x:
        h = 0.0 + decay * (v - 0.0) + x_t
        s = spike(h - v_threshold, alpha=alpha)
        r = s.detach() if detach_reset else s
        v = h * (1.0 - r) + 0.0 * r
        spikes.append(s)
        potentials.append(v)
    return torch.stack(spikes), torch.stack(potentials)


@pytest.mark.parametrize("detach_reset", [False, True])
def test_fast_hard_reset_path_equals_the_textbook_loop_in_values_and_gradients(detach_reset):
    # the fast path for v_reset = 0 (one FireAndReset node per step) against the separate-op loop: the same
    # spikes and membranes, and the same input gradient for a loss that uses both (so g_S and g_V are both nonzero)
    g = torch.Generator().manual_seed(0)
    x = (1.2 * torch.randn(6, 3, 5, generator=g, dtype=torch.float64)).requires_grad_(True)
    w_s = torch.randn(6, 3, 5, generator=g, dtype=torch.float64)
    w_v = torch.randn(6, 3, 5, generator=g, dtype=torch.float64)
    out = lif_multistep(x, decay=0.6, v_threshold=0.8, v_reset=0.0, alpha=3.0, detach_reset=detach_reset, membrane=True)
    (gx,) = torch.autograd.grad((out.spikes * w_s).sum() + (out.membrane * w_v).sum(), x)
    s_ref, v_ref = _reference_hard_reset(x, 0.6, 0.8, 3.0, detach_reset)
    (gx_ref,) = torch.autograd.grad((s_ref * w_s).sum() + (v_ref * w_v).sum(), x)
    assert 0 < float(out.spikes.detach().mean()) < 1  # both branches of the reset are exercised
    assert torch.equal(out.spikes, s_ref)
    torch.testing.assert_close(out.membrane, v_ref, rtol=0, atol=1e-12)
    torch.testing.assert_close(gx, gx_ref, rtol=1e-12, atol=1e-12)


def test_membrane_is_only_stacked_on_request_and_the_layer_returns_spikes():
    x = torch.randn(4, 2, 3, generator=torch.Generator().manual_seed(1))
    assert lif_multistep(x).membrane is None
    assert lif_multistep(x, v_reset=None).membrane is None
    full = lif_multistep(x, membrane=True)
    assert full.membrane is not None and full.membrane.shape == x.shape
    assert torch.equal(LIF()(x), full.spikes)


@pytest.mark.parametrize("detach_reset", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_whole_sequence_node_equals_the_per_step_nodes_bit_for_bit(detach_reset, dtype):
    # without the membrane the layer runs LIFSequence (one autograd node for all T steps, hand-written backward
    # through time); with it, one FireAndReset node per step. Same spikes, same input gradient, bit for bit.
    g = torch.Generator().manual_seed(2)
    x0 = 1.3 * torch.randn(5, 4, 3, 2, generator=g, dtype=dtype)
    w = torch.randn(5, 4, 3, 2, generator=g, dtype=dtype)
    grads, spikes = [], []
    for membrane in (False, True):
        x = x0.clone().requires_grad_(True)
        s = lif_multistep(x, decay=0.7, v_threshold=0.9, alpha=2.5, detach_reset=detach_reset, membrane=membrane)
        (gx,) = torch.autograd.grad((s.spikes * w).sum(), x)
        grads.append(gx)
        spikes.append(s.spikes)
    assert 0 < float(spikes[0].detach().mean()) < 1 and (grads[0] != 0).all()
    assert torch.equal(spikes[0], spikes[1])
    assert torch.equal(grads[0], grads[1])
    # a mutation of the backward (e.g. dropping the reset's - H S' term) would change the gradient
    if not detach_reset:
        x = x0.clone().requires_grad_(True)
        s = lif_multistep(x, decay=0.7, v_threshold=0.9, alpha=2.5, detach_reset=True)
        assert not torch.equal(torch.autograd.grad((s.spikes * w).sum(), x)[0], grads[0])
