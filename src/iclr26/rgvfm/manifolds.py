"""Manifolds with closed-form geodesics: the sphere Sⁿ, hyperbolic space Hⁿ (Lorentz model), flat Rⁿ.

RG-VFM (Zaghen et al., "Riemannian Variational Flow Matching for Material and Protein Design",
ICLR 2026, arXiv 2502.12981) needs, on each manifold M, the exponential and logarithm maps, the
geodesic distance and (for the stable form of the geodesic velocity and for wrapped normals) parallel
transport. Points and tangent vectors are stored in ambient coordinates of R^D (D = n + 1 for Sⁿ and
Hⁿ, D = n for Rⁿ).

Shapes: ``...`` any batch shape, ``D`` ambient dimension, ``n`` intrinsic dimension.

Closed forms (<.,.> the ambient Euclidean product on Sⁿ, the Minkowski product <.,.>_L on Hⁿ):
    exp_x(u) = cos|u| x + sin|u| u/|u|   (sphere; cosh/sinh on the hyperboloid)
    log_x(y) = d(x, y) P_x(y) / |P_x(y)|   (P_x the projection onto T_xM)
    d(x, y)  = 2 atan2(|x - y|, |x + y|)   (sphere)
             = 2 asinh(|x - y|_L / 2) near, acosh(-<x, y>_L) far   (hyperboloid)
    Γ_{x→y}(v) = v - <y, v> / (1 + <x, y>) (x + y)   (sphere)
               = v + <y, v>_L / (1 - <x, y>_L) (x + y)   (hyperboloid)

Numerical care (each point has a test):
- the distances use the chordal forms above, which stay accurate for nearly equal and (sphere)
  nearly antipodal points, where ``acos``/``acosh`` lose all digits;
- the sphere's log map uses, in each regime, the algebraically equal form of P_x(y) that does not
  cancel: (y - x) + ½|y - x|² x near x, (y + x) - ½|y + x|² x near -x; at exactly antipodal points it
  returns a deterministic minimising direction;
- sinc-type factors use Taylor series near 0 and are evaluated on a safe argument, so that neither
  branch of ``torch.where`` leaks a NaN gradient;
- the hyperboloid's exp clamps |u| below the overflow of cosh for the dtype; exp re-projects onto M;
- every public map that takes points of M checks them first (:meth:`Manifold.check`): finite, and satisfying the
  defining constraint (|x|² = 1 on Sⁿ; <x, x>_L = -1 relative to |x|², and x_0 > 0, on Hⁿ) within
  :func:`point_tolerance` = √eps of the dtype; the subclasses' unchecked ``_exp``, ``_log``, ... compose inside.

geoopt 0.5.1 has Sphere and Lorentz, but its sphere log map returns 0 at antipodal points, its sphere
``transp`` is a projection (not parallel transport), and its float32 ``dist`` goes through
``acos``/``acosh``, which lose most digits for distances below ~1e-3.
So the closed forms are written here and tested against geoopt in float64 on generic points
(tests/rgvfm/test_rgvfm_manifolds.py).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from abc import ABC, abstractmethod
from collections.abc import Iterator

import torch
from torch import Tensor

_SERIES_CUTOFF = 1e-2  # below it the 3-term Taylor series of sinc-type factors is exact to < 1e-16 relative


def _tiny(dtype: torch.dtype) -> float:
    """Smallest squared norm treated as nonzero: keeps sqrt and division finite (and their gradients)."""
    return torch.finfo(dtype).tiny


def _degenerate(dtype: torch.dtype) -> float:
    """Norm below which a projected vector has no usable direction (rounding level of unit vectors)."""
    return 10.0 * torch.finfo(dtype).eps


def _draw_device(generator: torch.Generator | None) -> torch.device:
    """Where random draws from ``generator`` land: its own device (the CPU without one)."""
    return torch.device("cpu") if generator is None else generator.device


def _safe_norm(v: Tensor, sq: Tensor | None = None) -> Tensor:
    """|v| over the last axis with a clamped square, so that its gradient at v = 0 is 0 instead of NaN."""
    sq = (v * v).sum(-1, keepdim=True) if sq is None else sq
    return torch.sqrt(sq.clamp_min(_tiny(v.dtype)))


def _series_or(r: Tensor, series: Tensor, exact) -> Tensor:
    """``series`` where r < cutoff, else ``exact(r)`` on a safe argument (no NaN in either branch)."""
    small = r < _SERIES_CUTOFF
    r_safe = torch.where(small, torch.ones_like(r), r)
    return torch.where(small, series, exact(r_safe))


def sinc(r: Tensor) -> Tensor:
    """sin(r)/r, with the Taylor series 1 - r²/6 + r⁴/120 near 0."""
    r2 = r * r
    return _series_or(r, 1 - r2 / 6 + r2 * r2 / 120, lambda s: torch.sin(s) / s)


def sinhc(r: Tensor) -> Tensor:
    """sinh(r)/r, with the Taylor series 1 + r²/6 + r⁴/120 near 0."""
    r2 = r * r
    return _series_or(r, 1 + r2 / 6 + r2 * r2 / 120, lambda s: torch.sinh(s) / s)


def inv_sinc(r: Tensor) -> Tensor:
    """r/sin(r) for r in [0, π), with the Taylor series 1 + r²/6 + 7r⁴/360 near 0."""
    r2 = r * r
    return _series_or(r, 1 + r2 / 6 + 7 * r2 * r2 / 360, lambda s: s / torch.sin(s))


def inv_sinhc(r: Tensor) -> Tensor:
    """r/sinh(r), with the Taylor series 1 - r²/6 + 7r⁴/360 near 0."""
    r2 = r * r
    return _series_or(r, 1 - r2 / 6 + 7 * r2 * r2 / 360, lambda s: s / torch.sinh(s))


_POINT_CHECKS = contextvars.ContextVar("rgvfm_point_checks", default=True)


@contextlib.contextmanager
def point_checks(enabled: bool) -> Iterator[None]:
    """Turn the on-manifold checks of :meth:`Manifold.check` (and the ``t < 1`` check of the endpoint velocity) on
    or off inside the block.

    Each check reads one value back to the host, which on a GPU makes the device wait for Python; a training or
    sampling loop whose points are on M by construction (projections, exponential maps) turns them off on CUDA.
    Shape and dtype checks stay on.
    """
    token = _POINT_CHECKS.set(enabled)
    try:
        yield
    finally:
        _POINT_CHECKS.reset(token)


def point_checks_enabled() -> bool:
    """Whether the value checks of :func:`point_checks` are on (the default)."""
    return _POINT_CHECKS.get()


def point_tolerance(dtype: torch.dtype) -> float:
    """Largest relative violation of a manifold's defining constraint accepted for a point of ``dtype``: √eps.

    √eps (3.5e-4 in float32, 1.5e-8 in float64) is far above the rounding level of points this module produces
    (every map ends with :meth:`Manifold.proj`, which leaves a few eps) and far below any error that changes a
    geodesic noticeably; it was fixed before any point was checked against it.
    """
    return math.sqrt(torch.finfo(dtype).eps)


class Manifold(ABC):
    """A Riemannian manifold embedded in R^D with closed-form geodesics.

    Every method works on tensors of shape ``(..., D)`` that broadcast against each other; scalars per point
    (distances, inner products) are returned with shape ``(...)`` unless ``keepdim``.

    The public maps check their inputs (:meth:`check` for points, which must lie on M within
    :func:`point_tolerance`; :meth:`check_ambient` for tangent and ambient vectors) and call the unchecked
    ``_exp``, ``_log``, ... that subclasses implement and that compose with each other without re-checking.

    Attributes:
        dim: intrinsic dimension n.
        ambient_dim: D, the size of the last axis of points and tangent vectors.
        curvature: constant sectional curvature (+1, -1 or 0).
        name: short name for records and plots.
        constraint: the defining constraint of M in words, for error messages.
    """

    dim: int
    ambient_dim: int
    curvature: float
    name: str
    constraint: str

    def __init__(self, dim: int) -> None:
        if not isinstance(dim, int) or dim < 1:
            raise ValueError(f"dim must be a positive integer, got {dim!r}")
        self.dim = dim

    def check_ambient(self, x: Tensor, name: str) -> Tensor:
        """Return ``x`` after checking that it is a floating-point tensor whose last axis has size D.

        For tangent vectors and ambient points, which need not lie on M.

        Raises:
            ValueError: naming ``name`` if the last axis is not D or ``x`` is not floating point.
        """
        if not torch.is_tensor(x) or not x.is_floating_point():
            raise ValueError(f"{name} must be a floating-point tensor, got {type(x).__name__}")
        if x.ndim == 0 or x.shape[-1] != self.ambient_dim:
            raise ValueError(
                f"{name} must have last axis of size {self.ambient_dim} (ambient coordinates of "
                f"{self.name}), got shape {tuple(x.shape)}"
            )
        return x

    def check(self, x: Tensor, name: str) -> Tensor:
        """Return ``x`` after checking that it holds points of M: shape (..., D), finite, and satisfying M's
        defining constraint within :func:`point_tolerance` of its dtype (:meth:`constraint_error`); only the shape
        inside ``point_checks(False)``.

        Raises:
            ValueError: naming ``name`` if the shape is wrong, a coordinate is NaN or inf, or a point is off M
                (the message gives how many, the worst violation, the tolerance and the fix: :meth:`proj`).
        """
        self.check_ambient(x, name)
        if x.numel() == 0 or not _POINT_CHECKS.get():
            return x
        tol = point_tolerance(x.dtype)
        with torch.no_grad():
            if self._worst_violation(x.detach()) <= tol:  # one reduction and one sync on the common path
                return x
            if not bool(torch.isfinite(x).all()):
                raise ValueError(f"{name} must be finite points of {self.name}, got NaN or inf coordinates")
            err = self.constraint_error(x.detach())
            worst = float(err.max())
            if worst <= tol:
                return x
        off = int((err > tol).sum())
        raise ValueError(
            f"{name} must lie on {self.name} ({self.constraint}): {off} of {err.numel()} points violate it by up "
            f"to {worst:.3g} (relative), beyond the {x.dtype} tolerance {tol:.2g}; map ambient points onto the "
            "manifold with proj() first"
        )

    def _worst_violation(self, x: Tensor) -> float:
        """A fast upper bound on the largest :meth:`constraint_error` of x (NaN or inf if it cannot tell)."""
        return float(self.constraint_error(x).max())

    @abstractmethod
    def constraint_error(self, x: Tensor) -> Tensor:
        """How far the ambient point x is from satisfying M's defining constraint, relative to its scale, (...).

        0 on M; inf where x has no point of M it could round to (e.g. x_0 ≤ 0 on Hⁿ); NaN for NaN coordinates.
        """

    @abstractmethod
    def inner(self, x: Tensor, u: Tensor, v: Tensor, *, keepdim: bool = False) -> Tensor:
        """Riemannian inner product g_x(u, v) of tangent vectors at x."""

    def norm(self, x: Tensor, u: Tensor, *, keepdim: bool = False) -> Tensor:
        """|u|_g at x (0 for u = 0, with a finite gradient there)."""
        return torch.sqrt(self.inner(x, u, u, keepdim=keepdim).clamp_min(_tiny(u.dtype)))

    def proj(self, x: Tensor) -> Tensor:
        """A point of M near the ambient point x (the retraction used to re-project); x need not lie on M."""
        return self._proj(self.check_ambient(x, "x"))

    def proj_tangent(self, x: Tensor, u: Tensor) -> Tensor:
        """The g-orthogonal projection of the ambient vector u onto T_xM (x on M)."""
        return self._proj_tangent(self.check(x, "x"), self.check_ambient(u, "u"))

    def encode(self, x: Tensor) -> Tensor:
        """The network's view of a point x, shape (..., D): x itself (overridden where x is unbounded)."""
        return x

    def output_to_tangent(self, x: Tensor, f: Tensor) -> Tensor:
        """A tangent vector at x ∈ M from an ambient vector f ∈ R^D: P_x f (overridden where ill-conditioned).

        The map must be a partial isometry of R^D onto T_xM (an orthogonal projection onto n coordinates
        followed by an isometry). Velocity models use it on the raw network output, where a badly
        conditioned map would turn a small error of f far from the base point into a large velocity
        error; :meth:`perturb` uses it because it sends ε ~ N(0, I_D) to the standard normal on T_xM.
        """
        return self._output_to_tangent(self.check(x, "x"), self.check_ambient(f, "f"))

    def exp(self, x: Tensor, u: Tensor) -> Tensor:
        """exp_x(u): the point reached at time 1 by the geodesic from x ∈ M with velocity u ∈ T_xM."""
        return self._exp(self.check(x, "x"), self.check_ambient(u, "u"))

    def log(self, x: Tensor, y: Tensor) -> Tensor:
        """log_x(y): the tangent vector at x ∈ M of the minimising geodesic to y ∈ M (inverse of exp_x)."""
        return self._log(self.check(x, "x"), self.check(y, "y"))

    def dist(self, x: Tensor, y: Tensor) -> Tensor:
        """Geodesic distance d(x, y) of points of M, shape ``(...)``."""
        return self._dist(self.check(x, "x"), self.check(y, "y"))

    def transport(self, x: Tensor, y: Tensor, v: Tensor) -> Tensor:
        """Parallel transport of v ∈ T_xM to T_yM along the minimising geodesic (x, y on M)."""
        return self._transport(self.check(x, "x"), self.check(y, "y"), self.check_ambient(v, "v"))

    @abstractmethod
    def _proj(self, x: Tensor) -> Tensor:
        """:meth:`proj` without the input check."""

    @abstractmethod
    def _proj_tangent(self, x: Tensor, u: Tensor) -> Tensor:
        """:meth:`proj_tangent` without the input checks."""

    def _output_to_tangent(self, x: Tensor, f: Tensor) -> Tensor:
        """:meth:`output_to_tangent` without the input checks: P_x f."""
        return self._proj_tangent(x, f)

    @abstractmethod
    def _exp(self, x: Tensor, u: Tensor) -> Tensor:
        """:meth:`exp` without the input checks."""

    @abstractmethod
    def _log(self, x: Tensor, y: Tensor) -> Tensor:
        """:meth:`log` without the input checks."""

    @abstractmethod
    def _dist(self, x: Tensor, y: Tensor) -> Tensor:
        """:meth:`dist` without the input checks."""

    @abstractmethod
    def _transport(self, x: Tensor, y: Tensor, v: Tensor) -> Tensor:
        """:meth:`transport` without the input checks."""

    @abstractmethod
    def base_point(self, *, dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu") -> Tensor:
        """The reference point o of the normal-coordinate chart, shape (D,)."""

    @abstractmethod
    def chart_basis(self, *, dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu") -> Tensor:
        """An orthonormal basis of T_oM, shape (n, D): row i is the i-th normal coordinate direction."""

    @abstractmethod
    def distance_to_manifold(self, x: Tensor) -> Tensor:
        """How far the ambient point x is from M (0 on M), shape ``(...)``; measure per subclass."""

    def geodesic(self, x0: Tensor, x1: Tensor, t: Tensor) -> Tensor:
        """The geodesic interpolant x_t = exp_{x0}(t log_{x0} x1) between points of M; ``t`` of shape ``(..., 1)``."""
        x0, x1 = self.check(x0, "x0"), self.check(x1, "x1")
        return self._exp(x0, t * self._log(x0, x1))

    def geodesic_velocity(self, x0: Tensor, x1: Tensor, t: Tensor) -> Tensor:
        """d/dt x_t of the geodesic interpolant, = Γ_{x0→x_t}(log_{x0} x1) = log_{x_t}(x1)/(1 - t).

        The transported form stays accurate as t → 1, where log/(1 - t) divides two vanishing numbers.
        """
        x0, x1 = self.check(x0, "x0"), self.check(x1, "x1")
        u = self._log(x0, x1)
        return self._transport(x0, self._exp(x0, t * u), u)

    def from_chart(self, coords: Tensor) -> Tensor:
        """exp_o(Σ_i c_i e_i): points of M from normal coordinates c ∈ R^n at o, shape (..., D)."""
        basis = self.chart_basis(dtype=coords.dtype, device=coords.device)
        if coords.shape[-1] != self.dim:
            raise ValueError(f"coords must have last axis of size {self.dim}, got shape {tuple(coords.shape)}")
        o = self.base_point(dtype=coords.dtype, device=coords.device)
        return self._exp(o.expand(*coords.shape[:-1], -1), coords @ basis)

    def to_chart(self, x: Tensor) -> Tensor:
        """Normal coordinates at the base point, log_o(x) in the chart basis, shape (..., n)."""
        self.check(x, "x")
        basis = self.chart_basis(dtype=x.dtype, device=x.device)
        o = self.base_point(dtype=x.dtype, device=x.device)
        return self.inner(o, self._log(o.expand_as(x), x).unsqueeze(-2), basis, keepdim=False)

    def wrapped_normal(
        self,
        n: int,
        *,
        mean: Tensor | None = None,
        scale: float = 1.0,
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> Tensor:
        """Samples of the wrapped normal exp_μ(Γ_{o→μ}(σ ε)), ε ~ N(0, I_n) in the chart basis at o.

        Args:
            n: number of samples.
            mean: μ on M, shape (D,); the base point if None.
            scale: σ > 0, the standard deviation in normal coordinates.
            generator: torch generator for ε; the samples are on its device (the CPU without one).
            dtype: dtype of the samples.

        Returns:
            Tensor of shape (n, D) on M.

        Raises:
            ValueError: naming ``scale`` if it is not positive, or ``mean`` if it is not a point of M.
        """
        if scale <= 0:
            raise ValueError(f"scale must be positive, got {scale}")
        device = _draw_device(generator)
        eps = torch.randn(n, self.dim, generator=generator, dtype=dtype, device=device)
        o = self.base_point(dtype=dtype, device=device).expand(n, -1)
        u0 = (scale * eps) @ self.chart_basis(dtype=dtype, device=device)
        if mean is None:
            return self._exp(o, u0)
        mu = self.check(mean.to(device=device, dtype=dtype), "mean").expand(n, -1)
        return self._exp(mu, self._transport(o, mu, u0))

    def perturb(self, x: Tensor, *, scale: float, generator: torch.Generator | None = None) -> Tensor:
        """x̃ = exp_x(σ A_x ε), ε ~ N(0, I_D): isotropic tangent noise of scale σ (x itself when σ = 0).

        A_x = :meth:`output_to_tangent`, a partial isometry onto T_xM, so A_x ε is standard normal on T_xM
        and E d(x, x̃)² = n σ² at every x. (On Hⁿ the Minkowski projection P_x ε would not do: its radial
        component has variance cosh 2r at distance r from the origin.)

        Args:
            x: points on M, (..., D).
            scale: σ ≥ 0.
            generator: torch generator for ε.

        Returns:
            (..., D) perturbed points on M.

        Raises:
            ValueError: naming ``scale`` if it is negative, or ``x`` if it is not on M.
        """
        if scale < 0:
            raise ValueError(f"scale must be >= 0, got {scale}")
        self.check(x, "x")
        if scale == 0:
            return x
        eps = torch.randn(x.shape, generator=generator, dtype=x.dtype, device=x.device)
        return self._exp(x, scale * self._output_to_tangent(x, eps))


class Euclidean(Manifold):
    """Flat Rⁿ: exp_x(u) = x + u, log_x(y) = y - x, d = |x - y|, transport = identity.

    The limiting case in which RG-VFM reduces to VFM and RFM to (Euclidean) CFM; also the ambient space R^D in
    which the extrinsic models (CFM, VFM, RG-VFM-R^D) run their straight-line paths.
    """

    curvature = 0.0

    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        self.ambient_dim = dim
        self.name = f"R{dim}"
        self.constraint = "finite coordinates"

    def constraint_error(self, x: Tensor) -> Tensor:
        """0 for finite points, inf otherwise (every finite point lies on Rⁿ)."""
        return torch.where(torch.isfinite(x).all(-1), 0.0, math.inf).to(x.dtype)

    def _worst_violation(self, x: Tensor) -> float:
        """0 if every coordinate is finite, else inf."""
        return 0.0 if bool(torch.isfinite(x).all()) else math.inf

    def inner(self, x: Tensor, u: Tensor, v: Tensor, *, keepdim: bool = False) -> Tensor:
        """u·v."""
        return (u * v).sum(-1, keepdim=keepdim)

    def _proj(self, x: Tensor) -> Tensor:
        """x."""
        return x

    def _proj_tangent(self, x: Tensor, u: Tensor) -> Tensor:
        """u (every vector is tangent)."""
        return u

    def _exp(self, x: Tensor, u: Tensor) -> Tensor:
        """x + u."""
        return x + u

    def _log(self, x: Tensor, y: Tensor) -> Tensor:
        """y - x."""
        return y - x

    def _dist(self, x: Tensor, y: Tensor) -> Tensor:
        """|x - y| (gradient 0 instead of NaN at x = y)."""
        return _safe_norm(x - y).squeeze(-1)

    def _transport(self, x: Tensor, y: Tensor, v: Tensor) -> Tensor:
        """v."""
        return v.expand(torch.broadcast_shapes(x.shape, y.shape, v.shape))

    def base_point(self, *, dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu") -> Tensor:
        """The origin 0."""
        return torch.zeros(self.ambient_dim, dtype=dtype, device=device)

    def chart_basis(self, *, dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu") -> Tensor:
        """The standard basis."""
        return torch.eye(self.dim, dtype=dtype, device=device)

    def distance_to_manifold(self, x: Tensor) -> Tensor:
        """0 (every point lies on Rⁿ)."""
        return torch.zeros(x.shape[:-1], dtype=x.dtype, device=x.device)


class Sphere(Manifold):
    """The unit sphere Sⁿ = {x ∈ R^{n+1}: |x| = 1} with the round metric (curvature +1).

    Geodesics are great circles: exp_x(u) = cos|u| x + sin|u| u/|u|; d(x, y) = angle between x and y.
    The base point of the chart is the north pole e_{n+1}; normal coordinates at it are the azimuthal
    equidistant projection (the official code's ``wrap``/``unwrap``).
    """

    curvature = 1.0

    def __init__(self, dim: int = 2) -> None:
        super().__init__(dim)
        self.ambient_dim = dim + 1
        self.name = f"S{dim}"
        self.constraint = "|x| = 1"

    def constraint_error(self, x: Tensor) -> Tensor:
        """||x|² - 1| (relative to the radius 1)."""
        return ((x * x).sum(-1) - 1).abs()

    def inner(self, x: Tensor, u: Tensor, v: Tensor, *, keepdim: bool = False) -> Tensor:
        """u·v (the metric induced by R^{n+1})."""
        return (u * v).sum(-1, keepdim=keepdim)

    def _proj(self, x: Tensor) -> Tensor:
        """x/|x| (the nearest point of the sphere; x ≠ 0)."""
        return x / _safe_norm(x)

    def _proj_tangent(self, x: Tensor, u: Tensor) -> Tensor:
        """u - (x·u) x."""
        return u - (x * u).sum(-1, keepdim=True) * x

    def _exp(self, x: Tensor, u: Tensor) -> Tensor:
        """cos|u| x + sinc|u| u, re-normalised to |·| = 1."""
        r = _safe_norm(u)
        return self._proj(torch.cos(r) * x + sinc(r) * u)

    def _dist(self, x: Tensor, y: Tensor) -> Tensor:
        """The angle 2 atan2(|x - y|, |x + y|): accurate at 0 and at π, where acos(x·y) is not."""
        return 2 * torch.atan2(_safe_norm(x - y), _safe_norm(x + y)).squeeze(-1)

    def _log(self, x: Tensor, y: Tensor) -> Tensor:
        """d(x, y) P_x(y)/|P_x(y)|, with a cancellation-free P_x(y) and a fixed direction at y = -x."""
        x, y = torch.broadcast_tensors(x, y)
        theta = self._dist(x, y).unsqueeze(-1)
        minus, plus = y - x, y + x
        # P_x(y) = y - (x·y) x, written as (y - x) + ½|y - x|² x near x and as (y + x) - ½|y + x|² x near -x;
        # the projection removes the rounding-level normal component left by either form
        near = theta <= math.pi / 2
        u = torch.where(
            near,
            minus + 0.5 * (minus * minus).sum(-1, keepdim=True) * x,
            plus - 0.5 * (plus * plus).sum(-1, keepdim=True) * x,
        )
        u = self._proj_tangent(x, u)
        u_norm = _safe_norm(u)
        antipodal = (~near) & (u_norm < _degenerate(x.dtype))
        direction = torch.where(antipodal, self._fallback_direction(x), u / u_norm)
        # |P_x y| = sin θ: near x use (θ/sin θ) P_x y (series at 0, no division by a vanishing norm);
        # near -x use θ times the unit direction (at y = -x only a chosen direction exists).
        return torch.where(near, inv_sinc(theta) * u, theta * direction)

    def _fallback_direction(self, x: Tensor) -> Tensor:
        """A unit tangent vector at x: the projection of the coordinate axis least aligned with x."""
        axis = torch.nn.functional.one_hot(x.abs().argmin(-1), self.ambient_dim).to(x.dtype)
        t = self._proj_tangent(x, axis)
        return t / _safe_norm(t)

    def _transport(self, x: Tensor, y: Tensor, v: Tensor) -> Tensor:
        """v - (y·v)/(1 + x·y) (x + y), 1 + x·y = ½|x + y|² (undefined at y = -x: clamped there)."""
        one_plus = 0.5 * ((x + y) ** 2).sum(-1, keepdim=True)
        return v - (y * v).sum(-1, keepdim=True) / one_plus.clamp_min(_tiny(v.dtype) ** 0.5) * (x + y)

    def base_point(self, *, dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu") -> Tensor:
        """The north pole e_{n+1} = (0, ..., 0, 1)."""
        o = torch.zeros(self.ambient_dim, dtype=dtype, device=device)
        o[-1] = 1
        return o

    def chart_basis(self, *, dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu") -> Tensor:
        """e_1, ..., e_n (the first n axes span the tangent plane at the north pole)."""
        return torch.eye(self.dim, self.ambient_dim, dtype=dtype, device=device)

    def distance_to_manifold(self, x: Tensor) -> Tensor:
        """||x| - 1|, the Euclidean distance from x to the sphere."""
        return (x.norm(dim=-1) - 1).abs()

    def random_uniform(
        self, n: int, *, generator: torch.Generator | None = None, dtype: torch.dtype = torch.float32
    ) -> Tensor:
        """n points uniform on Sⁿ (normalised Gaussians), shape (n, D), on the generator's device."""
        eps = torch.randn(n, self.ambient_dim, generator=generator, dtype=dtype, device=_draw_device(generator))
        return self._proj(eps)


class Lorentz(Manifold):
    """Hyperbolic space Hⁿ as the upper sheet {x: <x, x>_L = -1, x_0 > 0} of R^{1,n} (curvature -1).

    <x, y>_L = -x_0 y_0 + Σ_i x_i y_i; exp_x(u) = cosh|u| x + sinh|u| u/|u|;
    d(x, y) = acosh(-<x, y>_L). The chart's base point is the origin o = (1, 0, ..., 0);
    :meth:`to_poincare` maps to the Poincaré ball.
    """

    curvature = -1.0

    def __init__(self, dim: int = 2) -> None:
        super().__init__(dim)
        self.ambient_dim = dim + 1
        self.name = f"H{dim}"
        self.constraint = "<x, x>_L = -1 and x_0 > 0"

    def constraint_error(self, x: Tensor) -> Tensor:
        """|<x, x>_L + 1| / (|x|² + 1), inf where x_0 ≤ 0 (the lower sheet or the light cone).

        Relative to |x|² because rounding leaves an absolute error ~eps x_0² in <x, x>_L far from the origin;
        computed on x / max(1, max_i |x_i|), so that points far out do not overflow the squares.
        """
        s = x.abs().amax(-1, keepdim=True).clamp_min(1)
        y = x / s
        inv_s2 = s.squeeze(-1).pow(-2)
        err = (self.minkowski(y, y) + inv_s2).abs() / ((y * y).sum(-1) + inv_s2)
        return torch.where(x[..., 0] > 0, err, math.inf)

    def _worst_violation(self, x: Tensor) -> float:
        """max |<x, x>_L + 1| / (|x|² + 1) without the rescaling (inf if a square overflows), inf if x_0 ≤ 0."""
        sq = x * x
        spatial, time_ = sq[..., 1:].sum(-1), sq[..., 0]
        err = (spatial - time_ + 1).abs() / (spatial + time_ + 1)
        return float(torch.where(x[..., 0] > 0, err, math.inf).max())

    @staticmethod
    def minkowski(u: Tensor, v: Tensor, *, keepdim: bool = False) -> Tensor:
        """<u, v>_L = -u_0 v_0 + Σ_{i≥1} u_i v_i."""
        prod = u * v
        return prod[..., 1:].sum(-1, keepdim=keepdim) - prod[..., :1].sum(-1, keepdim=keepdim)

    def inner(self, x: Tensor, u: Tensor, v: Tensor, *, keepdim: bool = False) -> Tensor:
        """<u, v>_L (positive definite on T_xHⁿ)."""
        return self.minkowski(u, v, keepdim=keepdim)

    def _proj(self, x: Tensor) -> Tensor:
        """Lift onto the sheet: keep the spatial part, set x_0 = sqrt(1 + |x_{1:}|²)."""
        spatial = x[..., 1:]
        return torch.cat([torch.sqrt(1 + (spatial * spatial).sum(-1, keepdim=True)), spatial], dim=-1)

    def _proj_tangent(self, x: Tensor, u: Tensor) -> Tensor:
        """u + <x, u>_L x."""
        return u + self.minkowski(x, u, keepdim=True) * x

    def encode(self, x: Tensor) -> Tensor:
        """(1/x_0, x_{1:}/x_0): Beltrami-Klein coordinates plus 1/x_0, a point of the unit sphere.

        Bounded and injective on Hⁿ. Raw ambient coordinates grow like e^{d(o, x)}, so an MLP fed
        with them outputs velocities that grow with the distance; in our runs an RFM sample that
        strayed from the data then accelerated outwards until it overflowed. With a bounded input
        the network output, and hence every velocity, stays bounded.
        """
        return torch.cat([1 / x[..., :1], x[..., 1:] / x[..., :1]], dim=-1)

    def _output_to_tangent(self, x: Tensor, f: Tensor) -> Tensor:
        """Γ_{o→x}(P_o f): the spatial part of f as a tangent vector at the origin, transported to x.

        P_o keeps the spatial coordinates and Γ_{o→x} is an isometry T_oHⁿ → T_xHⁿ, so |v|_L = |f_{1:}|.
        The Minkowski projection P_x f = f + <x, f>_L x (the official code's choice) scales f by up to
        ~|x|² far from the origin; with it RFM's training loss rose instead of falling on the H²
        checkerboard in our exploratory runs.
        """
        o = self.base_point(dtype=f.dtype, device=f.device).expand_as(f)
        return self._transport(o, x, self._proj_tangent(o, f))

    def _max_norm(self, dtype: torch.dtype) -> float:
        """Largest |u| for which cosh|u|² (squared again by :meth:`proj`) is finite in ``dtype``."""
        return 0.5 * math.log(torch.finfo(dtype).max) - 1.0

    def _exp(self, x: Tensor, u: Tensor) -> Tensor:
        """cosh|u| x + sinhc|u| u, with |u| clamped below overflow, lifted back onto the sheet."""
        r = torch.sqrt(self.minkowski(u, u, keepdim=True).clamp_min(_tiny(u.dtype)))
        r_max = self._max_norm(u.dtype)
        u = torch.where(r > r_max, u * (r_max / r), u)
        r = r.clamp_max(r_max)
        return self._proj(torch.cosh(r) * x + sinhc(r) * u)

    def _dist(self, x: Tensor, y: Tensor) -> Tensor:
        """2 asinh(|x - y|_L / 2) for close points (acosh loses digits near 1), acosh(-<x, y>_L) otherwise."""
        diff = x - y
        chord2 = self.minkowski(diff, diff).clamp_min(0)  # = 2(-<x, y>_L - 1) on the sheet
        near = chord2 < 4
        d_near = 2 * torch.asinh(0.5 * torch.sqrt(chord2.clamp_min(_tiny(x.dtype))))
        d_far = torch.acosh((-self.minkowski(x, y)).clamp_min(3.0))
        return torch.where(near, d_near, d_far)

    def _log(self, x: Tensor, y: Tensor) -> Tensor:
        """d(x, y)/sinh d(x, y) · P_x(y), with P_x(y) = y + <x, y>_L x written as (y - x) - ½|y - x|_L² x."""
        diff = y - x
        chord2 = self.minkowski(diff, diff, keepdim=True).clamp_min(0)
        u = diff - 0.5 * chord2 * x
        return inv_sinhc(self._dist(x, y).unsqueeze(-1)) * u

    def _transport(self, x: Tensor, y: Tensor, v: Tensor) -> Tensor:
        """v + <y, v>_L / (1 - <x, y>_L) (x + y)."""
        return v + self.minkowski(y, v, keepdim=True) / (1 - self.minkowski(x, y, keepdim=True)) * (x + y)

    def base_point(self, *, dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu") -> Tensor:
        """The origin (1, 0, ..., 0)."""
        o = torch.zeros(self.ambient_dim, dtype=dtype, device=device)
        o[0] = 1
        return o

    def chart_basis(self, *, dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu") -> Tensor:
        """e_1, ..., e_n (the spatial axes span the tangent space at the origin)."""
        return torch.eye(self.dim, self.ambient_dim, dtype=dtype, device=device).roll(1, dims=-1)

    def distance_to_manifold(self, x: Tensor) -> Tensor:
        """|x_0 - sqrt(1 + |x_{1:}|²)|: the distance along the time axis from x to the sheet."""
        return (x[..., 0] - self._proj(x)[..., 0]).abs()

    @staticmethod
    def to_poincare(x: Tensor) -> Tensor:
        """The Poincaré-ball point x_{1:}/(1 + x_0) of a hyperboloid point, shape (..., n)."""
        return x[..., 1:] / (1 + x[..., :1])
