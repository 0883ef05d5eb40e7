"""Counted compute of the uncertainty methods: multiply-adds per training transition and per query.

The paper's cost claim ("a fraction of the compute" of a deep ensemble) is judged here on a count that follows from
the network sizes alone, so two runs of one config always agree on it (times are recorded beside it, in the
record's ``timings``). For an MLP with layer widths ``d_0`` (input ``D_s + D_a + D_z``), ``d_1, ..., d_L``
(``d_L`` = heads ``H``), counting the multiply-adds (MACs) of its dense layers per sample:

    forward   F(d) = Σ_{l=1..L} d_{l-1} d_l
    backward  B(d) = 2 F(d) - d_0 d_1

The backward pass computes a weight gradient (``d_{l-1} d_l`` MACs) for every layer and an input gradient
(``d_{l-1} d_l``) for every layer but the first, whose input needs none. Biases, activations, the loss and the
optimiser's update are not counted: they cost ``O(Σ_l d_l)`` per sample, or ``O(parameters)`` per minibatch.

Per training transition ``(s, a, s', a', z)``:

    UVU (``u`` and ``g``, H heads)    4 F(d_H) + B(d_H)       u and g at (s, a) and (s', a'); backward through u(s, a)
    ensemble of K members (1 head)   K (2 F(d_1) + B(d_1))   each Q_k at (s, a) and (s', a'); backward through Q_k(s, a)
    RND (``f`` and ``g``, H heads)    2 F(d_H) + B(d_H)       f and g at (s, a); backward through f

Per query ``(s, a, z)``: UVU and RND ``2 F(d_H)``, the ensemble ``K F(d_1)``. ``d_H`` and ``d_1`` are the same
widths ending in ``H`` and 1 heads. Every method trains for the same steps on the same minibatch size, so the ratio
of two methods' training compute is the ratio of their per-transition counts. The counts equal the matrix-multiply
FLOPs that ``torch.utils.flop_counter.FlopCounterMode`` sees in ``loss(batch).backward()`` and ``uncertainty``,
divided by 2 and by the batch size (tested).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class CountedCost:
    """Multiply-adds of one method.

    Attributes:
        update_macs: per training transition (forward and backward passes of one TD/regression update).
        query_macs: per uncertainty query ``(s, a, z)``.
    """

    update_macs: int
    query_macs: int


def _check_widths(widths: Sequence[int]) -> tuple[int, ...]:
    widths = tuple(widths)
    if len(widths) < 2 or any(not isinstance(w, int) or w <= 0 for w in widths):
        raise ValueError(f"widths must be >= 2 positive integer layer widths (d_0, ..., d_L), got {widths}")
    return widths


def mlp_forward_macs(widths: Sequence[int]) -> int:
    """``F(d) = Σ_l d_{l-1} d_l``: multiply-adds of one forward pass of one sample.

    Args:
        widths: layer widths ``(d_0, ..., d_L)``, e.g. :attr:`iclr26.uvu.model.UniversalMLP.widths`.

    Raises:
        ValueError: for fewer than two widths or a non-positive one.
    """
    d = _check_widths(widths)
    return sum(a * b for a, b in zip(d[:-1], d[1:], strict=True))


def mlp_backward_macs(widths: Sequence[int]) -> int:
    """``B(d) = 2 F(d) - d_0 d_1``: multiply-adds of one backward pass of one sample (no input gradient).

    Raises:
        ValueError: for fewer than two widths or a non-positive one.
    """
    d = _check_widths(widths)
    return 2 * mlp_forward_macs(d) - d[0] * d[1]


def uvu_cost(widths: Sequence[int]) -> CountedCost:
    """UVU with online and target networks of layer widths ``widths`` (ending in the ``H`` heads).

    ``update = 4 F + B``, ``query = 2 F``.
    """
    f = mlp_forward_macs(widths)
    return CountedCost(update_macs=4 * f + mlp_backward_macs(widths), query_macs=2 * f)


def ensemble_cost(member_widths: Sequence[int], members: int) -> CountedCost:
    """An ensemble of ``members`` networks of layer widths ``member_widths``.

    ``update = K (2 F + B)``, ``query = K F``.

    Raises:
        ValueError: for ``members < 1``.
    """
    if members < 1:
        raise ValueError(f"members must be >= 1, got {members}")
    f = mlp_forward_macs(member_widths)
    return CountedCost(update_macs=members * (2 * f + mlp_backward_macs(member_widths)), query_macs=members * f)


def rnd_cost(widths: Sequence[int]) -> CountedCost:
    """RND with predictor and target networks of layer widths ``widths``.

    ``update = 2 F + B``, ``query = 2 F``.
    """
    f = mlp_forward_macs(widths)
    return CountedCost(update_macs=2 * f + mlp_backward_macs(widths), query_macs=2 * f)
