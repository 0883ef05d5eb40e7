"""Zeroth-order proximal sampler (paper 5): "Alternating Diffusion for Proximal Sampling with Zeroth Order Queries".

Drop-in components: :func:`sample` (the zeroth-order diffusive proximal sampler, Algorithm 1), its score estimator,
the baselines (rejection-based proximal sampler, In-and-Out, random-walk Metropolis, ULA, MALA), the counted
:class:`PotentialOracle`, the targets and the metrics of the reproduction.
"""

from iclr26.zoprox.baselines import in_and_out, mala, proximal_rgo, random_walk_metropolis, ula
from iclr26.zoprox.estimator import (
    ScoreEstimate,
    draw_posterior,
    log_inverse_weights,
    mc_score,
    posterior_logits,
    sigma2_schedule,
)
from iclr26.zoprox.metrics import gaussian_w2, knn_kl, mmd_rbf, mode_fractions, wasserstein2
from iclr26.zoprox.oracle import PotentialOracle
from iclr26.zoprox.sampler import backward_step, sample
from iclr26.zoprox.trace import SampleResult

__all__ = [
    "PotentialOracle",
    "SampleResult",
    "ScoreEstimate",
    "backward_step",
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
    "proximal_rgo",
    "random_walk_metropolis",
    "sample",
    "sigma2_schedule",
    "ula",
    "wasserstein2",
]
