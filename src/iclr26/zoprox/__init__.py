"""Zeroth-order proximal sampler (paper 5): "Alternating Diffusion for Proximal Sampling with Zeroth Order Queries".

Drop-in components: :func:`sample` (the zeroth-order diffusive proximal sampler, Algorithm 1), its score estimator,
the baselines (rejection-based proximal sampler, In-and-Out, random-walk Metropolis, ULA, MALA), the counted
:class:`PotentialOracle` and the sample-quality metrics. The targets of the reproduction live in
:mod:`iclr26.zoprox.targets`, the studies in :mod:`iclr26.zoprox.studies`.
"""

from iclr26.zoprox.baselines import in_and_out, mala, proximal_rgo, random_walk_metropolis, ula
from iclr26.zoprox.estimator import (
    ScoreEstimate,
    draw_own_posterior,
    draw_posterior,
    log_inverse_weights,
    mc_score,
    posterior_logits,
    posterior_mean,
    posterior_variance,
    sigma2_schedule,
)
from iclr26.zoprox.metrics import gaussian_w2, knn_kl, mmd_rbf, mode_fractions, wasserstein2
from iclr26.zoprox.oracle import PotentialOracle
from iclr26.zoprox.sampler import BackwardStep, backward_step, sample
from iclr26.zoprox.trace import SampleResult

__all__ = [
    "BackwardStep",
    "PotentialOracle",
    "SampleResult",
    "ScoreEstimate",
    "backward_step",
    "draw_own_posterior",
    "draw_posterior",
    "gaussian_w2",
    "in_and_out",
    "knn_kl",
    "log_inverse_weights",
    "mala",
    "mc_score",
    "mmd_rbf",
    "mode_fractions",
    "posterior_logits",
    "posterior_mean",
    "posterior_variance",
    "proximal_rgo",
    "random_walk_metropolis",
    "sample",
    "sigma2_schedule",
    "ula",
    "wasserstein2",
]
