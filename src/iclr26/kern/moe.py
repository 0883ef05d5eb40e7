"""A top-k mixture-of-experts feed-forward block for :class:`iclr26.common.tinylm.TinyLM`, with any router.

Paper: "Understanding the Mixture-of-Experts with Nadaraya-Watson Kernel", Zheng et al., ICLR 2026,
arXiv 2509.25913. The block computes ``MoE(x) = Σ_{m ∈ TopK(x)} g_m(x) E_m(x)`` (the paper's Nadaraya-Watson form
of MoE) where ``g`` comes from a :class:`~iclr26.kern.router.Router` (Softmax, Sigmoid, Tanh, KERN, ...) and each
expert ``E_m`` is a GELU MLP ``W2_m · GELU(W1_m x + b1_m) + b2_m`` like the model's dense MLP.

One forward pass over ``N`` tokens:

1. route: ``RouterOutput`` (experts ``(N, K)``, weights ``(N, K)``, balance loss);
2. group the ``N · K`` assignments by expert with a stable sort (:func:`group_by_expert`, or :func:`pad_by_expert`
   into a fixed ``(E, C)`` grid); with a capacity factor, an expert keeps only its first ``C = ⌈cf · N · K / E⌉``
   assignments in token order (off by default: dropless);
3. gather the tokens of each expert (one index operation), run each expert on its contiguous slice (``grouped``),
   all experts at once on the grid (``padded``, no host synchronisation), or all experts in one grouped GEMM over
   the sorted tokens (``grouped_mm``: ``torch.nn.functional.grouped_mm``, CUDA bf16, no padding and no host
   synchronisation);
4. scale each result by its combine weight and scatter-add it back to its token (``index_add_``);
5. return ``FFNOutput(y, aux_loss = α · balance_loss)`` with ``α`` = ``aux_loss_coef``.

The block also keeps statistics for the reproduction (no effect on the computation): assignments per expert
(``load_counts``), dropped assignments, and, when ``time_router`` is set, the seconds spent in the router's forward.

Glossary: ``B`` batch, ``T`` tokens per sequence, ``N = B · T``, ``D`` model width, ``E`` experts, ``K`` experts per
token, ``H`` expert hidden width, ``S`` kept assignments (``N · K`` without a capacity limit).

Deviations:
    * The paper specifies neither the load-balancing loss nor capacity handling; the Switch loss with
      ``aux_loss_coef = 0.01`` (Fedus et al. 2022) and dropless routing are our choices, the same for every router.
"""

from __future__ import annotations

import math
import time
from typing import Literal, NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from iclr26.common.tinylm import FFNOutput
from iclr26.kern.router import Router, RouterOutput, RouterSpec, expert_counts, require_size

DISPATCHES: tuple[str, ...] = ("auto", "grouped", "padded", "grouped_mm")


class Dispatch(NamedTuple):
    """Assignments grouped by expert.

    Attributes:
        assignment: ``(S,)`` long, index into the flattened ``(N · K)`` assignments, sorted by expert (stable, so
            tokens keep their order within an expert).
        token: ``(S,)`` long, the token of each kept assignment (``assignment // K``).
        counts: ``(E,)`` long, kept assignments per expert (``counts.sum() == S``).
        dropped: number of assignments dropped by the capacity limit.
    """

    assignment: Tensor
    token: Tensor
    counts: Tensor
    dropped: int


def expert_capacity(num_tokens: int, k: int, num_experts: int, capacity_factor: float) -> int:
    """Slots per expert: ``C = ⌈cf · N · K / E⌉`` (GShard / Switch)."""
    return math.ceil(capacity_factor * num_tokens * k / num_experts)


def group_by_expert(expert_index: Tensor, num_experts: int, capacity: int | None = None) -> Dispatch:
    """Sort the ``N · K`` assignments by expert; keep at most ``capacity`` per expert (the earliest tokens).

    Args:
        expert_index: ``(N, K)`` long.
        num_experts: ``E``.
        capacity: slots per expert, or None for no limit.

    Returns:
        The :class:`Dispatch`.

    Raises:
        ValueError: if ``expert_index`` is not 2-D or ``capacity`` is below 1.
    """
    if expert_index.dim() != 2:
        raise ValueError(f"expert_index must be (N, K), got shape {tuple(expert_index.shape)}")
    if capacity is not None and capacity < 1:
        raise ValueError(f"capacity must be at least 1 slot per expert (or None for no limit), got {capacity}")
    k = expert_index.shape[1]
    flat = expert_index.reshape(-1)  # (N·K,)
    order = torch.argsort(flat, stable=True)  # (N·K,)
    counts = expert_counts(flat, num_experts)  # (E,)
    dropped = 0
    if capacity is not None:
        starts = torch.cumsum(counts, 0) - counts  # (E,) first sorted position of each expert
        position = torch.arange(flat.numel(), device=flat.device) - starts[flat[order]]  # rank within its expert
        keep = position < capacity
        dropped = int((~keep).sum())
        order = order[keep]
        counts = counts.clamp(max=capacity)
    return Dispatch(assignment=order, token=torch.div(order, k, rounding_mode="floor"), counts=counts, dropped=dropped)


class PaddedDispatch(NamedTuple):
    """Assignments laid out in a fixed ``(E, C)`` grid of slots, with static shapes (no host synchronisation).

    Attributes:
        slot_token: ``(E · C,)`` long, the token in each slot; ``N`` (a padding row) for an empty slot.
        slot_assignment: ``(E · C,)`` long, the flattened ``(N · K)`` assignment in each slot; ``N · K`` for an
            empty slot.
        counts: ``(E,)`` long, kept assignments per expert.
        dropped: 0-dim long tensor, assignments that found no slot.
        capacity: ``C``, slots per expert.
    """

    slot_token: Tensor
    slot_assignment: Tensor
    counts: Tensor
    dropped: Tensor
    capacity: int


def pad_by_expert(expert_index: Tensor, num_experts: int, capacity: int) -> PaddedDispatch:
    """Place the ``N · K`` assignments in ``E`` rows of ``capacity`` slots, in token order within each expert.

    Every shape depends on ``N``, ``K``, ``E`` and ``capacity`` only, and no value is read back to the host, so
    on a GPU this runs without synchronising. With ``capacity = N`` nothing is dropped (a token picks an expert at
    most once); a smaller capacity drops an expert's latest tokens, as :func:`group_by_expert` does.

    Args:
        expert_index: ``(N, K)`` long, distinct experts per row.
        num_experts: ``E``.
        capacity: ``C ≥ 1`` slots per expert.

    Returns:
        The :class:`PaddedDispatch`.

    Raises:
        ValueError: if ``expert_index`` is not 2-D or ``capacity`` is below 1.
    """
    if expert_index.dim() != 2:
        raise ValueError(f"expert_index must be (N, K), got shape {tuple(expert_index.shape)}")
    if capacity < 1:
        raise ValueError(f"capacity must be at least 1 slot per expert, got {capacity}")
    n, k = expert_index.shape
    flat = expert_index.reshape(-1)  # (N·K,)
    order = torch.argsort(flat, stable=True)  # (N·K,) sorted by expert, token order kept
    counts = expert_counts(flat, num_experts)  # (E,)
    starts = torch.cumsum(counts, 0) - counts  # (E,)
    expert_sorted = flat[order]
    position = torch.arange(flat.numel(), device=flat.device) - starts[expert_sorted]  # rank within its expert
    keep = position < capacity
    # Dropped assignments go to one extra slot E·C, cut off below.
    slot = torch.where(keep, expert_sorted * capacity + position, num_experts * capacity)  # (N·K,)
    size = num_experts * capacity + 1
    slot_assignment = torch.full((size,), n * k, dtype=torch.long, device=flat.device).scatter_(0, slot, order)
    slot_assignment = slot_assignment[:-1]  # (E·C,)
    slot_token = torch.where(slot_assignment < n * k, torch.div(slot_assignment, k, rounding_mode="floor"), n)
    return PaddedDispatch(
        slot_token=slot_token,
        slot_assignment=slot_assignment,
        counts=counts.clamp(max=capacity),
        dropped=(~keep).sum(),
        capacity=capacity,
    )


class MoEFeedForward(nn.Module):
    """Top-k MoE feed-forward block: ``y = Σ_{m ∈ TopK} g_m(x) · E_m(x)``.

    Args:
        d_model: model width ``D``.
        num_experts: experts ``E``.
        k: experts per token ``K``.
        d_expert: hidden width ``H`` of each expert (``d_ff / K`` matches a dense MLP's active parameters).
        router: router name (see :data:`iclr26.kern.router.ROUTERS`) or a :class:`RouterSpec`.
        aux_loss_coef: weight ``α`` of the Switch load-balancing loss (0 disables it).
        capacity_factor: None for dropless routing, else the capacity factor ``cf > 0``.
        router_bias: use the router bias ``b``.
        dropout: dropout on the block output (as the dense MLP).
        init_std: standard deviation of the expert weight initialisation (0.02: TinyLM's ``nn.Linear`` init).
        dispatch: ``grouped`` (:func:`group_by_expert`, then one matrix product per expert on its contiguous slice:
            the least compute, but the slice sizes are read back to the host, one synchronisation per layer on a GPU),
            ``padded`` (:func:`pad_by_expert`, then one batched product over a fixed ``(E, C, D)`` grid: no
            synchronisation; dropless it uses ``C = N``, i.e. ``E / K`` times the active compute, so pair it with a
            ``capacity_factor`` at scale), ``grouped_mm`` (the ``N · K`` assignments sorted by expert, then one grouped
            GEMM per layer of the expert MLP with ``torch.nn.functional.grouped_mm``: the active compute only, static
            shapes, no synchronisation; a capacity limit zeroes the weights of the dropped assignments; CUDA bf16) or
            ``auto`` (on CUDA ``grouped_mm`` where this build runs it forward and backward in the input's compute
            dtype, else ``padded``; ``grouped`` elsewhere). All give the same output up to float summation order.
        check_finite: passed to the :class:`~iclr26.kern.router.Router` (NaN/inf checks, a host synchronisation).
        bias_update_rate: passed to the router: ``u`` of the auxiliary-loss-free balancing (0: off).

    Shapes:
        ``forward(x: (..., D)) -> FFNOutput(y (..., D), aux_loss scalar | None)``.

    Raises:
        TypeError: naming the argument, for a size that is not an int.
        ValueError: for a non-positive size, ``k`` outside ``[1, E]``, ``aux_loss_coef < 0``, ``capacity_factor
            <= 0``, ``init_std < 0`` or an unknown ``dispatch``; in ``forward``, for an input with the wrong hidden
            size.
    """

    def __init__(
        self,
        d_model: int,
        *,
        num_experts: int,
        k: int,
        d_expert: int,
        router: str | RouterSpec = "kern",
        aux_loss_coef: float = 0.01,
        capacity_factor: float | None = None,
        router_bias: bool = True,
        dropout: float = 0.0,
        init_std: float = 0.02,
        dispatch: Literal["auto", "grouped", "padded", "grouped_mm"] = "auto",
        check_finite: bool = True,
        bias_update_rate: float = 0.0,
    ) -> None:
        super().__init__()
        require_size("d_model", d_model)
        require_size("d_expert", d_expert)
        if not aux_loss_coef >= 0:
            raise ValueError(f"aux_loss_coef must be non-negative, got {aux_loss_coef}")
        if capacity_factor is not None and not capacity_factor > 0:
            raise ValueError(f"capacity_factor must be positive or None (dropless), got {capacity_factor}")
        if not init_std >= 0:
            raise ValueError(f"init_std must be non-negative, got {init_std}")
        if dispatch not in DISPATCHES:
            raise ValueError(f"dispatch must be one of {DISPATCHES}, got {dispatch!r}")
        self.dispatch = dispatch
        self.router = Router(
            d_model,
            num_experts,
            k,
            router,
            bias=router_bias,
            check_finite=check_finite,
            bias_update_rate=bias_update_rate,
        )
        self.d_model, self.num_experts, self.k, self.d_expert = d_model, num_experts, k, d_expert
        self.aux_loss_coef, self.capacity_factor = aux_loss_coef, capacity_factor
        self.w1 = nn.Parameter(torch.randn(num_experts, d_model, d_expert) * init_std)  # (E, D, H)
        self.b1 = nn.Parameter(torch.zeros(num_experts, d_expert))  # (E, H)
        self.w2 = nn.Parameter(torch.randn(num_experts, d_expert, d_model) * init_std)  # (E, H, D)
        self.b2 = nn.Parameter(torch.zeros(num_experts, d_model))  # (E, D)
        self.drop = nn.Dropout(dropout)
        self.time_router = False
        self.register_buffer("load_counts", torch.zeros(num_experts, dtype=torch.long), persistent=False)
        self.register_buffer("dropped", torch.zeros((), dtype=torch.long), persistent=False)
        self.reset_stats()

    def reset_stats(self) -> None:
        """Zero the statistics: ``load_counts``, ``dropped``, ``router_time_s``, ``router_calls``."""
        self.load_counts.zero_()
        self.dropped.zero_()
        self.router_time_s = 0.0
        self.router_calls = 0

    def expert(self, e: int, x: Tensor) -> Tensor:
        """Expert ``e`` on its tokens: ``W2_e · GELU(W1_e x + b1_e) + b2_e``, ``x: (n, D) -> (n, D)``."""
        return F.gelu(x @ self.w1[e] + self.b1[e]) @ self.w2[e] + self.b2[e]

    def active_parameters(self) -> int:
        """Parameters one token uses: the router plus ``K`` experts."""
        per_expert = self.w1[0].numel() + self.b1[0].numel() + self.w2[0].numel() + self.b2[0].numel()
        return sum(p.numel() for p in self.router.parameters()) + self.k * per_expert

    def _route(self, flat: Tensor) -> RouterOutput:
        if not self.time_router:
            return self.router(flat)
        if flat.is_cuda:
            torch.cuda.synchronize(flat.device)
        t0 = time.perf_counter()
        out = self.router(flat)
        if flat.is_cuda:
            torch.cuda.synchronize(flat.device)
        self.router_time_s += time.perf_counter() - t0
        self.router_calls += 1
        return out

    def forward(self, x: Tensor) -> FFNOutput:
        """Steps 1-5 of the module docstring: ``x: (..., D) -> FFNOutput(y (..., D), α · balance loss)``."""
        if x.shape[-1] != self.d_model:
            raise ValueError(f"x: expected hidden size {self.d_model} in the last dimension, got {tuple(x.shape)}")
        flat = x.reshape(-1, self.d_model)  # (N, D)
        routed = self._route(flat)  # Step 1
        capacity = (
            None
            if self.capacity_factor is None
            else expert_capacity(flat.shape[0], self.k, self.num_experts, self.capacity_factor)
        )
        mode = self.dispatch if self.dispatch != "auto" else _auto_dispatch(flat)
        if mode == "grouped":
            y, counts, dropped = self._grouped(flat, routed, capacity)
        elif mode == "grouped_mm":
            y, counts, dropped = self._grouped_mm(flat, routed, capacity)
        else:
            y, counts, dropped = self._padded(flat, routed, flat.shape[0] if capacity is None else capacity)
        with torch.no_grad():
            self.load_counts += counts
            self.dropped += dropped
        aux = self.aux_loss_coef * routed.balance_loss if self.aux_loss_coef > 0 else None  # Step 5
        return FFNOutput(self.drop(y).reshape(x.shape), aux)

    def _grouped(self, flat: Tensor, routed: RouterOutput, capacity: int | None) -> tuple[Tensor, Tensor, int]:
        """Steps 2-4 with :func:`group_by_expert`: one product per expert on its slice (sizes read on the host)."""
        groups = group_by_expert(routed.expert_index, self.num_experts, capacity)  # Step 2
        xs = flat[groups.token]  # (S, D), Step 3
        ys = torch.cat(
            [self.expert(e, chunk) for e, chunk in enumerate(xs.split(groups.counts.tolist()))], dim=0
        )  # (S, D)
        weights = routed.combine_weights.reshape(-1)[groups.assignment]  # (S,)
        # Step 4: y_t = Σ_{m ∈ TopK(t)} g_tm E_m(x_t)
        y = torch.zeros_like(flat).index_add_(0, groups.token, ys * weights[:, None].to(ys.dtype))  # (N, D)
        return y, groups.counts, groups.dropped

    def _padded(self, flat: Tensor, routed: RouterOutput, capacity: int) -> tuple[Tensor, Tensor, Tensor]:
        """Steps 2-4 with :func:`pad_by_expert`: static shapes, no host synchronisation."""
        n = flat.shape[0]
        grid = pad_by_expert(routed.expert_index, self.num_experts, capacity)  # Step 2
        padded = torch.cat([flat, flat.new_zeros(1, self.d_model)])  # (N + 1, D), row N = empty slot
        xs = padded[grid.slot_token].view(self.num_experts, capacity, self.d_model)  # (E, C, D), Step 3
        h = F.gelu(torch.baddbmm(self.b1[:, None, :].to(xs.dtype), xs, self.w1.to(xs.dtype)))  # (E, C, H)
        ys = torch.baddbmm(self.b2[:, None, :].to(h.dtype), h, self.w2.to(h.dtype))  # (E, C, D)
        weights = torch.cat([routed.combine_weights.reshape(-1), routed.combine_weights.new_zeros(1)])
        slot_weight = weights[grid.slot_assignment]  # (E·C,), 0 for empty slots
        # Step 4: y_t = Σ_{m ∈ TopK(t)} g_tm E_m(x_t); empty slots land on the padding row N, cut off.
        contrib = ys.reshape(-1, self.d_model) * slot_weight[:, None].to(ys.dtype)  # (E·C, D)
        y = flat.new_zeros(n + 1, self.d_model).index_add_(0, grid.slot_token, contrib.to(flat.dtype))[:n]
        return y, grid.counts, grid.dropped

    def _grouped_mm(self, flat: Tensor, routed: RouterOutput, capacity: int | None) -> tuple[Tensor, Tensor, Tensor]:
        """Steps 2-4 with one grouped GEMM per expert layer over the assignments sorted by expert: ``S = N · K``
        rows always (static shapes, no host synchronisation); a capacity limit gives the dropped assignments a
        combine weight of 0, which is what dropping them does to the output and the gradients."""
        n, k = routed.expert_index.shape
        flat_index = routed.expert_index.reshape(-1)  # (N·K,)
        order = torch.argsort(flat_index, stable=True)  # (S,) sorted by expert, token order kept
        expert_sorted = flat_index[order]  # (S,)
        counts = expert_counts(flat_index, self.num_experts)  # (E,)
        offsets = torch.cumsum(counts, 0).to(torch.int32)  # (E,) end of each expert's rows
        weights = routed.combine_weights.reshape(-1)[order]  # (S,)
        dropped = counts.new_zeros(())
        if capacity is not None:
            position = torch.arange(n * k, device=flat.device) - (offsets.long() - counts)[expert_sorted]
            keep = position < capacity
            weights = weights * keep.to(weights.dtype)
            dropped, counts = (~keep).sum(), counts.clamp(max=capacity)
        token = torch.div(order, k, rounding_mode="floor")  # (S,)
        dtype = torch.get_autocast_dtype("cuda") if flat.is_cuda and torch.is_autocast_enabled("cuda") else flat.dtype
        xs = flat[token].to(dtype)  # (S, D), Step 3
        h = F.grouped_mm(xs, self.w1.to(dtype), offs=offsets) + self.b1.to(dtype)[expert_sorted]  # (S, H)
        ys = F.grouped_mm(F.gelu(h), self.w2.to(dtype), offs=offsets) + self.b2.to(dtype)[expert_sorted]  # (S, D)
        # Step 4: y_t = Σ_{m ∈ TopK(t)} g_tm E_m(x_t)
        contrib = ys * weights[:, None].to(ys.dtype)  # (S, D)
        y = torch.zeros_like(flat).index_add_(0, token, contrib.to(flat.dtype))  # (N, D)
        return y, counts, dropped

    def extra_repr(self) -> str:
        return (
            f"d_model={self.d_model}, num_experts={self.num_experts}, k={self.k}, d_expert={self.d_expert}, "
            f"aux_loss_coef={self.aux_loss_coef}, capacity_factor={self.capacity_factor}, dispatch={self.dispatch}"
        )


_GROUPED_MM_WORKS: dict[tuple[str, torch.dtype], bool] = {}


def _auto_dispatch(flat: Tensor) -> str:
    """``grouped`` on the CPU; on CUDA ``grouped_mm`` if this build runs it (forward and backward) in the compute
    dtype, else ``padded``."""
    if not flat.is_cuda:
        return "grouped"
    dtype = torch.get_autocast_dtype("cuda") if torch.is_autocast_enabled("cuda") else flat.dtype
    key = (str(flat.device), dtype)
    if key not in _GROUPED_MM_WORKS:
        _GROUPED_MM_WORKS[key] = _grouped_mm_works(flat.device, dtype)
    return "grouped_mm" if _GROUPED_MM_WORKS[key] else "padded"


def _grouped_mm_works(device: torch.device, dtype: torch.dtype) -> bool:
    """Whether ``grouped_mm`` runs forward and backward on ``device`` in ``dtype`` (probed once on a tiny problem)."""
    if not hasattr(F, "grouped_mm"):
        return False
    try:
        with torch.enable_grad(), torch.autocast(device.type, enabled=False):  # also when first met under no_grad
            a = torch.randn(32, 16, device=device, dtype=dtype, requires_grad=True)
            b = torch.randn(2, 16, 16, device=device, dtype=dtype, requires_grad=True)
            offs = torch.tensor([8, 32], device=device, dtype=torch.int32)
            F.grouped_mm(a, b, offs=offs).float().sum().backward()
        return a.grad is not None and b.grad is not None
    except (RuntimeError, TypeError, NotImplementedError):
        return False
