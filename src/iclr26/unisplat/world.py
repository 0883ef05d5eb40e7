"""A synthetic driving world: a street with façades, parked and moving cars, an ego vehicle with a camera rig.

Stands in for UniSplat's Waymo sequences (the data cannot be had here). Everything is ray cast exactly (no
rasterisation), so the ground truth is exact: RGB, z-depth, a sky mask and a dynamic mask (pixels on moving cars).

World axes: x forward along the street, y left, z up; the ground is ``z = 0``, the façades are the planes
``y = ±facade_y`` up to ``facade_height``, everything else is sky (a constant colour). Cars are axis-aligned boxes;
moving cars translate along x at a constant velocity. The ego vehicle drives along x at ``ego_speed`` per frame; its
frame has the world's axes at ``(x_t, 0, 0)`` (``ego_pose`` is world-from-ego, 4×4). Cameras use OpenCV axes;
``extrinsic`` is camera-from-ego ``[R | t]`` (3, 4) for the rig and the novel views.

The role of UniSplat's geometry foundation model (π³ point maps with a metric-scale head) is played by
:func:`foundation_depth`: the true depth divided by an unknown per-camera scale, times per-pixel log-normal noise;
sky pixels are invalid (a foundation model gives a sky mask).

Dimension letters: ``F`` frames, ``V`` cameras, ``H, W`` image size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclr26.common.cameras import intrinsics_matrix, look_rotation

__all__ = [
    "Box",
    "DrivingSequence",
    "Street",
    "camera_extrinsic",
    "draw_street",
    "foundation_depth",
    "make_sequence",
    "ray_cast",
]

SKY = np.array([0.62, 0.74, 0.88])


@dataclass(frozen=True)
class Box:
    """A car: an axis-aligned box ``[lo + t·v, hi + t·v]`` at frame ``t``, with a colour and a stripe colour."""

    lo: np.ndarray
    hi: np.ndarray
    velocity: float
    color: np.ndarray
    stripe: np.ndarray

    @property
    def moving(self) -> bool:
        """Whether the car moves."""
        return self.velocity != 0.0


@dataclass(frozen=True)
class Street:
    """One drawn street.

    Attributes:
        boxes: parked and moving cars.
        facade_colors: (S, 3) colours of 6 m façade segments along x (both sides, offset by ``S // 2``).
        x0: the ego's x at frame 0.
        ego_speed: ego displacement per frame along x.
        texture_phase: (4,) phases of the ground and façade textures.
        facade_y: distance of the façades from the centre line.
        facade_height: façade height.
    """

    boxes: tuple[Box, ...]
    facade_colors: np.ndarray
    x0: float
    ego_speed: float
    texture_phase: np.ndarray
    facade_y: float = 9.0
    facade_height: float = 7.0

    def ego_pose(self, frame: float) -> np.ndarray:
        """World-from-ego (4, 4) at ``frame``: a translation to ``(x0 + frame · ego_speed, 0, 0)``."""
        pose = np.eye(4)
        pose[0, 3] = self.x0 + frame * self.ego_speed
        return pose


def camera_extrinsic(yaw_deg: float, *, pitch_deg: float = 8.0, position=(0.0, 0.0, 1.6)) -> np.ndarray:  # noqa: ANN001
    """Camera-from-ego ``[R | t]`` (3, 4) of a camera at ``position`` (ego frame) looking at ``yaw`` (left of forward,
    degrees) and ``pitch`` below the horizon."""
    yaw, pitch = np.deg2rad(yaw_deg), np.deg2rad(pitch_deg)
    forward = np.array([np.cos(yaw) * np.cos(pitch), np.sin(yaw) * np.cos(pitch), -np.sin(pitch)])
    r = look_rotation(forward, up=(0.0, 0.0, 1.0))
    c = np.asarray(position, dtype=np.float64)
    return np.concatenate([r, (-r @ c)[:, None]], axis=1)


def draw_street(rng: np.random.Generator, *, ego_speed: float, n_moving: int = 2, n_parked: int = 6) -> Street:
    """Draw a street: façade colours, parked cars on both kerbs, moving cars in the two outer lanes.

    Moving cars are placed so that they are seen by the rig during a short sequence: one oncoming (left lane, passes
    the ego), the others in the right lane at a speed different from the ego's.
    """
    x0 = float(rng.uniform(-50, 50))
    boxes = []
    for k in range(n_parked):
        side = 1.0 if k % 2 == 0 else -1.0
        cx = x0 + rng.uniform(-25, 35)
        y = side * 6.6
        lo = np.array([cx - 2.0, y - 0.9, 0.0])
        boxes.append(Box(lo, lo + np.array([4.0, 1.8, 1.5]), 0.0, rng.uniform(0.1, 0.9, 3), rng.uniform(0.0, 1.0, 3)))
    for k in range(n_moving):
        if k % 2 == 0:  # oncoming, left lane
            y, v, cx = 3.2, -float(rng.uniform(1.0, 2.0)), x0 + rng.uniform(14, 24)
        else:  # right lane, faster or slower than the ego
            y, v, cx = -3.2, ego_speed + float(rng.choice([-1.0, 1.0]) * rng.uniform(0.8, 1.5)), x0 + rng.uniform(2, 12)
        lo = np.array([cx - 2.0, y - 0.9, 0.0])
        boxes.append(Box(lo, lo + np.array([4.2, 1.8, 1.6]), v, rng.uniform(0.1, 0.9, 3), rng.uniform(0.0, 1.0, 3)))
    return Street(tuple(boxes), rng.uniform(0.25, 0.85, size=(40, 3)), x0, ego_speed, rng.uniform(0, 2 * np.pi, 4))


def _ground_color(p: np.ndarray, ph: np.ndarray) -> np.ndarray:
    x, y = p[..., 0], p[..., 1]
    base = 0.33 + 0.06 * np.sin(1.3 * x + ph[0]) * np.sin(1.1 * y + ph[1]) + 0.04 * np.sin(3.7 * x - 2.3 * y)
    col = np.stack([base, base, base * 1.05], axis=-1)
    dash = (np.abs(y) < 0.15) & (np.mod(x, 4.0) < 2.0)
    edge = np.abs(np.abs(y) - 5.0) < 0.15
    walk = np.abs(y) > 5.15
    tile = 0.55 + 0.12 * ((np.floor(x / 1.5) + np.floor(y / 1.5)) % 2)
    col = np.where(walk[..., None], np.stack([tile, tile * 0.95, tile * 0.85], -1), col)
    return np.where((dash | edge)[..., None], 0.92, col)


def _facade_color(p: np.ndarray, side: np.ndarray, street: Street) -> np.ndarray:
    x, z = p[..., 0], p[..., 2]
    n = street.facade_colors.shape[0]
    seg = (np.floor(x / 6.0).astype(np.int64) + np.where(side > 0, 0, n // 2)) % n
    col = street.facade_colors[seg]
    window = (np.mod(x + street.texture_phase[2], 2.0) < 1.0) & (np.mod(z, 2.5) > 1.2) & (z > 1.0)
    return np.where(window[..., None], col * 0.35, col)


def ray_cast(
    street: Street, extrinsic: np.ndarray, intrinsic: np.ndarray, height: int, width: int, *, frame: float,
    object_frame: float | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """Render one view of the street exactly.

    Args:
        street: the world.
        extrinsic: (3, 4) camera-from-ego at ``frame``.
        intrinsic: (3, 3) pinhole matrix.
        height: H.
        width: W.
        frame: the ego's frame (fixes the camera in the world).
        object_frame: the frame at which moving cars are placed (``frame`` if None); used to find where the cars
            were in earlier frames (the dynamic region of a view).

    Returns:
        ``(rgb (3, H, W), depth (H, W), sky (H, W) bool, dynamic (H, W) bool)``; depth is the camera z (``inf`` on
        sky).
    """
    of = frame if object_frame is None else object_frame
    world_from_cam_r = (extrinsic[:, :3]).T  # ego and world share axes
    origin = street.ego_pose(frame)[:3, 3] + world_from_cam_r @ (-extrinsic[:, 3])
    v, u = np.meshgrid(np.arange(height) + 0.5, np.arange(width) + 0.5, indexing="ij")
    pix = np.stack([u, v, np.ones_like(u)], axis=-1)
    d = (pix @ np.linalg.inv(intrinsic).T) @ world_from_cam_r.T  # (H, W, 3); t along d is the camera z
    inf = np.full((height, width), np.inf)
    # ground z = 0
    t_g = np.where(d[..., 2] < -1e-9, -origin[2] / np.where(d[..., 2] < -1e-9, d[..., 2], -1.0), np.inf)
    # façades y = ±facade_y, below facade_height
    t_f, side = inf.copy(), np.zeros((height, width))
    for s in (1.0, -1.0):
        dy = d[..., 1]
        ok = s * dy > 1e-9
        t = np.where(ok, (s * street.facade_y - origin[1]) / np.where(ok, dy, 1.0), np.inf)
        z = origin[2] + t * d[..., 2]
        t = np.where((z <= street.facade_height) & (t > 0), t, np.inf)
        side = np.where(t < t_f, s, side)
        t_f = np.minimum(t_f, t)
    depth = np.minimum(t_g, t_f)
    hit = origin + np.where(np.isfinite(depth), depth, 0.0)[..., None] * d
    rgb = np.where((t_g <= t_f)[..., None], _ground_color(hit, street.texture_phase), _facade_color(hit, side, street))
    rgb = np.where(np.isfinite(depth)[..., None], rgb, SKY)
    dynamic = np.zeros((height, width), dtype=bool)
    safe = np.where(np.abs(d) < 1e-12, 1e-12, d)
    for box in street.boxes:
        shift = np.array([of * box.velocity, 0.0, 0.0])
        t1, t2 = (box.lo + shift - origin) / safe, (box.hi + shift - origin) / safe  # slab method
        t_near = np.minimum(t1, t2).max(axis=-1)
        t_far = np.maximum(t1, t2).min(axis=-1)
        hit_b = (t_near <= t_far) & (t_near > 1e-6) & (t_near < depth)
        if hit_b.any():
            local = origin + np.where(hit_b, t_near, 0.0)[..., None] * d - (box.lo + shift)
            stripe = (local[..., 2] > 0.6) & (local[..., 2] < 0.9)
            col = np.where(stripe[..., None], box.stripe, box.color * (0.8 + 0.2 * np.cos(2.0 * local[..., :1])))
            rgb = np.where(hit_b[..., None], col, rgb)
            depth = np.where(hit_b, t_near, depth)
            dynamic = np.where(hit_b, box.moving, dynamic)
    return np.clip(rgb, 0, 1).transpose(2, 0, 1), depth, ~np.isfinite(depth), dynamic


def foundation_depth(depth: np.ndarray, sky: np.ndarray, rng: np.random.Generator, *, scale_range: float,
                     noise: float) -> tuple[np.ndarray, float]:  # fmt: skip
    """The foundation-model stand-in: ``depth / s · exp(noise · ε)`` with ``log s ~ U(−log r, log r)``, ``ε ~ N(0, 1)``
    per pixel; 0 on sky (invalid). Returns ``(relative depth (H, W), s)``; ``s`` is the metric scale to recover."""
    s = float(np.exp(rng.uniform(-np.log(scale_range), np.log(scale_range))))
    rel = np.where(sky, 0.0, np.where(sky, 1.0, depth) / s * np.exp(noise * rng.standard_normal(depth.shape)))
    return rel.astype(np.float32), s


@dataclass(frozen=True)
class DrivingSequence:
    """A short drive with the rig's observations and novel views at the last frame.

    Attributes:
        images: (F, V, 3, H, W) rig RGB.
        rel_depth: (F, V, H, W) foundation-model depth (0 = invalid/sky), up to the scale in ``depth_scale``.
        depth_scale: (F, V) the metric scale ``s`` per camera and frame (true depth ≈ s · rel_depth).
        dynamic: (F, V, H, W) bool, rig pixels on moving cars.
        rig: (V, 3, 4) camera-from-ego of the rig.
        intrinsic: (3, 3) shared pinhole matrix.
        ego_poses: (F, 4, 4) world-from-ego.
        novel: (Q, 3, 4) camera-from-ego of the novel views at the last frame.
        novel_images: (Q, 3, H, W) their ground truth.
        novel_dynamic: (Q, H, W) bool, pixels where a moving car is at any frame of the drive (seen from the novel
            view at the last frame): where ghosts of moving cars would show.
        novel_outside: (Q,) bool, whether the view lies outside the rig's coverage.
    """

    images: np.ndarray
    rel_depth: np.ndarray
    depth_scale: np.ndarray
    dynamic: np.ndarray
    rig: np.ndarray
    intrinsic: np.ndarray
    ego_poses: np.ndarray
    novel: np.ndarray
    novel_images: np.ndarray
    novel_dynamic: np.ndarray
    novel_outside: np.ndarray


def make_sequence(
    street: Street,
    rng: np.random.Generator,
    *,
    n_frames: int,
    height: int,
    width: int,
    rig_yaws: tuple[float, ...],
    fov_deg: float,
    inside_views: tuple[tuple[float, float], ...],
    outside_yaws: tuple[float, ...],
    scale_range: float,
    depth_noise: float,
) -> DrivingSequence:
    """Render a drive of ``n_frames`` frames with the rig and the novel views at the last frame.

    Args:
        street: the world.
        rng: generator for the depth scale and noise.
        n_frames: F >= 1.
        height: H.
        width: W.
        rig_yaws: yaw of each rig camera (degrees, left of forward).
        fov_deg: horizontal field of view of every camera.
        inside_views: ``(yaw, lateral shift)`` of the novel views inside the rig's coverage.
        outside_yaws: yaws of the novel views outside it.
        scale_range: r of :func:`foundation_depth`.
        depth_noise: per-pixel log-normal depth noise.

    Returns:
        :class:`DrivingSequence`.
    """
    if n_frames < 1 or height < 4 or width < 4:
        raise ValueError(f"need n_frames >= 1 and images >= 4x4, got {n_frames}, {height}x{width}")
    k = intrinsics_matrix(height, width, fov_x_deg=fov_deg)
    rig = np.stack([camera_extrinsic(y) for y in rig_yaws])
    imgs, rel, scales, dyn = [], [], [], []
    for f in range(n_frames):
        row = [ray_cast(street, e, k, height, width, frame=f) for e in rig]
        imgs.append([r[0] for r in row])
        dyn.append([r[3] for r in row])
        fd = [foundation_depth(r[1], r[2], rng, scale_range=scale_range, noise=depth_noise) for r in row]
        rel.append([x[0] for x in fd])
        scales.append([x[1] for x in fd])
    novel = [camera_extrinsic(y, position=(0.3, s, 1.6)) for y, s in inside_views]
    novel += [camera_extrinsic(y) for y in outside_yaws]
    last = n_frames - 1
    nov_img, nov_dyn = [], []
    for e in novel:
        rgb, _, _, dm = ray_cast(street, e, k, height, width, frame=last)
        for f in range(last):  # where moving cars were earlier in the drive
            dm = dm | ray_cast(street, e, k, height, width, frame=last, object_frame=f)[3]
        nov_img.append(rgb)
        nov_dyn.append(dm)
    return DrivingSequence(
        images=np.asarray(imgs, dtype=np.float32), rel_depth=np.asarray(rel, dtype=np.float32),
        depth_scale=np.asarray(scales), dynamic=np.asarray(dyn), rig=rig, intrinsic=k,
        ego_poses=np.stack([street.ego_pose(f) for f in range(n_frames)]), novel=np.stack(novel),
        novel_images=np.asarray(nov_img, dtype=np.float32), novel_dynamic=np.asarray(nov_dyn),
        novel_outside=np.array([False] * len(inside_views) + [True] * len(outside_yaws)),
    )  # fmt: skip
