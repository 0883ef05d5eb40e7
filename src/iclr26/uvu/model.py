"""Universal value-function approximators ``f(s, a, z) -> R^H`` (UVFAs, Schaul et al. 2015) used by UVU.

``UniversalMLP`` concatenates the state features, the action (one-hot for discrete actions, raw for continuous
ones) and the task/policy encoding ``z`` and maps them through an MLP to ``H`` outputs ("heads"). The same class
serves as UVU's online network ``u``, its fixed random target ``g``, an ensemble member ``Q_k`` and RND's predictor
and target, so every method compared sees identical inputs and architecture.

Two parameterisations:
    * ``"standard"``: ``torch.nn.Linear`` layers with PyTorch's default initialisation (for Adam-trained learners);
    * ``"ntk"``: weights ``W ~ N(0, 1)`` and pre-activations ``σ_w / sqrt(fan_in) · W h`` (+ ``σ_b b``), the
      parameterisation under which gradient descent of a wide network follows its neural tangent kernel (Jacot et
      al. 2018). The NTK analysis of the paper (§4) is stated in this limit; :mod:`iclr26.uvu.ntk` holds the kernels.

Glossary: ``B`` batch, ``D_s`` state features, ``D_a`` action features (one-hot size for discrete actions),
``D_z`` task features, ``H`` heads.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

Parameterization = Literal["standard", "ntk"]


class NTKLinear(nn.Module):
    """``y = σ_w / sqrt(fan_in) · x Wᵀ + σ_b b`` with ``W, b ~ N(0, 1)`` (NTK parameterisation).

    Args:
        fan_in: input features.
        fan_out: output features.
        sigma_w: weight scale ``σ_w > 0``.
        sigma_b: bias scale ``σ_b >= 0``; 0 drops the bias.

    Raises:
        ValueError: for non-positive sizes, a ``sigma_w`` that is not a finite positive number or a ``sigma_b``
            that is not a finite non-negative number (named).
    """

    def __init__(self, fan_in: int, fan_out: int, *, sigma_w: float = 1.0, sigma_b: float = 0.0) -> None:
        super().__init__()
        if fan_in <= 0 or fan_out <= 0:
            raise ValueError(f"fan_in and fan_out must be positive, got {fan_in} and {fan_out}")
        check_scales(sigma_w, sigma_b)
        self.weight = nn.Parameter(torch.randn(fan_out, fan_in))
        self.bias = nn.Parameter(torch.randn(fan_out)) if sigma_b > 0 else None
        self.scale = sigma_w / math.sqrt(fan_in)
        self.sigma_b = sigma_b

    def forward(self, x: Tensor) -> Tensor:
        """Apply the layer to ``(..., fan_in)`` inputs."""
        # NTK parameterisation: σ_w / sqrt(fan_in) outside N(0, 1) weights, the limit of the §4 analysis
        y = self.scale * F.linear(x, self.weight)
        return y + self.sigma_b * self.bias if self.bias is not None else y


class UniversalMLP(nn.Module):
    """An MLP value function ``f(s, a, z) -> (B, H)`` on the concatenation ``[s, enc(a), z]``.

    Args:
        state_dim: ``D_s``.
        task_dim: ``D_z``.
        num_actions: number of discrete actions (actions are integer indices, one-hot encoded); or ``None``.
        action_dim: continuous action dimension ``D_a``; exactly one of ``num_actions``/``action_dim`` is given.
        hidden: hidden layer widths.
        num_heads: output heads ``H``.
        parameterization: ``"standard"`` or ``"ntk"`` (see the module docstring).
        sigma_w: NTK weight scale, finite and positive (ignored for ``"standard"``).
        sigma_b: NTK bias scale, finite and non-negative; 0 for no biases (ignored for ``"standard"``).

    Raises:
        ValueError: for non-positive sizes, when both or neither of ``num_actions``/``action_dim`` are given, or
            for a ``sigma_w``/``sigma_b`` outside its range (NaN included), named.
    """

    def __init__(
        self,
        state_dim: int,
        task_dim: int,
        *,
        num_actions: int | None = None,
        action_dim: int | None = None,
        hidden: tuple[int, ...] = (256, 256),
        num_heads: int = 1,
        parameterization: Parameterization = "standard",
        sigma_w: float = 1.0,
        sigma_b: float = 0.0,
    ) -> None:
        super().__init__()
        if (num_actions is None) == (action_dim is None):
            raise ValueError("give exactly one of num_actions (discrete) and action_dim (continuous)")
        for name, value in (("state_dim", state_dim), ("task_dim", task_dim), ("num_heads", num_heads)):
            if value <= 0:
                raise ValueError(f"{name} must be positive, got {value}")
        if num_actions is not None and num_actions <= 0:
            raise ValueError(f"num_actions must be positive, got {num_actions}")
        if action_dim is not None and action_dim <= 0:
            raise ValueError(f"action_dim must be positive, got {action_dim}")
        if not hidden or any(w <= 0 for w in hidden):
            raise ValueError(f"hidden must be a non-empty tuple of positive widths, got {hidden}")
        if parameterization not in ("standard", "ntk"):
            raise ValueError(f"parameterization must be 'standard' or 'ntk', got {parameterization!r}")
        check_scales(sigma_w, sigma_b)
        self.state_dim, self.task_dim, self.num_heads = state_dim, task_dim, num_heads
        self.num_actions, self.action_dim = num_actions, action_dim
        self.parameterization = parameterization
        in_dim = state_dim + (num_actions if num_actions is not None else action_dim) + task_dim
        widths = (in_dim, *hidden, num_heads)
        #: layer widths ``(d_0, d_1, ..., d_L)``: input ``D_s + D_a + D_z``, hidden widths, heads ``H``.
        self.widths: tuple[int, ...] = widths
        layers: list[nn.Module] = []
        for i, (fan_in, fan_out) in enumerate(zip(widths[:-1], widths[1:], strict=True)):
            if parameterization == "ntk":
                layers.append(NTKLinear(fan_in, fan_out, sigma_w=sigma_w, sigma_b=sigma_b))
            else:
                layers.append(nn.Linear(fan_in, fan_out))
            if i < len(widths) - 2:
                layers.append(nn.ReLU())
        self.body = nn.Sequential(*layers)

    def signature(self) -> dict[str, int | None]:
        """What the network takes and returns: ``state_dim``, ``task_dim``, ``num_actions``, ``action_dim`` and
        ``outputs`` (``H``); two networks with equal signatures accept the same inputs and give the same shape."""
        return {
            "state_dim": self.state_dim,
            "task_dim": self.task_dim,
            "num_actions": self.num_actions,
            "action_dim": self.action_dim,
            "outputs": self.num_heads,
        }

    def encode(self, states: Tensor, actions: Tensor, tasks: Tensor) -> Tensor:
        """The network input ``[s, enc(a), z]``, shape ``(B, D_s + D_a + D_z)``.

        Raises:
            ValueError: if the inputs' shapes do not fit the network.
        """
        b = states.shape[0]
        if states.dim() != 2 or states.shape[1] != self.state_dim:
            raise ValueError(f"states must have shape (B, {self.state_dim}), got {tuple(states.shape)}")
        if tasks.shape != (b, self.task_dim):
            raise ValueError(f"tasks must have shape ({b}, {self.task_dim}), got {tuple(tasks.shape)}")
        if self.num_actions is not None:
            if actions.shape != (b,) or actions.is_floating_point():
                raise ValueError(f"actions must be ({b},) integer indices, got {tuple(actions.shape)} {actions.dtype}")
            if actions.numel() and (actions.min() < 0 or actions.max() >= self.num_actions):
                raise ValueError(
                    f"actions must lie in [0, {self.num_actions}), got range "
                    f"[{int(actions.min())}, {int(actions.max())}]"
                )
            enc = F.one_hot(actions, self.num_actions).to(states.dtype)
        else:
            if actions.shape != (b, self.action_dim):
                raise ValueError(f"actions must have shape ({b}, {self.action_dim}), got {tuple(actions.shape)}")
            enc = actions.to(states.dtype)
        return torch.cat([states, enc, tasks.to(states.dtype)], dim=-1)

    def forward(self, states: Tensor, actions: Tensor, tasks: Tensor) -> Tensor:
        """Values ``f(s, a, z)``: ``(B, H)``."""
        return self.body(self.encode(states, actions, tasks))

    def all_actions(self, states: Tensor, tasks: Tensor) -> Tensor:
        """Values of every discrete action: ``(B, A, H)``.

        Raises:
            ValueError: for a continuous-action network.
        """
        if self.num_actions is None:
            raise ValueError("all_actions needs a discrete-action network (num_actions)")
        b, n_a = states.shape[0], self.num_actions
        acts = torch.arange(n_a, device=states.device).repeat(b)  # (B*A,)
        out = self(states.repeat_interleave(n_a, 0), acts, tasks.repeat_interleave(n_a, 0))  # (B*A, H)
        return out.reshape(b, n_a, self.num_heads)


def check_scales(sigma_w: float, sigma_b: float) -> None:
    """Check the NTK scales: ``σ_w`` finite and positive, ``σ_b`` finite and non-negative.

    Raises:
        ValueError: naming ``sigma_w`` or ``sigma_b`` (NaN and inf included).
    """
    if not (math.isfinite(sigma_w) and sigma_w > 0):
        raise ValueError(f"sigma_w must be a finite positive weight scale, got {sigma_w}")
    if not (math.isfinite(sigma_b) and sigma_b >= 0):
        raise ValueError(f"sigma_b must be a finite non-negative bias scale (0 drops the bias), got {sigma_b}")


def signature_of(net: nn.Module) -> dict[str, int | None] | None:
    """``net.signature()`` when the network states what it takes and returns (:meth:`UniversalMLP.signature`,
    :meth:`iclr26.uvu.ensemble.StackedNetworks.signature`), else None."""
    signature = getattr(net, "signature", None)
    return signature() if callable(signature) else None


def check_independent(trained: nn.Module, target: nn.Module, *, names: tuple[str, str]) -> None:
    """Check that a trained network and its fixed random target are two separately initialised modules.

    UVU and RND both measure ``(f - g)²`` between a trained network ``f`` and a fixed random ``g``; if the two were
    one module, or shared a parameter tensor, freezing ``g`` would freeze ``f`` and the error would be 0 by
    construction. Two modules with equal parameter values (``copy.deepcopy(u)``, the usual way to build a *target
    network*) are refused too: ``u`` then starts at ``g``, which is a fixed point of UVU's update, so ``ε² ≡ 0``
    forever.

    Args:
        trained: the network that is optimised (``u`` or RND's predictor).
        target: the fixed random network ``g``.
        names: the two arguments' names, used in the error message.

    When both networks state their inputs and outputs (:func:`signature_of`), they must agree, so that a pair that
    could only fail at the first call (e.g. 8 heads against 4) is refused here.

    Raises:
        TypeError: if either is not a ``torch.nn.Module`` (e.g. a function or a tensor).
        ValueError: if ``trained is target``, they share a parameter tensor, every parameter of one equals the
            corresponding parameter of the other (identical initialisations), or their signatures differ.
    """
    for name, net in zip(names, (trained, target), strict=True):
        if not isinstance(net, nn.Module):
            raise TypeError(
                f"{name} must be a torch.nn.Module mapping (states, actions, tasks) to (B, H), got {type(net).__name__}"
            )
    if trained is target:
        raise ValueError(f"{names[0]} and {names[1]} must be two independently initialised networks, got the same one")
    sig_trained, sig_target = signature_of(trained), signature_of(target)
    if sig_trained is not None and sig_target is not None and sig_trained != sig_target:
        differ = {k: (sig_trained.get(k), sig_target.get(k)) for k in sig_trained.keys() | sig_target.keys()}
        differ = {k: v for k, v in sorted(differ.items()) if v[0] != v[1]}
        text = ", ".join(f"{k} {a} vs {b}" for k, (a, b) in differ.items())
        raise ValueError(
            f"{names[0]} and {names[1]} must take the same inputs and give outputs of the same shape; they differ in "
            f"{text} (build both with the same sizes and num_heads)"
        )
    shared = {id(p) for p in trained.parameters()} & {id(p) for p in target.parameters()}
    if shared:
        raise ValueError(
            f"{names[0]} and {names[1]} share {len(shared)} parameter tensor(s); initialise them separately"
        )
    a, b = dict(trained.named_parameters()), dict(target.named_parameters())
    same_layout = a.keys() == b.keys() and all(a[k].shape == b[k].shape for k in a)
    if same_layout and a and all(torch.equal(a[k].detach(), b[k].detach()) for k in a):
        raise ValueError(
            f"{names[0]} and {names[1]} have identical parameter values (e.g. one is a copy.deepcopy of the other); "
            f"then {names[1]} is a fixed point and the error stays 0. Initialise {names[1]} separately (a new "
            "module with its own random draw), not as a copy"
        )


def count_parameters(module: nn.Module, *, trainable_only: bool = False) -> int:
    """Number of scalar parameters of ``module`` (all, or only those with ``requires_grad``)."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad or not trainable_only)
