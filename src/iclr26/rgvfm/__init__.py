"""RG-VFM (ICLR 2026, arXiv 2502.12981): Riemannian Gaussian variational flow matching on Sⁿ and Hⁿ.

Drop-in components: manifolds with closed-form geodesics (:class:`Sphere`, :class:`Lorentz`,
:class:`Euclidean`), the objectives (:func:`rgvfm_loss`, :func:`rfm_loss`), the flows that own a
network (:class:`EndpointFlow` = RG-VFM / VFM, :class:`VelocityFlow` = RFM / CFM, :func:`build_flow`
for the paper's five models), manifold integrators (:func:`integrate`) and the training loop
(:func:`train_flow`, resumable :class:`FlowTrainer` with the official best-loss checkpoint and optional EMA).
The reproduction is ``iclr26 run rgvfm``.
"""

from iclr26.rgvfm.flows import (
    FLOW_SPECS,
    EndpointFlow,
    FlowMatcher,
    FlowSpec,
    VelocityFlow,
    build_flow,
    official_time_clip,
)
from iclr26.rgvfm.integrators import integrate
from iclr26.rgvfm.manifolds import Euclidean, Lorentz, Manifold, Sphere
from iclr26.rgvfm.metrics import checkerboard_coverage, geodesic_mmd2, knn_c2st, official_unwrap
from iclr26.rgvfm.model import TimeMLP
from iclr26.rgvfm.objectives import (
    conditional_velocity,
    curvature_gap,
    endpoint_velocity,
    geodesic_interpolant,
    rfm_loss,
    rgvfm_loss,
)
from iclr26.rgvfm.training import FlowTrainer, TrainResult, TrainState, make_prior, train_flow

__all__ = [
    "FLOW_SPECS",
    "EndpointFlow",
    "Euclidean",
    "FlowMatcher",
    "FlowSpec",
    "FlowTrainer",
    "Lorentz",
    "Manifold",
    "Sphere",
    "TimeMLP",
    "TrainResult",
    "TrainState",
    "VelocityFlow",
    "build_flow",
    "checkerboard_coverage",
    "conditional_velocity",
    "curvature_gap",
    "endpoint_velocity",
    "geodesic_interpolant",
    "geodesic_mmd2",
    "integrate",
    "knn_c2st",
    "make_prior",
    "official_time_clip",
    "official_unwrap",
    "rfm_loss",
    "rgvfm_loss",
    "train_flow",
]
