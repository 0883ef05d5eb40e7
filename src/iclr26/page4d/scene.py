"""Synthetic 4D scenes: a textured room, moving and static spheres, a moving pinhole camera; RGB, depth, motion.

Paper-agnostic (imports only NumPy and the shared cameras of :mod:`iclr26.common.cameras`).

Conventions (those of VGGT/PAGE-4D's ``extrinsics``): OpenCV camera axes (x right, y down, z forward);
``extrinsics[i]`` is the camera-from-world matrix ``[R | t]`` (3, 4), ``X_cam = R X_world + t``; depth is the
z-coordinate in the camera frame (not the ray length).

Dimension letters: ``S`` frames, ``H, W`` image height and width, ``K`` spheres.

The renderer is an exact ray caster (no rasterisation): each pixel's ray is intersected with the room's six walls
(an axis-aligned box seen from inside) and with every sphere; the nearest hit gives depth, the texture at the hit
point gives the colour. Textures are sums of sinusoids of the hit point in the owner's frame (world for walls, the
sphere's own frame for spheres), so a moving sphere carries its texture with it, as a rigid moving object does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclr26.common.cameras import camera_centers, intrinsics_matrix, look_rotation, rotation_from_axis_angle

__all__ = [
    "CameraMotion",
    "Scene4D",
    "Sphere",
    "camera_path",
    "generate_scene",
    "relative_to_first",
    "render_frame",
]


@dataclass(frozen=True)
class Sphere:
    """A textured sphere moving at constant velocity: centre ``center + t * velocity`` at frame ``t``.

    Attributes:
        center: (3,) world position at frame 0.
        velocity: (3,) displacement per frame (zeros for a static sphere).
        radius: radius > 0.
        freq: (3, 3) texture frequencies (rows: RGB channel, columns: x, y, z in the sphere's frame).
        phase: (3,) texture phases per channel.
    """

    center: np.ndarray
    velocity: np.ndarray
    radius: float
    freq: np.ndarray
    phase: np.ndarray

    @property
    def moving(self) -> bool:
        """Whether the sphere moves."""
        return bool(np.any(self.velocity != 0))


@dataclass(frozen=True)
class Scene4D:
    """One rendered sequence with its ground truth.

    Attributes:
        images: (S, 3, H, W) float32 RGB in [0, 1].
        depth: (S, H, W) float32 z-depth in the camera frame (> 0).
        extrinsics: (S, 3, 4) float64 camera-from-world ``[R | t]``.
        intrinsics: (S, 3, 3) float64 pinhole matrices.
        dynamic_mask: (S, H, W) bool, True where the pixel sees a moving object.
    """

    images: np.ndarray
    depth: np.ndarray
    extrinsics: np.ndarray
    intrinsics: np.ndarray
    dynamic_mask: np.ndarray

    def __post_init__(self) -> None:
        s = self.images.shape[0]
        if self.images.ndim != 4 or self.images.shape[1] != 3:
            raise ValueError(f"images must be (S, 3, H, W), got {self.images.shape}")
        h, w = self.images.shape[2:]
        for name, arr, shape in (("depth", self.depth, (s, h, w)), ("extrinsics", self.extrinsics, (s, 3, 4)),
                                 ("intrinsics", self.intrinsics, (s, 3, 3)),
                                 ("dynamic_mask", self.dynamic_mask, (s, h, w))):  # fmt: skip
            if arr.shape != shape:
                raise ValueError(f"{name} must have shape {shape} to match images {self.images.shape}, got {arr.shape}")
        for name, arr in (("images", self.images), ("depth", self.depth), ("extrinsics", self.extrinsics),
                          ("intrinsics", self.intrinsics)):  # fmt: skip
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"{name} contains NaN or inf values")
        if np.any(self.depth <= 0):
            raise ValueError("depth must be > 0 everywhere")

    @property
    def n_frames(self) -> int:
        """S, the number of frames."""
        return int(self.images.shape[0])


def relative_to_first(extrinsics: np.ndarray) -> np.ndarray:
    """Re-express cameras in the first camera's frame: ``E_i E_0⁻¹``, so frame 0 becomes ``[I | 0]`` (VGGT's
    normalisation). (S, 3, 4) -> (S, 3, 4)."""
    r0, t0 = extrinsics[0, :, :3], extrinsics[0, :, 3]
    r = extrinsics[:, :, :3] @ r0.T  # R_i R_0ᵀ
    t = extrinsics[:, :, 3] - np.einsum("sij,j->si", r, t0)  # t_i − R_i R_0ᵀ t_0
    return np.concatenate([r, t[:, :, None]], axis=2)


def _wall_texture(p: np.ndarray, wall: np.ndarray, freq: np.ndarray, phase: np.ndarray) -> np.ndarray:
    """Colour (…, 3) of world points ``p`` (…, 3) on walls ``wall`` (…,) (0..5): sinusoids with a per-wall phase."""
    arg = np.einsum("...j,cj->...c", p, freq) + phase + 1.7 * wall[..., None]
    return 0.5 + 0.25 * np.sin(arg) + 0.25 * np.sin(2.3 * arg[..., [1, 2, 0]] + 0.5)


def render_frame(
    extrinsic: np.ndarray,
    intrinsic: np.ndarray,
    height: int,
    width: int,
    *,
    room: float,
    wall_freq: np.ndarray,
    wall_phase: np.ndarray,
    spheres: list[Sphere],
    frame: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ray-cast one frame.

    Args:
        extrinsic: (3, 4) camera-from-world.
        intrinsic: (3, 3) pinhole matrix.
        height: H.
        width: W.
        room: half-size of the room, the box ``[−room, room]³``; the camera must be inside.
        wall_freq: (3, 3) wall texture frequencies.
        wall_phase: (3,) wall texture phases.
        spheres: the objects.
        frame: the frame index ``t`` (sphere centres are ``center + t * velocity``).

    Returns:
        ``(rgb (3, H, W), depth (H, W), dynamic (H, W) bool)``.
    """
    r, t = extrinsic[:, :3], extrinsic[:, 3]
    origin = -r.T @ t  # camera centre in world
    if np.any(np.abs(origin) >= room):
        raise ValueError(f"the camera at {origin} is outside the room of half-size {room}")
    v, u = np.meshgrid(np.arange(height) + 0.5, np.arange(width) + 0.5, indexing="ij")
    pix = np.stack([u, v, np.ones_like(u)], axis=-1)  # (H, W, 3)
    d_cam = pix @ np.linalg.inv(intrinsic).T  # (H, W, 3), z = 1, so the ray parameter is the z-depth
    d = d_cam @ r  # world directions: Rᵀ d_cam, (H, W, 3)
    # walls: t_axis = (room · sign(d) − o) / d; the nearest wall is the smallest
    safe = np.where(np.abs(d) < 1e-12, 1e-12, d)
    t_axes = (room * np.sign(safe) - origin) / safe  # (H, W, 3)
    axis = np.argmin(t_axes, axis=-1)
    depth = np.take_along_axis(t_axes, axis[..., None], axis=-1)[..., 0]
    hit = origin + depth[..., None] * d
    wall = 2 * axis + (np.take_along_axis(d, axis[..., None], axis=-1)[..., 0] > 0)
    rgb = _wall_texture(hit, wall, wall_freq, wall_phase)
    dynamic = np.zeros((height, width), dtype=bool)
    for sph in spheres:
        c = sph.center + frame * sph.velocity
        oc = origin - c
        # |o + t d − c|² = ρ²: a t² + b t + cc = 0, nearest root
        a = np.einsum("hwj,hwj->hw", d, d)
        b = 2.0 * np.einsum("hwj,j->hw", d, oc)
        cc = float(oc @ oc) - sph.radius**2
        disc = b * b - 4 * a * cc
        ok = disc > 0
        ts = np.where(ok, (-b - np.sqrt(np.where(ok, disc, 0.0))) / (2 * a), np.inf)
        closer = ok & (ts > 1e-6) & (ts < depth)
        if closer.any():
            local = origin + np.where(closer, ts, 0.0)[..., None] * d - c  # the hit point in the sphere's frame
            col = 0.5 + 0.45 * np.sin(np.einsum("hwj,cj->hwc", local, sph.freq) + sph.phase)
            rgb = np.where(closer[..., None], col, rgb)
            depth = np.where(closer, ts, depth)
            dynamic = np.where(closer, sph.moving, dynamic)
    return np.clip(rgb, 0.0, 1.0).transpose(2, 0, 1), depth, dynamic


@dataclass(frozen=True)
class CameraMotion:
    """How the camera moves from frame to frame (every draw per frame, so paths curve, speed up, slow down and stop).

    A path with ``speed_jitter = curve_deg = turn_jitter = stop_prob = 0`` is a straight line at constant speed with
    a constant turn rate, on which any collinear, equally spaced prediction has a Sim(3)-aligned ATE of 0.

    Attributes:
        step: mean displacement per frame.
        speed_jitter: each frame's displacement is ``step · U(1 − j, 1 + j)``, j in [0, 1].
        curve_deg: the direction of travel turns by ``U(−c, c)`` degrees per frame (about the vertical).
        stop_prob: chance that a frame's displacement is 0 (the camera stops; it may still turn).
        turn_deg: mean rotation of the camera per frame about a near-vertical axis, degrees.
        turn_jitter: each frame's rotation is ``turn_deg · U(1 − j, 1 + j)`` with a sign drawn per frame when
            ``j > 0`` (so the camera turns both ways), and ``turn_deg`` with one sign per sequence when ``j = 0``.
    """

    step: float = 0.5
    speed_jitter: float = 0.0
    curve_deg: float = 0.0
    stop_prob: float = 0.0
    turn_deg: float = 8.0
    turn_jitter: float = 0.0


def camera_path(rng: np.random.Generator, n_frames: int, motion: CameraMotion, *, room: float = 4.0) -> np.ndarray:
    """Camera-from-world extrinsics (S, 3, 4) of a camera moving inside the room ``[−room, room]³``.

    The path starts near ``(0, 0, −1.2)`` looking roughly along ``+z``; each frame draws its displacement and turn
    from ``motion``. The path is centred on its start point and shrunk towards it if it would leave the room's
    inner part (``room − 1`` from each wall).
    """
    c0 = rng.uniform(-0.6, 0.6, size=3) * np.array([1.0, 0.4, 1.0]) - np.array([0.0, 0.0, 1.2])
    yaw0 = rng.uniform(-0.35, 0.35)
    r0 = look_rotation(np.array([np.sin(yaw0), rng.uniform(-0.1, 0.1), np.cos(yaw0)]))
    turn_axis = np.array([rng.normal(0, 0.2), 1.0, rng.normal(0, 0.2)])
    turn_axis /= np.linalg.norm(turn_axis)
    heading = rng.uniform(0, 2 * np.pi)
    sign, rise = rng.choice([-1.0, 1.0]), rng.uniform(-0.15, 0.15)
    centres, angles = [np.zeros(3)], [0.0]
    for _ in range(n_frames - 1):
        heading += np.deg2rad(motion.curve_deg) * rng.uniform(-1.0, 1.0)
        d = np.array([np.sin(heading), rise, np.cos(heading)])
        speed = motion.step * rng.uniform(1 - motion.speed_jitter, 1 + motion.speed_jitter)
        if motion.stop_prob > 0 and rng.random() < motion.stop_prob:
            speed = 0.0
        centres.append(centres[-1] + speed * d / np.linalg.norm(d))
        turn = motion.turn_deg * (rng.uniform(1 - motion.turn_jitter, 1 + motion.turn_jitter) * rng.choice([-1.0, 1.0])
                                  if motion.turn_jitter > 0 else sign)  # fmt: skip
        angles.append(angles[-1] + np.deg2rad(turn))
    path = np.stack(centres) - np.mean(centres, axis=0)  # centred on c0
    reach = np.abs(c0 + path).max()
    if reach > room - 1.0:
        path *= max(room - 1.0 - np.abs(c0).max(), 0.0) / max(np.abs(path).max(), 1e-9)
    extr = []
    for c_rel, angle in zip(path, angles, strict=True):
        r_i = r0 @ rotation_from_axis_angle(turn_axis * angle).T  # the camera turns about a world axis
        extr.append(np.concatenate([r_i, (-r_i @ (c0 + c_rel))[:, None]], axis=1))
    return np.stack(extr)


def _in_view(point: np.ndarray, extrinsics: np.ndarray, k: np.ndarray, height: int, width: int) -> bool:
    """Whether ``point`` projects inside the image, in front of the camera, in every frame."""
    pc = np.einsum("sij,j->si", extrinsics[:, :, :3], point) + extrinsics[:, :, 3]
    if np.any(pc[:, 2] <= 0.3):
        return False
    uv = pc @ k.T
    u, v = uv[:, 0] / uv[:, 2], uv[:, 1] / uv[:, 2]
    return bool(np.all((u >= 0) & (u < width) & (v >= 0) & (v < height)))


def _draw_sphere(rng: np.random.Generator, extrinsics: np.ndarray, k: np.ndarray, height: int, width: int, *,
                 moving: bool, speed: float, tries: int = 20) -> Sphere:  # fmt: skip
    """One sphere in front of the middle camera, 2–3.5 units away, clear of every camera centre; a moving one is
    redrawn (up to ``tries`` times) until its centre is in view in every frame, so its pixels are where the dynamic
    metrics look."""
    s = extrinsics.shape[0]
    mid = s // 2
    r_m, c_m = extrinsics[mid, :, :3], camera_centers(extrinsics[mid : mid + 1])[0]
    centres = camera_centers(extrinsics)
    sphere = None
    for _ in range(tries):
        local = np.array([rng.uniform(-0.9, 0.9), rng.uniform(-0.5, 0.5), rng.uniform(2.0, 3.5)])
        radius = float(rng.uniform(0.45, 0.8))
        centre = c_m + r_m.T @ local
        velocity = np.zeros(3)
        if moving:
            vdir = rng.normal(size=3)
            velocity = speed * vdir / np.linalg.norm(vdir)
            centre = centre - mid * velocity  # centred on the middle frame
        sphere = Sphere(center=centre, velocity=velocity, radius=radius,
                        freq=rng.uniform(3.0, 7.0, size=(3, 3)) * rng.choice([-1.0, 1.0], size=(3, 3)),
                        phase=rng.uniform(0, 2 * np.pi, size=3))  # fmt: skip
        at = centre + np.arange(s)[:, None] * velocity  # (S, 3) centre per frame
        clear = np.all(np.linalg.norm(at - centres, axis=1) > radius + 0.4)
        if clear and (not moving or _in_view_track(at, extrinsics, k, height, width)):
            return sphere
    return sphere  # type: ignore[return-value]


def _in_view_track(at: np.ndarray, extrinsics: np.ndarray, k: np.ndarray, height: int, width: int) -> bool:
    """Whether the moving centre ``at[i]`` (S, 3) projects inside frame ``i`` for every ``i``."""
    return all(_in_view(p, extrinsics[i : i + 1], k, height, width) for i, p in enumerate(at))


def generate_scene(
    rng: np.random.Generator,
    *,
    n_frames: int,
    height: int,
    width: int,
    n_moving: int,
    n_objects: int = 3,
    room: float = 4.0,
    motion: CameraMotion | None = None,
    object_speed: float = 0.6,
) -> Scene4D:
    """Draw and render one sequence: a textured room and ``n_objects`` spheres, ``n_moving`` of them moving, seen by
    a camera moving as ``motion`` says (:func:`camera_path`).

    Static scenes (``n_moving=0``) hold as many objects as dynamic ones, drawn from the same distribution, so the
    only difference between the two is motion. A moving sphere stays in view in every frame.

    Args:
        rng: the random generator (every draw comes from it).
        n_frames: S >= 2.
        height: H >= 4.
        width: W >= 4.
        n_moving: moving spheres (0 for a static scene), at most ``n_objects``.
        n_objects: spheres in all.
        room: half-size of the room.
        motion: the camera's motion (default :class:`CameraMotion`: a straight line at constant speed).
        object_speed: moving spheres' displacement per frame.

    Returns:
        :class:`Scene4D` with extrinsics relative to frame 0 (frame 0 is ``[I | 0]``).

    Raises:
        ValueError: for fewer than 2 frames, images smaller than 4 pixels, or counts outside 0 <= n_moving <=
            n_objects.
    """
    if n_frames < 2:
        raise ValueError(f"n_frames must be >= 2, got {n_frames}")
    if height < 4 or width < 4:
        raise ValueError(f"height and width must be >= 4, got {height}x{width}")
    if not 0 <= n_moving <= n_objects:
        raise ValueError(f"need 0 <= n_moving <= n_objects, got n_moving={n_moving}, n_objects={n_objects}")
    k = intrinsics_matrix(height, width)
    extrinsics = camera_path(rng, n_frames, motion or CameraMotion(), room=room)
    wall_freq = rng.uniform(1.0, 3.0, size=(3, 3)) * rng.choice([-1.0, 1.0], size=(3, 3))
    wall_phase = rng.uniform(0, 2 * np.pi, size=3)
    spheres = [_draw_sphere(rng, extrinsics, k, height, width, moving=j < n_moving, speed=object_speed)
               for j in range(n_objects)]  # fmt: skip
    images, depth, dyn = [], [], []
    for i in range(n_frames):
        rgb, dep, mask = render_frame(extrinsics[i], k, height, width, room=room, wall_freq=wall_freq,
                                      wall_phase=wall_phase, spheres=spheres, frame=i)  # fmt: skip
        images.append(rgb)
        depth.append(dep)
        dyn.append(mask)
    return Scene4D(
        images=np.stack(images).astype(np.float32),
        depth=np.stack(depth).astype(np.float32),
        extrinsics=relative_to_first(extrinsics),
        intrinsics=np.repeat(k[None], n_frames, axis=0),
        dynamic_mask=np.stack(dyn),
    )
