"""Bad input at the UVU API: non-modules as networks, NaN/inf or non-tensor queries; each error names the argument."""

from __future__ import annotations

import pytest
import torch

from iclr26.uvu import RND, UVU, NTKLinear, StackedNetworks, UniversalMLP


def _net(**kwargs) -> UniversalMLP:
    return UniversalMLP(4, 3, num_actions=2, hidden=(8,), **{"num_heads": 2, **kwargs})


def _query(b: int = 5):
    g = torch.Generator().manual_seed(0)
    return torch.randn(b, 4, generator=g), torch.randint(2, (b,), generator=g), torch.randn(b, 3, generator=g)


@pytest.mark.parametrize(
    "bad", [lambda s, a, z: s.sum(1, keepdim=True), torch.zeros(3, 2), "mlp"], ids=["function", "tensor", "string"]
)
@pytest.mark.parametrize("argument", ["online", "target"])
def test_uvu_rejects_a_non_module_naming_the_argument(bad, argument):
    nets = {"online": _net(), "target": _net(), argument: bad}
    with pytest.raises(TypeError, match=f"^{argument} must be a torch.nn.Module"):
        UVU(nets["online"], nets["target"], gamma=0.9)


def test_rnd_rejects_a_non_module_naming_the_argument():
    with pytest.raises(TypeError, match="^predictor must be a torch.nn.Module.*got function"):
        RND(lambda s, a, z: s, _net())


@pytest.mark.parametrize("bad_value", [float("nan"), float("inf"), -float("inf")])
@pytest.mark.parametrize("argument", ["states", "tasks"])
def test_uncertainty_rejects_non_finite_inputs_naming_the_argument(argument, bad_value):
    torch.manual_seed(0)
    uvu = UVU(_net(), _net(), gamma=0.9)
    states, actions, tasks = _query()
    inputs = {"states": states, "actions": actions, "tasks": tasks}
    inputs[argument][2, 1] = bad_value
    with pytest.raises(ValueError, match=f"^{argument} holds 1 non-finite value"):
        uvu.uncertainty(**inputs)
    # the bonus is built on the uncertainty and refuses the same input
    with pytest.raises(ValueError, match=f"^{argument} holds 1 non-finite value"):
        uvu.bonus(**inputs, scale=1.0)


def test_uncertainty_rejects_non_finite_continuous_actions():
    torch.manual_seed(0)
    uvu = UVU(UniversalMLP(4, 3, action_dim=2, hidden=(8,)), UniversalMLP(4, 3, action_dim=2, hidden=(8,)), gamma=0.9)
    states, _, tasks = _query()
    actions = torch.zeros(5, 2)
    actions[0, 0] = float("nan")
    with pytest.raises(ValueError, match="^actions holds 1 non-finite value"):
        uvu.uncertainty(states, actions, tasks)
    actions[0, 0] = 0.0
    assert torch.isfinite(uvu.uncertainty(states, actions, tasks)).all()


def test_uncertainty_rejects_a_non_tensor_naming_the_argument():
    torch.manual_seed(0)
    uvu = UVU(_net(), _net(), gamma=0.9)
    states, actions, tasks = _query()
    with pytest.raises(TypeError, match="^tasks must be a torch.Tensor, got list"):
        uvu.uncertainty(states, actions, tasks.tolist())


def test_finite_input_still_gives_the_squared_error():
    torch.manual_seed(0)
    u, g = _net(), _net()
    uvu = UVU(u, g, gamma=0.9)
    states, actions, tasks = _query()
    # ε² = (u - g)², averaged over the 2 heads
    expected = ((u(states, actions, tasks) - g(states, actions, tasks)) ** 2).mean(1)
    torch.testing.assert_close(uvu.uncertainty(states, actions, tasks), expected)


def test_a_deep_copied_target_is_refused_with_the_reason():
    """UVU(u, deepcopy(u)) used to be accepted and gave ε² ≡ 0 forever: g is a fixed point of the update."""
    import copy

    u = _net()
    with pytest.raises(ValueError, match="identical parameter values .* copy.deepcopy .* fixed point"):
        UVU(u, copy.deepcopy(u), gamma=0.9)
    g = copy.deepcopy(u)
    with torch.no_grad():
        next(g.parameters()).add_(1e-3)  # one parameter differs: two distinct initialisations
    UVU(u, g, gamma=0.9)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"sigma_w": float("nan")}, "sigma_w"),
        ({"sigma_w": 0.0}, "sigma_w"),
        ({"sigma_w": float("inf")}, "sigma_w"),
        ({"sigma_b": float("nan")}, "sigma_b"),
        ({"sigma_b": -0.1}, "sigma_b"),
    ],
)
def test_ntk_scales_outside_their_range_are_refused_naming_them(kwargs, name):
    with pytest.raises(ValueError, match=f"^{name} must be a finite"):
        UniversalMLP(4, 3, num_actions=2, hidden=(8,), parameterization="ntk", **kwargs)
    with pytest.raises(ValueError, match=f"^{name} must be a finite"):
        NTKLinear(4, 3, **kwargs)


def test_mismatched_heads_are_refused_when_uvu_or_rnd_is_built():
    with pytest.raises(ValueError, match="^online and target .* outputs 8 vs 4"):
        UVU(UniversalMLP(4, 3, num_actions=2, num_heads=8), UniversalMLP(4, 3, num_actions=2, num_heads=4), gamma=0.9)
    # stacked copies count as heads: 3 copies of one head against 4
    with pytest.raises(ValueError, match="^predictor and target .* outputs 3 vs 4"):
        RND(StackedNetworks(lambda: _net(num_heads=1), 3), StackedNetworks(lambda: _net(num_heads=1), 4))
    UVU(StackedNetworks(lambda: _net(num_heads=1), 3), StackedNetworks(lambda: _net(num_heads=1), 3), gamma=0.9)
