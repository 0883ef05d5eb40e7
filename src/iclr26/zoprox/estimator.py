"""The zeroth-order Monte Carlo score estimator of the backward step (Takagi & Nitanda, ICLR 2026, arXiv 2603.19633).

Pure tensor functions, one per equation. Equation numbers follow the paper as cited by its reviewers and summaries
(Eq. 5 backward SDE, Eq. 9 surrogate target, Eq. 10 intermediate mixture, Eq. 11 score estimator, Eq. 13 posterior
mixture); the formulas were checked against the authors' code (github.com/htkg/zod-ps, ``zod_ps.py``), see the
module README.

The surrogate. After the forward step y_j = x_j + √h ξ_j, the particles define the Gaussian mixture

    Eq. (10): q̂_{k+½}(y | X_k) = (1/N) Σ_i N(y; x_i, h I)

and the surrogate of the target (importance identity π_X(x) = ∫ π_{X|Y=y}(x) π_Y(y) dy with π_Y ≈ q̂_{k+½})

    Eq. (9):  q̂_{k+1}(x) ∝ e^{−f(x)} g_N(x),   g_N(x) = Σ_j w_j N(x; y_j, h I),   w_j = 1 / q̂_{k+½}(y_j | X_k)

(the inverse weights w_j are the particle interaction: crowded regions are down-weighted).

The score. The backward SDE needs ∇ log (q̂_{k+1} * N(0, σ_t² I))(z). By Tweedie's formula it is

    Eq. (11): ŝ_t(z) = E_{g_N(x₀|z)}[e^{−f(x₀)} (x₀ − z)] / (σ_t² E_{g_N(x₀|z)}[e^{−f(x₀)}])

where the posterior g_N(x₀ | z) ∝ g_N(x₀) N(z; x₀, σ_t² I) is itself a Gaussian mixture that can be sampled directly:

    Eq. (13): g_N(x₀ | z) = Σ_j π_j(z) N(x₀; m_j(z), σ̄² I),   σ̄² = (1/h + 1/σ_t²)⁻¹,
              m_j(z) = σ̄² (y_j / h + z / σ_t²),   π_j(z) ∝ w_j N(z; y_j, (h + σ_t²) I).

With M samples x₀⁽ˡ⁾ ~ g_N(·|z) the expectation ratio becomes self-normalised weights c_l = softmax(−f(x₀⁽ˡ⁾)),
computed in the log domain so that the weights never underflow all at once.

Shape glossary: ``N`` particles (rows of z), ``J`` mixture components (the N forward samples y_j), ``M`` Monte
Carlo samples per particle, ``d`` dimension, ``T`` diffusion sub-steps.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch


class ScoreEstimate(NamedTuple):
    """The Monte Carlo score at each particle and the quality of its weights.

    Attributes:
        score: ``(N, d)`` the estimate ŝ_t(z) of Eq. (11).
        ess: ``(N,)`` effective sample size 1 / Σ_l c_l² of the self-normalised weights (between 1 and M).
    """

    score: torch.Tensor
    ess: torch.Tensor


def sigma2_schedule(
    step_size: float,
    n_steps: int,
    sigma2_min: float,
    *,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str = "cpu",
) -> torch.Tensor:
    """Noise levels σ_0² = σ²_min < … < σ_T² = h of the backward discretisation, equally spaced in variance.

    The authors' code uses ``linspace(σ²_min, h, T + 1)``; σ²_min = 0 on the Gaussian–Lasso mixture and 0.01 on
    the tori.

    Args:
        step_size: h > 0, the proximal step (variance of the forward heat flow).
        n_steps: T ≥ 1 Euler–Maruyama sub-steps.
        sigma2_min: σ²_min in [0, h).

    Returns:
        ``(T + 1,)`` tensor, index t holds σ_t².

    Raises:
        ValueError: naming the argument that is out of range.
    """
    if not step_size > 0:
        raise ValueError(f"step_size: the proximal step h must be > 0, got {step_size}")
    if n_steps < 1:
        raise ValueError(f"n_diffusion_steps: need at least 1 sub-step, got {n_steps}")
    if not 0 <= sigma2_min < step_size:
        raise ValueError(f"sigma2_min: must lie in [0, step_size={step_size}), got {sigma2_min}")
    # equal Δσ² = (h − σ²_min)/T per Euler–Maruyama sub-step, from σ_T² = h (the forward step's variance) down
    return torch.linspace(sigma2_min, step_size, n_steps + 1, dtype=dtype, device=device)


DISTANCE_CHUNK_ELEMENTS = 1 << 22
"""Rows of ``a`` per chunk in :func:`squared_distances` are chosen so that one chunk holds at most this many
entries of the output (4 Mi entries: 32 MiB in float64), whatever n and m."""


def squared_distances(a: torch.Tensor, b: torch.Tensor, *, chunk_elements: int | None = None) -> torch.Tensor:
    """``(n, m)`` matrix of ‖a_i − b_j‖² in O(n·m) memory, by ‖a_i − c‖² − 2 (a_i − c)·(b_j − c) + ‖b_j − c‖².

    The product form needs one matrix multiply instead of an ``(n, m, d)`` tensor of differences. Its weak point is
    cancellation when the points lie far from the origin compared with their spread (‖a‖², ‖b‖² ≫ ‖a − b‖²), so both
    sets are first centred at c = mean of ``b`` (the identity holds for any c), and the result is clamped at 0
    (rounding can make a tiny distance negative). Against explicit differences in float64 the entries agree to a
    few units of rounding of ‖a − c‖² + ‖b − c‖² (tested, float64 and float32).

    Args:
        a: ``(n, d)`` points (the proposals y or backward states z in the sampler).
        b: ``(m, d)`` points, same dtype and device.
        chunk_elements: at most this many output entries are computed per chunk of rows of ``a`` (default
            :data:`DISTANCE_CHUNK_ELEMENTS`); the temporaries of a chunk are O(chunk · (m + d)).

    Returns:
        ``(n, m)`` non-negative squared distances, dtype and device of ``a``.

    Raises:
        ValueError: naming ``a`` or ``b`` when they are not 2-D or their dimensions d differ, or ``chunk_elements``
            when it is below 1.
    """
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[1]:
        raise ValueError(f"a, b: expected (n, d) and (m, d) with the same d, got {tuple(a.shape)} and {tuple(b.shape)}")
    limit = DISTANCE_CHUNK_ELEMENTS if chunk_elements is None else chunk_elements
    if limit < 1:
        raise ValueError(f"chunk_elements: must be >= 1, got {chunk_elements}")
    n, m = a.shape[0], b.shape[0]
    c = b.mean(0) if m > 0 else b.new_zeros(b.shape[1])
    ac, bc = a - c, b - c
    b2 = bc.square().sum(1)  # (m,) ‖b_j − c‖²
    bt = bc.T
    out = torch.empty(n, m, dtype=a.dtype, device=a.device)
    rows = max(1, limit // max(m, 1))
    for start in range(0, n, rows):
        blk = ac[start : start + rows]
        # ‖a − b‖² = ‖a − c‖² − 2 (a − c)·(b − c) + ‖b − c‖²
        o = torch.addmm(b2[None, :], blk, bt, beta=1.0, alpha=-2.0, out=out[start : start + rows])
        o.add_(blk.square().sum(1)[:, None]).clamp_(min=0.0)
    return out


def log_inverse_weights(y: torch.Tensor, x: torch.Tensor, step_size: float) -> torch.Tensor:
    """log w_j = −log q̂_{k+½}(y_j | X_k), the inverse reweighting of Eq. (9) with the mixture of Eq. (10).

    Args:
        y: ``(J, d)`` forward samples y_j.
        x: ``(N, d)`` current particles x_i (the mixture centres).
        step_size: h > 0.

    Returns:
        ``(J,)`` log inverse weights (exact, including the Gaussian normalising constant).
    """
    d = x.shape[1]
    # Eq. (10): log q̂_{k+½}(y_j) = logsumexp_i(−‖y_j − x_i‖² / 2h) − log N − (d/2) log(2πh)
    log_q = (
        torch.logsumexp(-squared_distances(y, x) / (2 * step_size), dim=1)
        - math.log(x.shape[0])
        - 0.5 * d * math.log(2 * math.pi * step_size)
    )
    return -log_q


def posterior_logits(
    z: torch.Tensor, y: torch.Tensor, log_w: torch.Tensor, step_size: float, sigma2: float
) -> torch.Tensor:
    """Unnormalised log mixture weights log π_j(z) of the posterior g_N(x₀ | z), Eq. (13).

    Args:
        z: ``(N, d)`` current backward states.
        y: ``(J, d)`` mixture centres y_j.
        log_w: ``(J,)`` log inverse weights (:func:`log_inverse_weights`).
        step_size: h.
        sigma2: σ_t² > 0.

    Returns:
        ``(N, J)`` logits; the Gaussian constant of N(z; y_j, (h + σ_t²) I) is common to all j and dropped.
    """
    # Eq. (13): π_j(z) ∝ w_j N(z; y_j, (h + σ_t²) I)
    return log_w[None, :] - squared_distances(z, y) / (2 * (step_size + sigma2))


def posterior_variance(step_size: float, sigma2: float) -> float:
    """σ̄² = (1/h + 1/σ_t²)⁻¹, the variance of every component of the posterior g_N(x₀ | z), Eq. (13)."""
    # Eq. (13): prior component N(y_j, hI) times likelihood N(z; x₀, σ_t² I), so the precisions add
    return 1.0 / (1.0 / step_size + 1.0 / sigma2)


def posterior_mean(z: torch.Tensor, y: torch.Tensor, step_size: float, sigma2: float) -> torch.Tensor:
    """m(z) = σ̄² (y / h + z / σ_t²), the mean of the posterior component centred at y, Eq. (13).

    Args:
        z: backward states, ``(..., d)``.
        y: component centres, broadcastable against ``z``.
        step_size: h.
        sigma2: σ_t² > 0.

    Returns:
        The broadcast shape of ``z`` and ``y``.
    """
    # Eq. (13): precision-weighted mean of the component centre y_j (1/h) and the state z (1/σ_t²)
    return posterior_variance(step_size, sigma2) * (y / step_size + z / sigma2)


def draw_posterior(
    z: torch.Tensor,
    y: torch.Tensor,
    log_w: torch.Tensor,
    step_size: float,
    sigma2: float,
    n_mc: int,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """M samples x₀ ~ g_N(· | z) per particle from the Gaussian mixture of Eq. (13).

    Args:
        z: ``(N, d)`` backward states.
        y: ``(J, d)`` mixture centres.
        log_w: ``(J,)`` log inverse weights.
        step_size: h.
        sigma2: σ_t² > 0.
        n_mc: M ≥ 1 samples per particle.
        generator: torch random generator (``None``: torch's global one).

    Returns:
        ``(N, M, d)`` posterior samples.
    """
    probs = torch.softmax(posterior_logits(z, y, log_w, step_size, sigma2), dim=1)  # (N, J)
    idx = torch.multinomial(probs, n_mc, replacement=True, generator=generator)  # (N, M)
    # Eq. (13): x₀ ~ N(m_j(z), σ̄² I) for the drawn component j
    means = posterior_mean(z[:, None, :], y[idx], step_size, sigma2)  # (N, M, d)
    return _add_posterior_noise(means, step_size, sigma2, generator)


def draw_own_posterior(
    z: torch.Tensor,
    y: torch.Tensor,
    step_size: float,
    sigma2: float,
    n_mc: int,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """M samples x₀ ~ N(m_i(z_i), σ̄² I) per particle from its own component y_i only: Eq. (13) for the paper's
    "N = 1" ablation, where each particle's surrogate is the one-component mixture N(y_i, h I) (no weights).

    Args:
        z: ``(N, d)`` backward states.
        y: ``(N, d)`` each particle's own forward sample y_i.
        step_size: h.
        sigma2: σ_t² > 0.
        n_mc: M ≥ 1 samples per particle.
        generator: torch random generator (``None``: torch's global one).

    Returns:
        ``(N, M, d)`` posterior samples.
    """
    means = posterior_mean(z, y, step_size, sigma2)[:, None, :].expand(-1, n_mc, -1)  # (N, M, d)
    return _add_posterior_noise(means, step_size, sigma2, generator)


def _add_posterior_noise(
    means: torch.Tensor, step_size: float, sigma2: float, generator: torch.Generator | None
) -> torch.Tensor:
    noise = torch.randn(means.shape, dtype=means.dtype, device=means.device, generator=generator)
    return means + math.sqrt(posterior_variance(step_size, sigma2)) * noise


def mc_score(z: torch.Tensor, x0: torch.Tensor, f0: torch.Tensor, sigma2: float) -> ScoreEstimate:
    """The self-normalised Monte Carlo score of Eq. (11) from posterior samples and their potentials.

    Args:
        z: ``(N, d)`` backward states.
        x0: ``(N, M, d)`` posterior samples x₀⁽ˡ⁾ ~ g_N(· | z).
        f0: ``(N, M)`` potentials f(x₀⁽ˡ⁾).
        sigma2: σ_t² > 0.

    Returns:
        :class:`ScoreEstimate` with ``score`` ``(N, d)`` and the weights' ``ess`` ``(N,)``.
    """
    # c_l = e^{−f(x₀⁽ˡ⁾)} / Σ_l' e^{−f(x₀⁽ˡ'⁾)}, in the log domain (never all zero)
    c = torch.softmax(-f0, dim=1)  # (N, M)
    # Eq. (11): ŝ_t(z) = Σ_l c_l (x₀⁽ˡ⁾ − z) / σ_t²
    score = (c[:, :, None] * (x0 - z[:, None, :])).sum(1) / sigma2
    # effective sample size 1/Σ c_l² of the self-normalised weights: how many of the M draws the score rests on
    ess = 1.0 / c.square().sum(1)
    return ScoreEstimate(score=score, ess=ess)
