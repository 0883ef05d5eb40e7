"""Pinhole camera utilities shared by papers with rendered scenes (PAGE-4D, UniSplat).

Conventions: OpenCV camera axes (x right, y down, z forward); an extrinsic is the camera-from-world matrix
``[R | t]`` (3, 4), ``X_cam = R X_world + t``; depth is the z-coordinate in the camera frame. NumPy only.
"""

from __future__ import annotations

import numpy as np

__all__ = ["camera_centers", "intrinsics_matrix", "look_rotation", "rotation_from_axis_angle"]


def rotation_from_axis_angle(axis_angle: np.ndarray) -> np.ndarray:
    """Rodrigues' formula: ``R = I + sin θ [k]x + (1 − cos θ) [k]x²`` for ``axis_angle = θ k`` (3,) -> (3, 3)."""
    v = np.asarray(axis_angle, dtype=np.float64)
    theta = float(np.linalg.norm(v))
    if theta < 1e-12:
        return np.eye(3)
    k = v / theta
    kx = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + np.sin(theta) * kx + (1.0 - np.cos(theta)) * kx @ kx


def look_rotation(forward: np.ndarray, up: tuple[float, float, float] = (0.0, -1.0, 0.0)) -> np.ndarray:
    """Camera-from-world rotation whose camera z axis points along ``forward`` (OpenCV axes, y down).

    Args:
        forward: (3,) viewing direction in world coordinates (need not be unit).
        up: world direction the camera's ``-y`` axis leans towards.

    Returns:
        (3, 3) rotation ``R`` with rows the camera's x, y, z axes in world coordinates.

    Raises:
        ValueError: if ``forward`` is zero or parallel to ``up``.
    """
    z = np.asarray(forward, dtype=np.float64)
    if np.linalg.norm(z) < 1e-12:
        raise ValueError("forward must be non-zero")
    z = z / np.linalg.norm(z)
    x = np.cross(-np.asarray(up, dtype=np.float64), z)
    if np.linalg.norm(x) < 1e-9:
        raise ValueError("forward must not be parallel to up")
    x = x / np.linalg.norm(x)
    y = np.cross(z, x)
    return np.stack([x, y, z])


def intrinsics_matrix(height: int, width: int, *, fov_x_deg: float = 60.0) -> np.ndarray:
    """Pinhole ``K`` with square pixels, principal point at the image centre and horizontal field of view ``fov_x``."""
    f = 0.5 * width / np.tan(np.deg2rad(fov_x_deg) / 2)
    return np.array([[f, 0.0, width / 2], [0.0, f, height / 2], [0.0, 0.0, 1.0]])


def camera_centers(extrinsics: np.ndarray) -> np.ndarray:
    """World positions ``C = −Rᵀ t`` of cameras ``[R | t]`` (S, 3, 4) -> (S, 3)."""
    r, t = extrinsics[:, :, :3], extrinsics[:, :, 3]
    return -np.einsum("sji,sj->si", r, t)
