"""Measurements around the KERN router: output scale at initialisation, router cost, expert-load balance.

Paper: "Understanding the Mixture-of-Experts with Nadaraya-Watson Kernel", Zheng et al., ICLR 2026,
arXiv 2509.25913.

* :func:`init_output_second_moment` — the paper's scale argument (§3.4 as summarised by its reviewers): with expert
  outputs ``E_m(x)`` independent, zero-mean and of unit variance per coordinate, the MoE output's second moment per
  coordinate is ``E[Σ_m g_m²]``. Under KERN the kept gates are a slice of a unit vector (times γ), so this does not
  grow or shrink with the number of experts ``M`` when ``K / M`` is fixed; under Softmax it shrinks like ``1 / M``.
* :func:`time_gates` — wall time of the gate alone (no projection), and :func:`median_paired_ratio`, the median of
  round-by-round ratios of two timings.
* :func:`make_router_bench` and :func:`time_routers` — wall time of routers' forward + backward, all routers on the
  same weights and input (the "zero additional cost" claim).
* :func:`coefficient_of_variation` — the load-balance metric ``std(c) / mean(c)`` of assignments per expert.

Glossary: ``N`` tokens, ``D`` hidden size, ``E`` experts, ``K`` experts per token.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import Tensor

from iclr26.kern.router import ROUTERS, Router, RouterSpec, _gate_values, select_top_k


def coefficient_of_variation(counts: Tensor) -> float:
    """``std(c) / mean(c)`` (population std) of per-expert assignment counts ``c: (E,)``; 0 for perfect balance.

    Raises:
        ValueError: if ``counts`` is empty or sums to zero.
    """
    c = counts.double()
    if c.numel() == 0 or float(c.sum()) <= 0:
        raise ValueError(f"counts must be a non-empty vector with a positive sum, got {counts.tolist()}")
    return float(c.std(unbiased=False) / c.mean())


@torch.no_grad()
def init_output_second_moment(
    spec: RouterSpec | str,
    *,
    d_model: int,
    num_experts: int,
    k: int,
    n_tokens: int,
    init_std: float = 0.02,
    generator: torch.Generator | None = None,
) -> float:
    """Monte-Carlo ``E[Σ_m g_m²]`` of a freshly initialised router on Gaussian inputs.

    This is ``E‖MoE(x)‖² / D`` when the experts' outputs are independent with zero mean and unit variance
    (``E‖Σ_m g_m e_m‖² = Σ_m g_m² E‖e_m‖²``).

    Args:
        spec: router name or :class:`RouterSpec`.
        d_model: hidden size ``D``.
        num_experts: ``E`` (``M`` in the paper).
        k: experts per token.
        n_tokens: Monte-Carlo sample size ``N``.
        init_std: standard deviation of the router weights (bias 0), TinyLM's 0.02 by default.
        generator: source of randomness for the weights and the inputs ``x ~ N(0, I_D)``.

    Returns:
        The sample mean of ``Σ_m g_m²`` over the tokens, in float64.
    """
    router = Router(d_model, num_experts, k, spec).double()
    router.proj.weight.copy_(torch.randn(num_experts, d_model, generator=generator, dtype=torch.float64) * init_std)
    router.proj.bias.zero_()
    x = torch.randn(n_tokens, d_model, generator=generator, dtype=torch.float64)  # (N, D)
    weights = router(x).combine_weights  # (N, K)
    # the paper's scale argument: each output coordinate has second moment E[Σ_m g_m²] (independent unit-variance E_m)
    return float(weights.pow(2).sum(dim=-1).mean())


class RouterBench(NamedTuple):
    """Routers and an input for :func:`time_routers`.

    Attributes:
        routers: name -> :class:`Router`, all with the same logit weights ``W ~ N(0, 0.02²)`` and zero bias.
        x: ``(N, D)`` input, ``x ~ N(0, I_D)``.
    """

    routers: dict[str, Router]
    x: Tensor


def make_router_bench(
    names: Iterable[str],
    *,
    d_model: int,
    num_experts: int,
    k: int,
    n_tokens: int,
    generator: torch.Generator | None = None,
    device: torch.device | str = "cpu",
) -> RouterBench:
    """Build the routers ``names`` (see :data:`iclr26.kern.router.ROUTERS`) on shared weights, and an input.

    The input and the weights are drawn on the CPU from ``generator`` (in that order), then moved to ``device``, so
    a seed gives the same numbers on every device.

    Args:
        names: router names.
        d_model: hidden size ``D``.
        num_experts: experts ``E``.
        k: experts per token.
        n_tokens: tokens per call ``N``.
        generator: source of randomness for the input and the weights.
        device: where the routers and the input live.

    Returns:
        The :class:`RouterBench`.
    """
    x = torch.randn(n_tokens, d_model, generator=generator)  # (N, D)
    weight = torch.randn(num_experts, d_model, generator=generator) * 0.02  # (E, D)
    routers = {}
    for name in names:
        router = Router(d_model, num_experts, k, name)
        with torch.no_grad():
            router.proj.weight.copy_(weight)
            router.proj.bias.zero_()
        routers[name] = router.to(device)
    return RouterBench(routers, x.to(device))


@dataclass(frozen=True)
class RouterTiming:
    """Forward + backward wall time of one router call.

    Attributes:
        median_ms: median over the timed repeats, milliseconds.
        min_ms: fastest repeat, milliseconds (the least disturbed by other processes on a shared machine).
        repeats: number of timed repeats (after the warm-up).
        times_ms: every timed repeat in round order (for ratios paired round by round).
    """

    median_ms: float
    min_ms: float
    repeats: int
    times_ms: tuple[float, ...] = ()


def time_routers(
    routers: dict[str, Router],
    x: Tensor,
    *,
    repeats: int = 20,
    warmup: int = 3,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, RouterTiming]:
    """Time each router's forward plus the backward of ``Σ combine_weights + balance_loss``, interleaved.

    Each round calls every router once, in an order rotated from round to round, so that a slow spell of a shared
    machine hits all routers alike.

    Args:
        routers: name -> router (their parameters receive gradients; zeroed before each call).
        x: ``(N, D)`` input (a leaf; its gradient is computed too, as inside a network).
        repeats: timed rounds.
        warmup: untimed rounds first.
        clock: the clock each round is timed with (``time.thread_time`` for this thread's CPU time).

    Returns:
        name -> :class:`RouterTiming`.

    Raises:
        ValueError: if ``routers`` is empty, ``repeats < 1`` or ``warmup < 0``.
    """
    if not routers or repeats < 1 or warmup < 0:
        raise ValueError(
            f"need at least one router, repeats >= 1 and warmup >= 0; got {len(routers)} routers, "
            f"repeats={repeats}, warmup={warmup}"
        )
    x = x.detach().requires_grad_(True)
    sync = torch.cuda.synchronize if x.is_cuda else (lambda: None)
    names = list(routers)
    times: dict[str, list[float]] = {name: [] for name in names}
    for i in range(warmup + repeats):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            router = routers[name]
            router.zero_grad(set_to_none=True)
            x.grad = None
            sync()
            t0 = clock()
            out = router(x)
            (out.combine_weights.sum() + out.balance_loss).backward()
            sync()
            if i >= warmup:
                times[name].append((clock() - t0) * 1e3)
    return {
        name: RouterTiming(median_ms=statistics.median(t), min_ms=min(t), repeats=repeats, times_ms=tuple(t))
        for name, t in times.items()
    }


def median_paired_ratio(a: RouterTiming, b: RouterTiming) -> float:
    """Median over rounds of ``a_i / b_i``: the two timings' repeats paired round by round (same machine state).

    Raises:
        ValueError: if the timings hold different numbers of rounds or none.
    """
    if len(a.times_ms) != len(b.times_ms) or not a.times_ms:
        raise ValueError(
            f"need the same positive number of rounds in both timings, got {len(a.times_ms)} and {len(b.times_ms)}"
        )
    return statistics.median(x / y for x, y in zip(a.times_ms, b.times_ms, strict=True))


def time_gates(
    specs: dict[str, RouterSpec | str],
    logits: Tensor,
    k: int,
    *,
    repeats: int = 20,
    warmup: int = 3,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, RouterTiming]:
    """Time the gate alone (steps 2-5: activation, normalisation, γ, top-k and renormalisation), forward plus the
    backward of ``Σ combine_weights``, on the same logits for every router, interleaved as in :func:`time_routers`.

    The shared projection ``W x + b`` is left out, so a slower gate is not diluted by it.

    Args:
        specs: name -> router name in :data:`~iclr26.kern.router.ROUTERS` or :class:`RouterSpec`.
        logits: ``(N, E)`` router logits (a leaf; their gradient is computed).
        k: experts per token.
        repeats: timed rounds.
        warmup: untimed rounds first.
        clock: the clock each round is timed with (``time.thread_time`` for this thread's CPU time).

    Returns:
        name -> :class:`RouterTiming` (with every round's time).

    Raises:
        ValueError: if ``specs`` is empty, ``repeats < 1`` or ``warmup < 0``.
    """
    if not specs or repeats < 1 or warmup < 0:
        raise ValueError(
            f"need at least one router, repeats >= 1 and warmup >= 0; got {len(specs)} routers, "
            f"repeats={repeats}, warmup={warmup}"
        )
    resolved = {name: ROUTERS[s] if isinstance(s, str) else s for name, s in specs.items()}
    logits = logits.detach().requires_grad_(True)
    gamma = torch.ones((), dtype=logits.dtype, device=logits.device, requires_grad=True)
    sync = torch.cuda.synchronize if logits.is_cuda else (lambda: None)
    names = list(resolved)
    times: dict[str, list[float]] = {name: [] for name in names}
    for i in range(warmup + repeats):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            spec = resolved[name]
            logits.grad, gamma.grad = None, None
            sync()
            t0 = clock()
            gates = _gate_values(
                logits,
                activation=spec.activation,
                normalization=spec.normalization,
                order=spec.order,
                gamma=gamma,
                eps=None,
            )
            chosen = select_top_k(logits, gates, k, renormalize=spec.renormalize)
            chosen.combine_weights.sum().backward()
            sync()
            if i >= warmup:
                times[name].append((clock() - t0) * 1e3)
    return {
        name: RouterTiming(median_ms=statistics.median(t), min_ms=min(t), repeats=repeats, times_ms=tuple(t))
        for name, t in times.items()
    }
