"""RG-VFM and its four baselines as one flow-matching class with two objective hooks.

RG-VFM (Zaghen et al., "Riemannian Variational Flow Matching for Material and Protein Design",
ICLR 2026, arXiv 2502.12981) compares five models that share the network, the data, the source
distribution family, the interpolant and the integrator; only the objective (and what the network
output means) differs:

    model        path (space of x_t)          network predicts        loss
    CFM          straight line in R^D         velocity                |v - (x1 - x0)|²
    VFM          straight line in R^D         endpoint μ ∈ R^D        |μ - x1|²
    RG-VFM-R^D   straight line in R^D         endpoint μ ∈ M          d_M(μ, x1)²
    RFM          geodesic on M                velocity v ∈ T_xM       |v - u_t|²_g
    RG-VFM-M     geodesic on M                endpoint μ ∈ M          d_M(μ, x1)²

(official repository olgatticus/rg-vfm, ``rvf/losses/loss_sphere.py`` and ``loss_hyperboloid.py``,
read through the code search). :class:`EndpointFlow` is RG-VFM (VFM when its manifolds are flat);
:class:`VelocityFlow` is RFM (CFM when flat).

One training step (:meth:`FlowMatcher.training_loss`):
    1. x_t = exp_{x0}(t log_{x0} x1) on the path manifold (the straight line in R^D);
    2. x̃_t = exp_{x_t}(σ A ε): the network input, perturbed by isotropic tangent noise of scale σ
       (the official ``noise_scale``, 0.1; A = ``path.output_to_tangent``, see ``Manifold.perturb``);
    3. the objective hook: d(μ_θ(x̃_t, t), x1)² (endpoint) or |v_θ(x̃_t, t) - Γ_{x_t→x̃_t} u_t|²_g (velocity).

Sampling integrates the model's velocity hook (endpoint models: log_x(μ_θ) · min(1/(1 - t), c), with the official
clip c = 10 on Sⁿ, 5 on Hⁿ and 20 in R^D: ``time_clip="official"``, the default; ``None`` leaves 1/(1 - t) unclipped)
from x0 ~ p0.

Defaults are the reproduced method: ``noise_scale`` 0.1 (official ``--noise_scale``) and the official clip.

Deviations: the official code adds the noise in ambient coordinates and renormalises (sphere) or in
the chart at the origin (hyperboloid) and compares the velocity target at the clean x_t with the
prediction at the noisy point; here the noise is an isotropic tangent step of scale σ on every manifold
(on the sphere the same to first order; on H² the official chart noise at distance r from the origin
has its angular part stretched by sinh r / r) and the target is parallel-transported to the noisy point. On H² the
velocity head is Γ_{o→x}(P_o f) (an isometry) instead of the official Minkowski projection P_x f,
which amplifies the network output far from the origin (see ``Lorentz.output_to_tangent``), and
the network sees a point of H² through the bounded encoding ``Lorentz.encode`` (Klein coordinates)
rather than its raw, exponentially growing ambient coordinates; both apply to both intrinsic models.

Shapes: ``B`` batch, ``D`` ambient dimension; ``t`` is (B, 1).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

from iclr26.rgvfm.integrators import integrate
from iclr26.rgvfm.manifolds import Euclidean, Lorentz, Manifold, Sphere
from iclr26.rgvfm.objectives import (
    conditional_velocity,
    endpoint_velocity,
    geodesic_interpolant,
    rfm_loss,
    rgvfm_loss,
)

Network = Callable[[Tensor, Tensor], Tensor]
"""f_θ(x, t): (B, D) points, (B, 1) times → (B, D) raw outputs (e.g. ``model.TimeMLP``)."""

DEFAULT_NOISE_SCALE = 0.1
"""σ of the input noise of the reproduced method (official ``--noise_scale`` 1e-1, ``scripts/main_sphere.py``)."""

OFFICIAL_TIME_CLIP = {"sphere": 10.0, "lorentz": 5.0, "euclidean": 20.0}
"""Upper clip of 1/(1 - t) in the official sampling velocity of endpoint models, by the path manifold: 10 on the
sphere (``VelocityInferenceSphere``), 5 on the hyperboloid, 20 in R^D (``VelocityInference``)."""


def official_time_clip(path: Manifold) -> float:
    """The official clip of 1/(1 - t) for endpoint models whose path lives on ``path`` (:data:`OFFICIAL_TIME_CLIP`)."""
    if isinstance(path, Sphere):
        return OFFICIAL_TIME_CLIP["sphere"]
    if isinstance(path, Lorentz):
        return OFFICIAL_TIME_CLIP["lorentz"]
    if isinstance(path, Euclidean):
        return OFFICIAL_TIME_CLIP["euclidean"]
    raise ValueError(f"no official time clip for {path.name}; pass a number or None")


TimeClip = float | Literal["official"] | None
"""``"official"`` (:func:`official_time_clip` of the path), a number c ≥ 1, or None (no clip)."""


class FlowMatcher(ABC):
    """Flow matching on a manifold with a geodesic interpolant; subclasses define the objective.

    Args:
        network: f_θ(x, t) → (B, D).
        path: the manifold on which x_t moves (M for intrinsic models, R^D for extrinsic ones).
        noise_scale: σ ≥ 0 of the tangent noise added to the network input during training (default: the official
            0.1, :data:`DEFAULT_NOISE_SCALE`).
        shuffle_time: a negative control, not a method: the network is trained on the batch's times permuted
            across its rows, so it never learns where on the path a point is (the interpolant itself uses the true
            times). A flow that must transport p0 onto the data cannot work so; sampling gives it the true time.
    """

    def __init__(
        self,
        network: Network,
        *,
        path: Manifold,
        noise_scale: float = DEFAULT_NOISE_SCALE,
        shuffle_time: bool = False,
    ) -> None:
        if noise_scale < 0:
            raise ValueError(f"noise_scale must be >= 0, got {noise_scale}")
        self.network = network
        self.path = path
        self.noise_scale = noise_scale
        self.shuffle_time = shuffle_time

    def training_loss(
        self,
        x0: Tensor,
        x1: Tensor,
        t: Tensor,
        *,
        generator: torch.Generator | None = None,
        rows: slice | None = None,
    ) -> Tensor:
        """The model's objective on one batch of (x0, x1, t).

        Args:
            x0: source samples on the path manifold, (B, D).
            x1: data samples on M, (B, D).
            t: times in [0, 1), (B, 1).
            generator: torch generator for the input noise.
            rows: if given, the objective of these rows only (a data-parallel rank's shard): the interpolant and
                the input noise are still drawn for the whole batch, so every rank consumes the generator alike and
                the shards' rows equal the unsharded batch's.

        Returns:
            Scalar loss.

        Raises:
            ValueError: naming ``x0``, ``x1`` or ``t`` when a shape does not match (B, D), (B, D), (B, 1), or
                ``x0``/``x1`` when a point is not on the path manifold (checked by its geodesic).
        """
        self.path.check_ambient(x0, "x0")
        self.path.check_ambient(x1, "x1")
        if x0.ndim != 2 or x1.shape != x0.shape:
            raise ValueError(f"x0 and x1 must both be (B, D) batches, got {tuple(x0.shape)} and {tuple(x1.shape)}")
        if t.shape != (x0.shape[0], 1):
            raise ValueError(f"t must have shape (B, 1) = ({x0.shape[0]}, 1), got {tuple(t.shape)}")
        # step 1: x_t = exp_{x0}(t log_{x0} x1), the straight line for extrinsic models
        x_t = geodesic_interpolant(self.path, x0, x1, t)
        # step 2: the network sees x̃_t = exp_{x_t}(σ A ε) (official noise_scale); the objective keeps the clean x_t
        x_in = self.path.perturb(x_t, scale=self.noise_scale, generator=generator)
        if self.shuffle_time:  # the control: the network sees another row's time
            t = t[torch.randperm(t.shape[0], generator=generator, device=t.device)]
        if rows is not None:
            x0, x1, t, x_t, x_in = x0[rows], x1[rows], t[rows], x_t[rows], x_in[rows]
        return self.objective(x0=x0, x1=x1, t=t, x_t=x_t, x_in=x_in)

    @abstractmethod
    def objective(self, *, x0: Tensor, x1: Tensor, t: Tensor, x_t: Tensor, x_in: Tensor) -> Tensor:
        """The loss from the clean interpolant x_t and the network input x_in (model-specific)."""

    @abstractmethod
    def velocity(self, x: Tensor, t: Tensor) -> Tensor:
        """The learned vector field at (x, t), tangent to the path manifold, (B, D)."""

    @abstractmethod
    def endpoint(self, x: Tensor, t: Tensor) -> Tensor:
        """The predicted (endpoint models) or implied (velocity models) endpoint at (x, t), (B, D)."""

    @torch.no_grad()
    def sample(
        self, x0: Tensor, *, steps: int, t_end: float = 0.99, method: Literal["euler", "rk4"] = "euler"
    ) -> Tensor:
        """Push source samples x0 through the learned flow to ``t_end``.

        Returns:
            (B, D) samples on the path manifold.
        """
        return integrate(self.velocity, x0, self.path, steps=steps, t_end=t_end, method=method)


class EndpointFlow(FlowMatcher):
    """RG-VFM: the network predicts the endpoint μ_θ(x_t, t) = proj_M f_θ(x_t, t); loss d_M(μ_θ, x1)².

    The only change from :class:`VelocityFlow` is this objective (and the velocity it induces,
    log_x(μ_θ)/(1 - t) on the path manifold). With M = R^D it is Euclidean VFM; with an intrinsic path
    it is RG-VFM-M; with a straight-line path in R^D and M curved it is the extrinsic RG-VFM-R^D.

    Args:
        network: f_θ(x, t).
        path: manifold of the interpolant.
        endpoint_manifold: M, where μ lives and whose distance is the loss (default: ``path``).
        noise_scale: σ of the input noise (default 0.1, official).
        time_clip: upper clip c of 1/(1 - t) in the sampling velocity: ``"official"`` (default; 10 on Sⁿ, 5 on Hⁿ,
            20 in R^D), a number ≥ 1, or None for the unclipped log_x(μ)/(1 - t).
        shuffle_time: the negative control of :class:`FlowMatcher` (off for the method).

    Raises:
        ValueError: if the two manifolds' ambient dimensions differ, or ``time_clip`` is a number below 1.
    """

    def __init__(
        self,
        network: Network,
        *,
        path: Manifold,
        endpoint_manifold: Manifold | None = None,
        noise_scale: float = DEFAULT_NOISE_SCALE,
        time_clip: TimeClip = "official",
        shuffle_time: bool = False,
    ) -> None:
        super().__init__(network, path=path, noise_scale=noise_scale, shuffle_time=shuffle_time)
        if time_clip == "official":
            time_clip = official_time_clip(path)
        elif time_clip is not None and not time_clip >= 1:
            raise ValueError(f"time_clip must be >= 1 (1/(1 - t) >= 1 on [0, 1)), 'official' or None, got {time_clip}")
        self.time_clip: float | None = None if time_clip is None else float(time_clip)
        self.endpoint_manifold = path if endpoint_manifold is None else endpoint_manifold
        if self.endpoint_manifold.ambient_dim != path.ambient_dim:
            raise ValueError(
                f"endpoint_manifold ({self.endpoint_manifold.name}) and path ({path.name}) "
                "must have the same ambient dimension"
            )

    def endpoint(self, x: Tensor, t: Tensor) -> Tensor:
        """μ_θ(x, t) = proj_M f_θ(e(x), t), e = ``path.encode`` (the identity except on Hⁿ)."""
        # projecting f_θ onto M is what makes μ_θ a point of M, so the geodesic loss and log_x(μ_θ) are defined
        return self.endpoint_manifold.proj(self.network(self.path.encode(x), t))

    def objective(self, *, x0: Tensor, x1: Tensor, t: Tensor, x_t: Tensor, x_in: Tensor) -> Tensor:
        """L_RG-VFM = mean d_M(μ_θ(x̃_t, t), x1)²."""
        return rgvfm_loss(self.endpoint_manifold, self.endpoint(x_in, t), x1)

    def velocity(self, x: Tensor, t: Tensor) -> Tensor:
        """v = log_x(μ_θ(x, t)) · min(1/(1 - t), c) on the path manifold (c = ``time_clip``; unclipped when None)."""
        v = endpoint_velocity(self.path, x, self.endpoint(x, t), t)
        if self.time_clip is None:
            return v
        # the official clip keeps the sampling speed bounded as t -> 1, where 1/(1 - t) blows up
        # log_x(μ)/(1 - t) · min(1, c (1 - t)) = log_x(μ) · min(1/(1 - t), c)
        return v * (self.time_clip * (1 - t)).clamp(max=1.0)


class VelocityFlow(FlowMatcher):
    """RFM: the network predicts the velocity v_θ(x_t, t) ∈ T_{x_t}M from f_θ(x_t, t); loss |v_θ - u_t|²_g.

    The only change from :class:`EndpointFlow` is this objective. With a flat path it is Euclidean
    (conditional) flow matching with target x1 - x0.
    """

    def velocity(self, x: Tensor, t: Tensor) -> Tensor:
        """v_θ(x, t) = ``path.output_to_tangent``(x, f_θ(e(x), t)): P_x f on Sⁿ and Rⁿ, Γ_{o→x} P_o f on Hⁿ."""
        return self.path.output_to_tangent(x, self.network(self.path.encode(x), t))

    def endpoint(self, x: Tensor, t: Tensor) -> Tensor:
        """The implied endpoint exp_x((1 - t) v_θ(x, t)) (where the current velocity leads by t = 1)."""
        return self.path.exp(x, (1 - t) * self.velocity(x, t))

    def objective(self, *, x0: Tensor, x1: Tensor, t: Tensor, x_t: Tensor, x_in: Tensor) -> Tensor:
        """L_RFM = mean |v_θ(x̃_t, t) - Γ_{x_t→x̃_t} u_t(x_t | x1)|²_g."""
        # u_t is tangent at the clean x_t; transported to the noisy input so both vectors live in T_{x̃_t}M
        u = self.path.transport(x_t, x_in, conditional_velocity(self.path, x0, x1, t))
        return rfm_loss(self.path, x_in, self.velocity(x_in, t), u)


@dataclass(frozen=True)
class FlowSpec:
    """One of the five compared models.

    Attributes:
        key: identifier used in configs and records.
        label: name in the paper's table (R^D is written with the ambient dimension).
        intrinsic: whether the path (and the source distribution) lives on M rather than in R^D.
        predicts: what the network output means.
        geodesic_loss: whether the loss uses M's metric (else the Euclidean one of R^D).
        shuffled_time: a negative control: trained on times permuted across the batch (not one of the paper's).
    """

    key: str
    label: str
    intrinsic: bool
    predicts: Literal["endpoint", "velocity"]
    geodesic_loss: bool
    shuffled_time: bool = False


FLOW_SPECS: dict[str, FlowSpec] = {
    spec.key: spec
    for spec in (
        FlowSpec("cfm", "CFM", intrinsic=False, predicts="velocity", geodesic_loss=False),
        FlowSpec("vfm", "VFM", intrinsic=False, predicts="endpoint", geodesic_loss=False),
        FlowSpec("rgvfm_ambient", "RG-VFM-R^D", intrinsic=False, predicts="endpoint", geodesic_loss=True),
        FlowSpec("rfm", "RFM", intrinsic=True, predicts="velocity", geodesic_loss=True),
        FlowSpec("rgvfm", "RG-VFM-M", intrinsic=True, predicts="endpoint", geodesic_loss=True),
        FlowSpec(
            "rgvfm_shuffled_t",
            "RG-VFM-M, shuffled t",
            intrinsic=True,
            predicts="endpoint",
            geodesic_loss=True,
            shuffled_time=True,
        ),
    )
}
PAPER_MODELS = ("cfm", "vfm", "rgvfm_ambient", "rfm", "rgvfm")
"""The five models of the paper's table (the rest of :data:`FLOW_SPECS` are controls)."""


def build_flow(
    key: str,
    manifold: Manifold,
    network: Network,
    *,
    noise_scale: float = DEFAULT_NOISE_SCALE,
    time_clip: TimeClip = "official",
) -> FlowMatcher:
    """The model ``key`` (one of :data:`FLOW_SPECS`) for data on ``manifold``, with the reproduction's defaults.

    Args:
        key: ``cfm``, ``vfm``, ``rgvfm_ambient``, ``rfm``, ``rgvfm`` (the paper's five) or the negative control
            ``rgvfm_shuffled_t``.
        manifold: M, the data manifold.
        network: f_θ(x, t) on R^D, D = ``manifold.ambient_dim``.
        noise_scale: σ of the input noise (default 0.1, official).
        time_clip: endpoint models' clip of 1/(1 - t) in the sampling velocity (see :class:`EndpointFlow`; default
            the official clip of the path: 10 on Sⁿ, 5 on Hⁿ, 20 in R^D); velocity models have none.

    Returns:
        The flow; its ``path`` is M for intrinsic models and R^D otherwise.

    Raises:
        ValueError: for an unknown key (the message lists the known ones).
    """
    if key not in FLOW_SPECS:
        raise ValueError(f"unknown model {key!r}; choose one of {', '.join(FLOW_SPECS)}")
    spec = FLOW_SPECS[key]
    ambient = Euclidean(manifold.ambient_dim)
    # intrinsic models (RFM, RG-VFM-M) move along M's geodesics; extrinsic ones along straight lines in R^D
    path = manifold if spec.intrinsic else ambient
    if spec.predicts == "velocity":
        return VelocityFlow(network, path=path, noise_scale=noise_scale)
    # μ projected onto M and scored by d_M: the only difference between RG-VFM-R^D and Euclidean VFM
    endpoint_manifold = manifold if spec.geodesic_loss else ambient
    return EndpointFlow(
        network,
        path=path,
        endpoint_manifold=endpoint_manifold,
        noise_scale=noise_scale,
        time_clip=time_clip,
        shuffle_time=spec.shuffled_time,
    )
