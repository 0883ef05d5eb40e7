"""Top-k mixture-of-experts routers: Softmax, Sigmoid, Tanh and KERN, as members of one FFN-style family.

Paper: "Understanding the Mixture-of-Experts with Nadaraya-Watson Kernel", Zheng et al., ICLR 2026,
arXiv 2509.25913, OpenReview NdDlqHV1md. Implemented: the KERN router (Kernel Inspired Router with Normalization,
§3, Eqs. (3)-(4) of the paper as reported by its reviewers) and the general "FFN-style" router family
``g(x) = γ · act(norm(W x + b))`` that the paper says contains the Sigmoid- and Softmax-based routers.

One routing step for a token representation ``x`` (``Φ(x)`` in the paper), ``M`` = ``num_experts`` experts:

1. logits ``s = W x + b`` (a linear layer, the same for every router);
2. KERN: ℓ2-normalise over all M experts, ``s̄ = s / (‖s‖₂ + ε)``;
3. KERN: activation ``r = ReLU(s̄)``;
4. KERN: scale ``ĝ = γ · r`` with one learnable scalar γ (initialised to 1);
5. keep the top-k experts, ``g_m = ĝ_m · 1[m ∈ TopK(s)]``; KERN does not renormalise (no simplex);
6. (in :mod:`iclr26.kern.moe`) the layer output is ``Σ_m g_m E_m(x)``.

The family: steps 2-3 are ``act ∘ norm`` (``order="norm_act"``, the KERN default) or ``norm ∘ act``
(``order="act_norm"``); ``act`` ∈ {relu, exp, sigmoid, tanh, identity}, ``norm`` ∈ {l2, l1, none}. Softmax is
``exp`` then ``l1`` (``act_norm``); the Sigmoid router is ``sigmoid`` with no normalisation and the selected
weights renormalised to sum to one (DeepSeek-V3 style); Tanh is ``tanh`` with no normalisation.

Top-k is taken on the logits ``s``: every activation of the family is non-decreasing and every normalisation divides
a token's scores by one positive number, so the ordering of ``s`` is the ordering of the gates (ties in the ReLU
zero region are then broken by ``s``, and the tied experts get weight 0). This needs ``γ > 0``; γ is not constrained,
and the selection stays on ``s`` whatever its sign (the README reports the trained values).

Precision: :class:`Router` computes the logits and the gate in float32 (float64 inputs stay in float64) whatever the
input dtype or autocast state, and casts only the combine weights to the experts' dtype. NaN/inf checks, which read a
value back to the host, sit behind ``check_finite``. An auxiliary-loss-free balancing bias (DeepSeek-V3) on the
selection is an option of every router (``bias_update_rate``).

Cost: :func:`gate_cost` counts the operations per token of steps 2-5 as the code computes them (the part that
differs between routers; the paper calls KERN "zero-additional-cost"), :func:`projection_flops` those of step 1.

Glossary: ``N`` tokens (batch and sequence flattened), ``D`` hidden size, ``E`` experts (``M`` in the paper),
``K`` experts per token (top-k).

Deviations:
    * The paper's text orders normalisation and activation inconsistently (reviewer 1: Eq. (4) activates before it
      normalises, Eq. (3) the other way round). Both orders are available (``order``); the default ``norm_act``
      follows reviewer 2's ``γ · ReLU(norm(xW))`` and the meta-review's "ℓ2-normalization, ReLU activation, and a
      learnable global scaler" (the PDF itself could not be read).
    * The paper does not name its load-balancing loss; :func:`switch_balance_loss` (Switch Transformer, Fedus et al.
      2022, Eq. (4)) is applied to ``softmax(s)`` for every router, so all routers get the identical loss.
    * The "Monte Carlo initialisation" mentioned by one summary of the paper is not implemented (no source describes
      it); the router weights use the host model's initialisation.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Literal, NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

Activation = Literal["relu", "exp", "sigmoid", "tanh", "identity"]
Normalization = Literal["l2", "l1", "none"]
Order = Literal["norm_act", "act_norm"]

ACTIVATIONS: tuple[str, ...] = ("relu", "exp", "sigmoid", "tanh", "identity")
NORMALIZATIONS: tuple[str, ...] = ("l2", "l1", "none")
ORDERS: tuple[str, ...] = ("norm_act", "act_norm")
NONNEGATIVE_ACTIVATIONS: tuple[str, ...] = ("relu", "exp", "sigmoid")


def default_eps(dtype: torch.dtype) -> float:
    """The ε of the normalisations for ``dtype``: machine epsilon of that floating type."""
    return torch.finfo(dtype).eps


def activate(scores: Tensor, activation: Activation) -> Tensor:
    """Apply an elementwise router activation.

    Args:
        scores: any shape.
        activation: ``relu``, ``exp``, ``sigmoid``, ``tanh`` or ``identity``.

    Returns:
        A tensor of the same shape.

    Raises:
        ValueError: for an unknown ``activation``.
    """
    if activation == "relu":
        return F.relu(scores)
    if activation == "exp":
        return torch.exp(scores)
    if activation == "sigmoid":
        return torch.sigmoid(scores)
    if activation == "tanh":
        return torch.tanh(scores)
    if activation == "identity":
        return scores
    raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")


def normalize(scores: Tensor, normalization: Normalization, eps: float) -> Tensor:
    """Normalise each token's scores over the expert (last) dimension.

    ``l2``: ``v / (‖v‖₂ + ε)``; ``l1``: ``v / (‖v‖₁ + ε)``; ``none``: ``v``.

    Args:
        scores: ``(..., E)``.
        normalization: ``l2``, ``l1`` or ``none``.
        eps: ε added to the norm (keeps an all-zero row at zero instead of dividing by zero).

    Returns:
        ``(..., E)``.

    Raises:
        ValueError: for an unknown ``normalization``.
    """
    if normalization == "l2":
        # KERN's s̄ = s / (‖s‖₂ + ε) over all M experts before top-k: a unit vector whatever M is
        return scores / (torch.linalg.vector_norm(scores, ord=2, dim=-1, keepdim=True) + eps)
    if normalization == "l1":
        return scores / (torch.linalg.vector_norm(scores, ord=1, dim=-1, keepdim=True) + eps)
    if normalization == "none":
        return scores
    raise ValueError(f"normalization must be one of {NORMALIZATIONS}, got {normalization!r}")


def gate_scores(
    logits: Tensor,
    *,
    activation: Activation,
    normalization: Normalization,
    order: Order,
    gamma: Tensor | float = 1.0,
    eps: float | None = None,
) -> Tensor:
    """Dense gate values of the FFN-style router family, before top-k: ``γ · act(norm(s))`` or ``γ · norm(act(s))``.

    Args:
        logits: router logits ``s``, ``(N, E)``.
        activation: elementwise activation.
        normalization: normalisation over the experts.
        order: ``norm_act`` (normalise, then activate: KERN's Eq. (3)) or ``act_norm`` (activate, then normalise:
            the paper's Eq. (4); Softmax is ``exp`` then ``l1`` in this order).
        gamma: the global scale γ (a scalar tensor or float).
        eps: ε of the normalisation; default :func:`default_eps` of ``logits.dtype``.

    Returns:
        ``ĝ``, ``(N, E)``.

    Raises:
        ValueError: for NaN or inf in ``logits`` or ``gamma``, or an unknown ``activation``, ``normalization`` or
            ``order``.
    """
    if not torch.isfinite(logits).all():
        raise ValueError(f"logits: contain NaN or inf ({_count_non_finite(logits)}); gates need finite logits")
    if not torch.isfinite(torch.as_tensor(gamma)).all():
        raise ValueError(f"gamma: must be finite, got {torch.as_tensor(gamma).tolist()}")
    return _gate_values(logits, activation=activation, normalization=normalization, order=order, gamma=gamma, eps=eps)


def _count_non_finite(t: Tensor) -> str:
    """``"n NaN, m inf of T values"`` for an error message."""
    n_nan, n_inf = int(torch.isnan(t).sum()), int(torch.isinf(t).sum())
    return f"{n_nan} NaN, {n_inf} inf of {t.numel()} values"


def _gate_values(
    logits: Tensor,
    *,
    activation: Activation,
    normalization: Normalization,
    order: Order,
    gamma: Tensor | float,
    eps: float | None,
) -> Tensor:
    """:func:`gate_scores` without the finiteness checks (for callers that checked their logits already)."""
    eps = default_eps(logits.dtype) if eps is None else eps
    if order == "norm_act":
        # Eq. (3), KERN: ĝ = γ · ReLU(s / (‖s‖₂ + ε))
        return gamma * activate(normalize(logits, normalization, eps), activation)
    if order != "act_norm":
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    if activation == "exp" and normalization == "l1":
        # exp(s) / ‖exp(s)‖₁ is softmax(s); computed with the max subtracted (log-sum-exp) so it cannot overflow.
        # The ε of the generic l1 branch is dropped here: the denominator is ≥ 1 after the shift.
        return gamma * torch.softmax(logits, dim=-1)
    # Eq. (4): ĝ = γ · norm(act(s))
    return gamma * normalize(activate(logits, activation), normalization, eps)


def require_size(name: str, value: object, *, positive: bool = True) -> None:
    """Reject a size argument unless it is an ``int`` (numpy's included; not a bool), positive unless told otherwise.

    Raises:
        TypeError: naming ``name``, for a value that is not a whole number (``2.5``, ``"8"``, ``True``).
        ValueError: naming ``name``, for a whole number below 1 (with ``positive``).
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
    if positive and value < 1:
        raise ValueError(f"{name} must be positive, got {value}")


class TopK(NamedTuple):
    """The experts chosen for each token and their combine weights.

    Attributes:
        expert_index: ``(N, K)`` long, experts in decreasing order of the logit.
        combine_weights: ``(N, K)``, the gates ``g`` of the chosen experts.
    """

    expert_index: Tensor
    combine_weights: Tensor


def select_top_k(logits: Tensor, gates: Tensor, k: int, *, renormalize: bool, eps: float | None = None) -> TopK:
    """Keep the ``k`` experts with the largest logits; optionally renormalise their gates to sum to one.

    Args:
        logits: ``(N, E)``, used for the ordering (see the module docstring).
        gates: ``(N, E)`` dense gate values ``ĝ``.
        k: experts per token, ``1 ≤ k ≤ E``.
        renormalize: divide the kept gates by their sum (``+ ε``), as the Sigmoid router of DeepSeek-V3 does.
        eps: ε of the renormalisation; default :func:`default_eps` of ``gates.dtype``.

    Returns:
        :class:`TopK` with ``expert_index`` and ``combine_weights`` of shape ``(N, K)``.

    Raises:
        ValueError: if ``k`` is out of range or ``logits`` and ``gates`` differ in shape.
    """
    if logits.shape != gates.shape:
        raise ValueError(
            f"logits and gates must have the same shape (N, E), got {tuple(logits.shape)} and {tuple(gates.shape)}"
        )
    num_experts = logits.shape[-1]
    if not 1 <= k <= num_experts:
        raise ValueError(f"k must lie in [1, num_experts={num_experts}], got {k}")
    # TopK on s: the order of ĝ where act is monotone; ties among zero gates (ReLU) are broken by s
    index = torch.topk(logits, k, dim=-1).indices  # (N, K)
    weights = torch.gather(gates, -1, index)  # (N, K)
    # g_m = ĝ_m · 1[m ∈ TopK]: KERN keeps its gates off the simplex; only the Sigmoid/Mixtral baselines renormalise
    if renormalize:
        eps = default_eps(gates.dtype) if eps is None else eps
        weights = weights / (weights.sum(dim=-1, keepdim=True) + eps)
    return TopK(index, weights)


def expert_counts(expert_index: Tensor, num_experts: int) -> Tensor:
    """Assignments per expert: ``c_e = Σ_t Σ_j 1[index_tj = e]``, ``(E,)`` long.

    A ``scatter_add`` into a fixed-size vector: unlike ``torch.bincount``, it needs no host-side maximum, so it does
    not synchronise a GPU with the host.
    """
    flat = expert_index.reshape(-1)
    return torch.zeros(num_experts, dtype=torch.long, device=flat.device).scatter_add_(0, flat, torch.ones_like(flat))


def switch_balance_loss(logits: Tensor, expert_index: Tensor) -> Tensor:
    """Switch-Transformer load-balancing loss, unweighted: ``E · Σ_e f_e · P_e``.

    ``f_e`` is the fraction of the ``N · K`` token-to-expert assignments that go to expert ``e`` (no gradient) and
    ``P_e`` the mean over tokens of ``softmax(s)_e`` (Fedus et al. 2022, Eq. (4), with top-k assignments counted
    as in GShard). Its minimum, 1, is reached by uniform assignments with uniform probabilities.

    Args:
        logits: ``(N, E)`` router logits.
        expert_index: ``(N, K)`` chosen experts.

    Returns:
        A scalar tensor.

    Raises:
        ValueError: if ``logits`` is not ``(N, E)`` with ``N ≥ 1`` or ``expert_index`` is not ``(N, K)``.
    """
    if logits.dim() != 2 or logits.shape[0] == 0:
        raise ValueError(f"logits must be (N, E) with N >= 1 tokens, got shape {tuple(logits.shape)}")
    if expert_index.dim() != 2 or expert_index.shape[0] != logits.shape[0]:
        raise ValueError(
            f"expert_index must be (N, K) with N = {logits.shape[0]} (the tokens of logits), "
            f"got shape {tuple(expert_index.shape)}"
        )
    num_experts = logits.shape[-1]
    f = expert_counts(expert_index, num_experts).to(logits.dtype) / expert_index.numel()  # (E,)
    p = torch.softmax(logits, dim=-1).mean(dim=0)  # (E,)
    # Switch Eq. (4): loss = E · Σ_e f_e P_e
    return num_experts * torch.dot(f, p)


@dataclass(frozen=True)
class RouterSpec:
    """One member of the FFN-style router family.

    Attributes:
        activation: elementwise activation ``act``.
        normalization: normalisation over the experts ``norm``.
        order: ``norm_act`` (``act(norm(s))``) or ``act_norm`` (``norm(act(s))``).
        learnable_gamma: γ is a trained scalar (KERN) instead of the constant 1.
        renormalize: the kept top-k gates are divided by their sum (requires a non-negative activation).
    """

    activation: Activation
    normalization: Normalization
    order: Order
    learnable_gamma: bool = False
    renormalize: bool = False

    def __post_init__(self) -> None:
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {self.activation!r}")
        if self.normalization not in NORMALIZATIONS:
            raise ValueError(f"normalization must be one of {NORMALIZATIONS}, got {self.normalization!r}")
        if self.order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS}, got {self.order!r}")
        if self.renormalize and self.activation not in NONNEGATIVE_ACTIVATIONS:
            raise ValueError(
                f"renormalize=True needs a non-negative activation {NONNEGATIVE_ACTIVATIONS}: the sum of "
                f"{self.activation!r} gates can be zero; set renormalize=False"
            )


ROUTERS: dict[str, RouterSpec] = {
    # Softmax over all experts, top-k, no renormalisation (GShard / Switch / DeepSeek-V2 style).
    "softmax": RouterSpec(activation="exp", normalization="l1", order="act_norm"),
    # Softmax over all experts, top-k, the kept weights renormalised to sum to one (Mixtral style); equal to a
    # softmax over the k kept logits.
    "softmax_renorm": RouterSpec(activation="exp", normalization="l1", order="act_norm", renormalize=True),
    # Sigmoid scores, top-k, selected weights renormalised to sum to one (DeepSeek-V3 style).
    "sigmoid": RouterSpec(activation="sigmoid", normalization="none", order="act_norm", renormalize=True),
    # Tanh scores, top-k, no renormalisation (the paper's Tanh baseline; its exact form is not in any source read).
    "tanh": RouterSpec(activation="tanh", normalization="none", order="act_norm"),
    # KERN, Eq. (3): γ · ReLU(ℓ2-norm(s)), learnable γ, no renormalisation.
    "kern": RouterSpec(activation="relu", normalization="l2", order="norm_act", learnable_gamma=True),
    # KERN with the other order, Eq. (4): γ · ℓ2-norm(ReLU(s)).
    "kern_act_norm": RouterSpec(activation="relu", normalization="l2", order="act_norm", learnable_gamma=True),
}


@dataclass(frozen=True)
class GateCost:
    """Counted operations per token of a router's gate: what :meth:`Router.forward` computes after the logits that
    depends on the router (``ĝ = γ · act(norm(s))`` or ``γ · norm(act(s))``, and the top-k renormalisation).

    One FLOP per elementary operation on one value: an exp, sqrt, sigmoid or tanh counts as one FLOP (``special``),
    like an add. What every router computes alike is left out: the logits ``s = W x + b``
    (:func:`projection_flops`), the top-k selection on ``s`` and the gather of the kept gates, and the balance loss
    (a softmax of ``s`` for every router).

    Attributes:
        multiply: products (squares of the ℓ2 norm, the scale γ).
        add: additions and subtractions (sums of the norms, ``+ ε``, softmax's max shift).
        divide: divisions (by the norm or the sum).
        compare: comparisons (ReLU, softmax's running max, the ``abs`` of the ℓ1 norm).
        special: elementary functions (exp, sqrt, sigmoid, tanh).
    """

    multiply: int
    add: int
    divide: int
    compare: int
    special: int

    @property
    def flops(self) -> int:
        """All counted operations: ``multiply + add + divide + compare + special``."""
        return self.multiply + self.add + self.divide + self.compare + self.special

    def __add__(self, other: GateCost) -> GateCost:
        return GateCost(
            self.multiply + other.multiply,
            self.add + other.add,
            self.divide + other.divide,
            self.compare + other.compare,
            self.special + other.special,
        )


def gate_cost(spec: RouterSpec | str, *, num_experts: int, k: int) -> GateCost:
    """Operations per token of a router's gate, counted from the code of :func:`gate_scores` and
    :func:`select_top_k` (``E`` = ``num_experts``, ``K`` = ``k``):

    * activation on ``E`` values: ReLU ``E`` compare; exp, sigmoid, tanh ``E`` special; identity nothing;
    * ℓ2 normalisation ``v / (‖v‖₂ + ε)``: ``E`` multiply (squares), ``E − 1`` add (their sum), 1 special (sqrt),
      1 add (``+ ε``), ``E`` divide;
    * ℓ1 normalisation ``v / (‖v‖₁ + ε)``: ``E`` compare (abs), ``E − 1`` add, 1 add (``+ ε``), ``E`` divide;
    * Softmax (exp then ℓ1 in the ``act_norm`` order) is computed as ``torch.softmax``, with the max subtracted:
      ``E − 1`` compare (max), ``E`` add (shift), ``E`` special (exp), ``E − 1`` add (sum), ``E`` divide;
    * the scale γ: ``E`` multiply, for every router (a constant 1 for the routers without a learnable γ);
    * the top-k renormalisation (Sigmoid): ``K − 1`` add (sum), 1 add (``+ ε``), ``K`` divide.

    The presets: Softmax ``6E − 2`` FLOPs, renormalised Softmax ``6E − 2 + 2K``, KERN (either order) ``5E + 1``,
    Sigmoid ``2E + 2K``, Tanh ``2E``.

    Args:
        spec: the family member, a :class:`RouterSpec` or a name in :data:`ROUTERS`.
        num_experts: ``E``.
        k: experts kept per token, ``1 ≤ k ≤ E``.

    Returns:
        The :class:`GateCost`.

    Raises:
        ValueError: for an unknown router name, ``num_experts < 1`` or ``k`` outside ``[1, num_experts]``.
    """
    if isinstance(spec, str):
        if spec not in ROUTERS:
            raise ValueError(f"spec: unknown router {spec!r}; choose one of {sorted(ROUTERS)}")
        spec = ROUTERS[spec]
    e = num_experts
    if e < 1:
        raise ValueError(f"num_experts must be positive, got {num_experts}")
    if not 1 <= k <= e:
        raise ValueError(f"k must lie in [1, num_experts={e}], got {k}")
    none = GateCost(0, 0, 0, 0, 0)
    act = {
        "relu": GateCost(0, 0, 0, e, 0),
        "exp": GateCost(0, 0, 0, 0, e),
        "sigmoid": GateCost(0, 0, 0, 0, e),
        "tanh": GateCost(0, 0, 0, 0, e),
        "identity": none,
    }[spec.activation]
    norm = {
        "l2": GateCost(multiply=e, add=(e - 1) + 1, divide=e, compare=0, special=1),
        "l1": GateCost(multiply=0, add=(e - 1) + 1, divide=e, compare=e, special=0),
        "none": none,
    }[spec.normalization]
    if spec.order == "act_norm" and spec.activation == "exp" and spec.normalization == "l1":
        # torch.softmax: max, shift, exp, sum, divide
        core = GateCost(multiply=0, add=e + (e - 1), divide=e, compare=e - 1, special=e)
    else:
        core = act + norm
    scale = GateCost(multiply=e, add=0, divide=0, compare=0, special=0)
    renorm = GateCost(multiply=0, add=(k - 1) + 1, divide=k, compare=0, special=0) if spec.renormalize else none
    return core + scale + renorm


def projection_flops(d_model: int, num_experts: int, *, bias: bool = True) -> int:
    """FLOPs per token of the logits ``s = W x + b``, the same for every router: ``D · E`` multiply and
    ``(D − 1) · E`` add for ``W x``, plus ``E`` add for the bias: ``2 D E`` with a bias, ``(2 D − 1) E`` without."""
    return d_model * num_experts + (d_model - 1) * num_experts + (num_experts if bias else 0)


class RouterOutput(NamedTuple):
    """What a router returns for ``N`` tokens.

    Attributes:
        expert_index: ``(N, K)`` long, the chosen experts.
        combine_weights: ``(N, K)``, the weights ``g`` of the chosen experts' outputs.
        gates: ``(N, E)``, the dense gate values ``ĝ`` before top-k.
        logits: ``(N, E)``, the router logits ``s``.
        balance_loss: scalar, the unweighted Switch load-balancing loss (:func:`switch_balance_loss`).
    """

    expert_index: Tensor
    combine_weights: Tensor
    gates: Tensor
    logits: Tensor
    balance_loss: Tensor


class Router(nn.Module):
    """A top-k MoE router of the FFN-style family: ``g = TopK(γ · act(norm(W x + b)))``.

    Precision: the logits and the gate are computed in float32 whatever the input dtype (float64 inputs stay in
    float64), with autocast disabled for the projection and the ε of float32; only the combine weights are cast back
    to the dtype the experts run in (the autocast dtype under ``torch.autocast``, else ``x``'s dtype). Computed in
    bfloat16 instead, the ε of bfloat16 (2⁻⁷) would shrink the kept gates of small logits and the projection would
    round the logits that decide the top-k.

    Auxiliary-loss-free balancing (DeepSeek-V3, Liu et al. 2024, §2.1.2), an option for every router: with
    ``bias_update_rate = u > 0`` the experts are selected by ``TopK(s + b)`` with a per-expert bias ``b`` (a
    buffer, saved in the state dict) that never enters the gate values; after every forward pass in training mode,
    ``b_e ← b_e + u · sign(c̄ − c_e)`` with ``c_e`` the assignments of expert ``e`` in that pass and ``c̄`` their
    mean (an overloaded expert is made less attractive). With ``u = 0`` (the default) ``b`` stays 0.

    Args:
        d_model: hidden size ``D`` of the token representations.
        num_experts: number of experts ``E``.
        k: experts per token, ``1 ≤ k ≤ E``.
        spec: the family member, a :class:`RouterSpec` or a name in :data:`ROUTERS`
            (``softmax``, ``softmax_renorm``, ``sigmoid``, ``tanh``, ``kern``, ``kern_act_norm``).
        bias: use the bias ``b`` of the logits (the paper's ``s = W_s Φ(x) + b_s``).
        eps: ε of the normalisations; default machine epsilon of the gate's dtype (float32, or float64).
        check_finite: check the input and the logits for NaN/inf in ``forward`` (on by default: the CPU reference
            runs). The check reads a boolean back to the host, which synchronises a GPU; turn it off on the hot path.
        bias_update_rate: ``u`` of the auxiliary-loss-free balancing (0: off).

    Shapes:
        ``forward(x: (..., D)) -> RouterOutput`` with ``N`` = the product of the leading dimensions.

    Raises:
        TypeError: naming the argument, for a size (``d_model``, ``num_experts``, ``k``) that is not an int.
        ValueError: for ``k`` outside ``[1, num_experts]``, a non-positive size, an unknown router name or a negative
            ``bias_update_rate``; in ``forward``, for an input ``x`` with the wrong hidden size, no tokens, or (with
            ``check_finite``) NaN/inf values.
        TypeError: in ``forward``, when ``x``'s dtype differs from the weights' (outside ``torch.autocast``).
        FloatingPointError: in ``forward`` (with ``check_finite``), when a finite ``x`` gives NaN or inf logits.
    """

    def __init__(
        self,
        d_model: int,
        num_experts: int,
        k: int,
        spec: RouterSpec | str = "kern",
        *,
        bias: bool = True,
        eps: float | None = None,
        check_finite: bool = True,
        bias_update_rate: float = 0.0,
    ) -> None:
        super().__init__()
        require_size("d_model", d_model)
        require_size("num_experts", num_experts)
        require_size("k", k, positive=False)  # its range is checked against num_experts below
        if not 1 <= k <= num_experts:
            raise ValueError(f"k must lie in [1, num_experts={num_experts}], got {k}; lower k or add experts")
        if isinstance(spec, str):
            if spec not in ROUTERS:
                raise ValueError(f"spec: unknown router {spec!r}; choose one of {sorted(ROUTERS)}")
            spec = ROUTERS[spec]
        if eps is not None and not eps > 0:
            raise ValueError(f"eps must be positive, got {eps}")
        if not bias_update_rate >= 0:
            raise ValueError(
                f"bias_update_rate must be non-negative (0 turns the balancing off), got {bias_update_rate}"
            )
        self.d_model, self.num_experts, self.k, self.spec, self.eps = d_model, num_experts, k, spec, eps
        self.check_finite, self.bias_update_rate = check_finite, float(bias_update_rate)
        self.proj = nn.Linear(d_model, num_experts, bias=bias)
        if spec.learnable_gamma:
            # γ: KERN's only added parameter, one global scalar initialised to 1
            self.gamma = nn.Parameter(torch.ones(()))
        else:
            self.register_buffer("gamma", torch.ones(()), persistent=False)
        self.register_buffer("selection_bias", torch.zeros(num_experts))

    def forward(self, x: Tensor) -> RouterOutput:
        """Route ``N`` tokens (steps 1-5 of the module docstring) and compute the balance loss.

        Args:
            x: ``(..., D)`` token representations; the leading dimensions are flattened to ``N``.

        Returns:
            :class:`RouterOutput` with ``(N, K)`` experts and weights (weights in the experts' dtype), ``(N, E)``
            gates and logits (float32, or float64 for float64 inputs).
        """
        if x.shape[-1] != self.d_model:
            raise ValueError(
                f"x: expected hidden size {self.d_model} in the last dimension, got shape {tuple(x.shape)}"
            )
        weight = self.proj.weight
        autocast = torch.is_autocast_enabled(x.device.type)
        if x.dtype != weight.dtype and not autocast:
            raise TypeError(
                f"x: dtype {x.dtype} differs from the router's weights' dtype {weight.dtype}; convert one of them "
                f"(x.to({weight.dtype}) or router.to({x.dtype}))"
            )
        flat = x.reshape(-1, self.d_model)  # (N, D)
        if flat.shape[0] == 0:
            raise ValueError(f"x: needs at least one token, got shape {tuple(x.shape)}")
        if self.check_finite and not torch.isfinite(flat).all():
            raise ValueError(f"x: contains NaN or inf ({_count_non_finite(flat)}); the router needs finite inputs")
        # The experts' dtype, which the combine weights are cast back to.
        out_dtype = torch.get_autocast_dtype(x.device.type) if autocast else x.dtype
        gate_dtype = torch.promote_types(flat.dtype, torch.float32)  # float32, or float64 for float64 inputs
        with torch.autocast(x.device.type, enabled=False):
            bias = None if self.proj.bias is None else self.proj.bias.to(gate_dtype)
            logits = F.linear(flat.to(gate_dtype), weight.to(gate_dtype), bias)  # (N, E): s = W x + b
            if self.check_finite and not torch.isfinite(logits).all():
                raise FloatingPointError(
                    "router logits contain NaN or inf from a finite input x: the router's weights are non-finite or "
                    "too large; check the learning rate"
                )
            gates = _gate_values(
                logits,
                activation=self.spec.activation,
                normalization=self.spec.normalization,
                order=self.spec.order,
                gamma=self.gamma.to(gate_dtype),
                eps=self.eps,
            )  # (N, E)
            # aux-loss-free balancing (DeepSeek-V3 style): the bias moves which experts are chosen, not their gates
            selection = logits + self.selection_bias.to(gate_dtype) if self.bias_update_rate > 0 else logits
            chosen = select_top_k(selection, gates, self.k, renormalize=self.spec.renormalize, eps=self.eps)
            balance = switch_balance_loss(logits, chosen.expert_index)
        if self.bias_update_rate > 0 and self.training:
            self._update_selection_bias(chosen.expert_index)
        return RouterOutput(
            expert_index=chosen.expert_index,
            combine_weights=chosen.combine_weights.to(out_dtype),
            gates=gates,
            logits=logits,
            balance_loss=balance,
        )

    @torch.no_grad()
    def _update_selection_bias(self, expert_index: Tensor) -> None:
        """``b_e ← b_e + u · sign(c̄ − c_e)`` on this pass's assignments (no host synchronisation)."""
        counts = expert_counts(expert_index, self.num_experts).to(self.selection_bias.dtype)  # (E,)
        self.selection_bias.add_(self.bias_update_rate * torch.sign(counts.mean() - counts))

    def extra_repr(self) -> str:
        s = self.spec
        return (
            f"d_model={self.d_model}, num_experts={self.num_experts}, k={self.k}, activation={s.activation}, "
            f"normalization={s.normalization}, order={s.order}, learnable_gamma={s.learnable_gamma}, "
            f"renormalize={s.renormalize}, check_finite={self.check_finite}, "
            f"bias_update_rate={self.bias_update_rate}"
        )
