"""The potential oracle shared by every sampler of this module: batched evaluations of f, counted and checked.

A target π ∝ exp(−f) is given to the samplers only through f. :class:`PotentialOracle` wraps a vectorised callable
(torch or NumPy) so that every sampler pays for, and is checked on, the same queries:

* zeroth-order queries ``oracle(x)`` return f at each row of ``x`` (``(n, d) -> (n,)``) and add ``n`` to
  :attr:`PotentialOracle.n_evals`;
* first-order queries ``oracle.value_and_grad(x)`` (ULA, MALA and the rejection-based RGO need them) add ``n`` to
  both :attr:`~PotentialOracle.n_evals` and :attr:`~PotentialOracle.n_grads`; the gradient comes from ``grad_fn`` if
  given, otherwise from torch autograd through a torch potential;
* every call adds one to :attr:`~PotentialOracle.n_rounds`: the number of sequential batched calls, i.e. the cost
  under the paper's *parallel oracle* model (§ "Cost": K·T rounds for the zeroth-order proximal sampler).

Outputs are validated: the wrong shape, NaN, or ±inf raise a ``ValueError`` that names the potential and says how
to fix it (hard constraints are written as a large finite value, as the paper's tori use 100 outside).

Shapes: ``n`` query points, ``d`` dimension.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np
import torch

Backend = Literal["torch", "numpy"]


class PotentialOracle:
    """Counted, validated access to a potential f (target π ∝ exp(−f)).

    Args:
        fn: vectorised potential, ``(n, d) -> (n,)``. With ``backend="torch"`` it receives and returns tensors; with
            ``backend="numpy"`` it receives a float64 ``np.ndarray`` and may return an array or a sequence.
        grad_fn: optional vectorised gradient ``(n, d) -> (n, d)`` in the same backend. Without it, gradients come
            from torch autograd (torch backend only).
        backend: ``"torch"`` or ``"numpy"``.
        chunk_size: evaluate at most this many points per call of ``fn`` (``None``: all at once). Used to measure
            the speed-up of batched over per-particle evaluation; the counts are the same either way.

    Raises:
        ValueError: if ``backend`` or ``chunk_size`` is invalid, or ``fn``/``grad_fn`` is not callable.
    """

    def __init__(
        self,
        fn: Callable[[Any], Any],
        *,
        grad_fn: Callable[[Any], Any] | None = None,
        backend: Backend = "torch",
        chunk_size: int | None = None,
    ) -> None:
        if not callable(fn):
            raise ValueError(f"potential: expected a callable (n, d) -> (n,), got {type(fn).__name__}")
        if grad_fn is not None and not callable(grad_fn):
            raise ValueError(f"grad_fn: expected a callable (n, d) -> (n, d) or None, got {type(grad_fn).__name__}")
        if backend not in ("torch", "numpy"):
            raise ValueError(f"backend: expected 'torch' or 'numpy', got {backend!r}")
        if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
            raise ValueError(f"chunk_size: expected a positive int or None, got {chunk_size!r}")
        self.fn = fn
        self.grad_fn = grad_fn
        self.backend: Backend = backend
        self.chunk_size = chunk_size
        self.n_evals = 0
        self.n_grads = 0
        self.n_rounds = 0

    def reset_counts(self) -> None:
        """Set the evaluation, gradient and round counters back to zero."""
        self.n_evals = 0
        self.n_grads = 0
        self.n_rounds = 0

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """f at each row of ``x``.

        Args:
            x: query points, ``(n, d)``.

        Returns:
            ``(n,)`` potential values, same dtype and device as ``x``.

        Raises:
            ValueError: if ``x`` is not 2-D or holds NaN/±inf, or the potential returns the wrong shape, NaN or ±inf.
        """
        _check_points(x)
        n = x.shape[0]
        size = n if self.chunk_size is None else self.chunk_size
        parts = [self._evaluate(x[i : i + size]) for i in range(0, n, size)] if n else [x.new_zeros(0)]
        self.n_evals += n
        self.n_rounds += 1
        return torch.cat(parts)

    def value_and_grad(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """f and ∇f at each row of ``x``: one potential and one gradient query per row.

        Args:
            x: query points, ``(n, d)``.

        Returns:
            ``(values (n,), gradients (n, d))``.

        Raises:
            ValueError: for a NumPy potential without ``grad_fn``, or invalid values/gradients.
        """
        values, grads = self._first_order(x)
        self.n_evals += x.shape[0]
        self.n_grads += x.shape[0]
        self.n_rounds += 1
        return values, grads

    def grad(self, x: torch.Tensor) -> torch.Tensor:
        """∇f at each row of ``x``: one gradient query per row (no potential query is counted).

        Args:
            x: query points, ``(n, d)``.

        Returns:
            ``(n, d)`` gradients.

        Raises:
            ValueError: for a NumPy potential without ``grad_fn``, or invalid values/gradients.
        """
        _, grads = self._first_order(x)
        self.n_grads += x.shape[0]
        self.n_rounds += 1
        return grads

    def _first_order(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        _check_points(x)
        if self.grad_fn is None and self.backend == "numpy":
            raise ValueError("grad_fn: a NumPy potential needs an explicit grad_fn for first-order samplers")
        if self.grad_fn is None:
            with torch.enable_grad():
                xg = x.detach().clone().requires_grad_(True)
                values = self._evaluate(xg, keep_graph=True)
                (grads,) = torch.autograd.grad(values.sum(), xg)
            values, grads = values.detach(), grads.detach()
        else:
            values = self._evaluate(x)
            grads = _to_tensor(self.grad_fn(_to_backend(x, self.backend)), x)
        if grads.shape != x.shape:
            raise ValueError(f"grad_fn: expected gradients of shape {tuple(x.shape)}, got {tuple(grads.shape)}")
        if not torch.isfinite(grads).all():
            raise ValueError("grad_fn: the gradient is NaN or infinite at some query points")
        return values, grads

    def _evaluate(self, x: torch.Tensor, keep_graph: bool = False) -> torch.Tensor:
        raw = self.fn(x if keep_graph else _to_backend(x, self.backend))
        values = raw if keep_graph and isinstance(raw, torch.Tensor) else _to_tensor(raw, x)
        if values.shape != (x.shape[0],):
            raise ValueError(
                f"potential: expected values of shape ({x.shape[0]},) for {x.shape[0]} query points, got "
                f"{tuple(values.shape)}; the potential must be vectorised over rows, (n, d) -> (n,)"
            )
        bad = ~torch.isfinite(values.detach())
        if bad.any():
            first = int(bad.nonzero()[0, 0])
            kind = "NaN" if torch.isnan(values[first]) else "infinite"
            raise ValueError(
                f"potential: returned {kind} values at {int(bad.sum())} of {x.shape[0]} points (first at "
                f"x={x[first].detach().tolist()}); return finite values (write a hard constraint as a large finite "
                f"penalty, e.g. 100 outside the support as the paper's tori do)"
            )
        return values


def as_oracle(potential: PotentialOracle | Callable[[torch.Tensor], torch.Tensor]) -> PotentialOracle:
    """``potential`` itself if it is a :class:`PotentialOracle`, else a torch-backend oracle around it."""
    return potential if isinstance(potential, PotentialOracle) else PotentialOracle(potential)


def _check_points(x: torch.Tensor) -> None:
    if not isinstance(x, torch.Tensor) or x.dim() != 2:
        shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"x: expected query points as a (n, d) tensor, got {shape}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError("x: query points hold NaN or inf (the potential is only asked at finite points)")


def _to_backend(x: torch.Tensor, backend: Backend) -> Any:
    return x.detach().cpu().numpy() if backend == "numpy" else x


def _to_tensor(raw: Any, like: torch.Tensor) -> torch.Tensor:
    if isinstance(raw, torch.Tensor):
        return raw.to(dtype=like.dtype, device=like.device)
    return torch.as_tensor(np.asarray(raw, dtype=np.float64), dtype=like.dtype, device=like.device)
