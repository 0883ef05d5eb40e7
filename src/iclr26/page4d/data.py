"""Sequences for training and evaluation: batching :class:`~iclr26.page4d.scene.Scene4D` lists into tensors, and
the user-data loader behind ``--set data=PATH``.

The user format is one ``.npz`` per sequence with the keys of a VGGT/PAGE-4D training batch
(kaichen-z/PAGE4D ``training/data/composed_dataset.py``: ``images``, ``depths``, ``extrinsics``, ``intrinsics``)
plus ``dynamic_mask``:

- ``images``: (S, H, W, 3) or (S, 3, H, W), uint8 in 0..255 or float in [0, 1];
- ``depths``: (S, H, W) z-depth, > 0 where valid (0 = invalid pixel);
- ``extrinsics``: (S, 3, 4) camera-from-world (OpenCV axes); (S, 4, 4) homogeneous matrices are accepted when
  their last row is ``[0, 0, 0, 1]``;
- ``intrinsics``: (S, 3, 3);
- ``dynamic_mask``: (S, H, W) bool, 0/1 or 0/255, the ground-truth motion mask (non-zero = moving).

Dimension letters: ``B`` sequences, ``S`` frames, ``H, W`` image size.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import torch

from iclr26.page4d.geometry import extrinsics_to_pose_encoding
from iclr26.page4d.scene import Scene4D, relative_to_first

__all__ = ["REQUIRED_KEYS", "batch_tensors", "load_sequence", "load_sequences"]

REQUIRED_KEYS = ("images", "depths", "extrinsics", "intrinsics", "dynamic_mask")


def batch_tensors(scenes: list[Scene4D], device: torch.device | str | None = None) -> dict[str, torch.Tensor]:
    """Stack scenes into a training batch on ``device`` (torch's default device if None): ``images``
    (B, S, 3, H, W), ``pose_enc`` (B, S, 7) (cameras relative to frame 0), ``depth`` (B, S, H, W).

    Raises:
        ValueError: if the scenes differ in frame count or image size.
    """
    shapes = {s.images.shape for s in scenes}
    if len(shapes) != 1:
        raise ValueError(f"all sequences of a batch need the same (S, 3, H, W), got {sorted(shapes)}")
    enc = np.stack([extrinsics_to_pose_encoding(relative_to_first(s.extrinsics)) for s in scenes])
    return {
        "images": torch.tensor(np.stack([s.images for s in scenes]), dtype=torch.float32, device=device),
        "pose_enc": torch.tensor(enc, dtype=torch.float32, device=device),
        "depth": torch.tensor(np.stack([s.depth for s in scenes]), dtype=torch.float32, device=device),
    }


def load_sequence(path: Path, *, n_frames: int, img_size: tuple[int, int]) -> Scene4D:
    """One user sequence (module docstring's format) as a :class:`Scene4D` with cameras relative to frame 0.

    Invalid depth (``<= 0``) is set to the smallest valid depth so the scene validates; those pixels keep their
    place in the image (they are a minor share in well-formed data).

    Raises:
        ValueError: naming the file and the problem: a missing key, a wrong frame count or image size, NaN/inf,
            no valid depth, or an unreadable file.
    """
    try:
        loaded = np.load(path, allow_pickle=False)
        if not isinstance(loaded, np.lib.npyio.NpzFile):
            raise ValueError("a single array, not an archive of named arrays")
        with loaded as z:
            arrays = {k: np.asarray(z[k]) for k in z.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:  # EOFError: an empty file
        raise ValueError(f"{path}: not a readable .npz file ({type(err).__name__}: {err})") from None
    if not arrays:
        raise ValueError(f"{path}: holds no arrays; need {list(REQUIRED_KEYS)}")
    missing = [k for k in REQUIRED_KEYS if k not in arrays]
    if missing:
        raise ValueError(f"{path}: missing keys {missing}; need {list(REQUIRED_KEYS)}")
    img = arrays["images"]
    if img.ndim != 4 or 3 not in (img.shape[1], img.shape[3]):
        raise ValueError(f"{path}: images must be (S, H, W, 3) or (S, 3, H, W), got {img.shape}")
    if img.shape[1] != 3:
        img = img.transpose(0, 3, 1, 2)
    img = img.astype(np.float32) / 255.0 if img.dtype == np.uint8 else img.astype(np.float32)
    s = img.shape[0]
    if s != n_frames:
        raise ValueError(f"{path}: {s} frames, the model is configured for n_frames={n_frames}")
    if tuple(img.shape[2:]) != tuple(img_size):
        raise ValueError(f"{path}: images are {img.shape[2:]}, need {tuple(img_size)} (img_size)")
    if not np.all(np.isfinite(img)):
        raise ValueError(f"{path}: images contain NaN or inf values")
    depth = arrays["depths"].astype(np.float32)
    if not np.all(np.isfinite(depth)):
        raise ValueError(f"{path}: depths contain NaN or inf values")
    if not np.any(depth > 0):
        raise ValueError(f"{path}: depths hold no valid (> 0) pixel")
    depth = np.where(depth > 0, depth, depth[depth > 0].min())
    extrinsics = arrays["extrinsics"].astype(np.float64)
    if extrinsics.ndim == 3 and extrinsics.shape[1:] == (4, 4):
        if not np.allclose(extrinsics[:, 3], [0.0, 0.0, 0.0, 1.0]):
            raise ValueError(f"{path}: extrinsics (S, 4, 4) must have the last row [0, 0, 0, 1]")
        extrinsics = extrinsics[:, :3]
    try:
        scene = Scene4D(images=img, depth=depth, extrinsics=extrinsics,
                        intrinsics=arrays["intrinsics"].astype(np.float64),
                        dynamic_mask=arrays["dynamic_mask"].astype(bool))  # fmt: skip
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None
    return Scene4D(scene.images, scene.depth, relative_to_first(scene.extrinsics), scene.intrinsics,
                   scene.dynamic_mask)  # fmt: skip


def load_sequences(path: Path, *, n_frames: int, img_size: tuple[int, int]) -> list[Scene4D]:
    """Every ``*.npz`` in the folder ``path`` (sorted by name), or the single file ``path``.

    Raises:
        ValueError: if the path does not exist, holds no ``.npz``, or a file is malformed (see
            :func:`load_sequence`).
    """
    path = Path(path)
    if not path.exists():
        raise ValueError(f"{path} does not exist")
    files = sorted(path.glob("*.npz")) if path.is_dir() else [path]
    if not files:
        raise ValueError(f"{path} holds no .npz files")
    return [load_sequence(f, n_frames=n_frames, img_size=img_size) for f in files]
