"""Evaluation of a spiking classifier over time: truncated-inference accuracy and temporal variance.

Many Eyes, One Mind (MEOM), ICLR 2026, OpenReview NbdEDRRsCI. An SNN run for t <= T timesteps predicts
argmax_c zbar_<=t, the average of its first t per-timestep logits ("truncated inference"); because the network is
causal and the input is repeated, the first t outputs of a T-step run are exactly those of a t-step run, so one
T-step pass gives the accuracy at every truncation point.

The paper reports a temporal variance "Var@T" whose definition could not be read. Three candidates are computed:
- :func:`logit_temporal_variance`: the variance over t = 1..T of the per-timestep logits z_t, averaged over
  samples and classes (how much the per-timestep outputs disagree);
- :func:`prediction_disagreement`: the share of (sample, timestep) pairs whose own argmax differs from the
  full-length prediction (invariant to rescaling the logits, which the logit variance is not);
- :func:`accuracy_temporal_variance`: the variance over t = 1..T of the truncated accuracies, in percent^2.

Shapes: T timesteps, B batch (N for a whole split), C classes.
"""

from __future__ import annotations

import torch
from torch import Tensor

from iclr26.meom.losses import cumulative_mean_logits


def truncated_accuracy(logits_per_t: Tensor, targets: Tensor) -> Tensor:
    """acc_t = mean_n [argmax_c zbar_<=t[n] == y[n]] for t = 1..T.

    Args:
        logits_per_t: z, shape (T, N, C).
        targets: y, shape (N,).

    Returns:
        Accuracies in [0, 1], shape (T,).

    Raises:
        ValueError: if ``targets`` is not (N,).
    """
    # truncated inference: stopping after t steps predicts argmax of the running mean zbar_<=t
    zbar = cumulative_mean_logits(logits_per_t)  # (T, N, C)
    if targets.shape != logits_per_t.shape[1:2]:
        raise ValueError(f"targets: expected shape ({logits_per_t.shape[1]},), got {tuple(targets.shape)}")
    return (zbar.argmax(dim=-1) == targets.unsqueeze(0)).to(torch.float64).mean(dim=1)


def per_timestep_accuracy(logits_per_t: Tensor, targets: Tensor) -> Tensor:
    """Accuracy of each timestep's own logits z_t (not averaged), shape (T,)."""
    if targets.shape != logits_per_t.shape[1:2]:
        raise ValueError(f"targets: expected shape ({logits_per_t.shape[1]},), got {tuple(targets.shape)}")
    return (logits_per_t.argmax(dim=-1) == targets.unsqueeze(0)).to(torch.float64).mean(dim=1)


def logit_temporal_variance(logits_per_t: Tensor) -> float:
    """mean_{n,c} Var_t(z_t[n, c]) with the population variance (1/T) sum_t (z_t - mean_t z)^2.

    Returns:
        A non-negative float; 0 iff every timestep gives the same logits.

    Raises:
        ValueError: if ``logits_per_t`` is not (T, N, C).
    """
    if logits_per_t.dim() != 3:
        raise ValueError(f"logits_per_t: expected shape (T, N, C), got {tuple(logits_per_t.shape)}")
    z = logits_per_t.to(torch.float64)
    # a Var@T candidate: how much the per-timestep logits move around their temporal mean (TMPD should lower it)
    return float(z.var(dim=0, unbiased=False).mean())


def prediction_disagreement(logits_per_t: Tensor) -> float:
    """The share of (sample, timestep) pairs whose own decision differs from the full-length decision.

    d = mean_n (1/T) sum_t [argmax_c z_t[n] != argmax_c zbar_<=T[n]].

    Unlike :func:`logit_temporal_variance` it is invariant to a positive rescaling of the logits, so a student
    whose logits are merely smaller (softer) does not score lower for that reason alone.

    Args:
        logits_per_t: z, shape (T, N, C).

    Returns:
        A float in [0, 1]; 0 iff every timestep's argmax equals the full-length prediction.

    Raises:
        ValueError: if ``logits_per_t`` is not (T, N, C).
    """
    if logits_per_t.dim() != 3:
        raise ValueError(f"logits_per_t: expected shape (T, N, C), got {tuple(logits_per_t.shape)}")
    final = cumulative_mean_logits(logits_per_t)[-1].argmax(dim=-1)  # (N,)
    return float((logits_per_t.argmax(dim=-1) != final.unsqueeze(0)).to(torch.float64).mean())


def accuracy_temporal_variance(accuracy_per_t: Tensor) -> float:
    """Var_t(100 * acc_t), the population variance of the truncated accuracies in percent^2."""
    if accuracy_per_t.dim() != 1:
        raise ValueError(f"accuracy_per_t: expected shape (T,), got {tuple(accuracy_per_t.shape)}")
    return float((100.0 * accuracy_per_t.to(torch.float64)).var(unbiased=False))
