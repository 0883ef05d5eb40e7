"""Images with class-label prompts for the NextStep-1 reproduction.

Two sources, both read into an :class:`ImageSet` of grey images in [0, 1]:

- scikit-learn's bundled 8x8 digits (``sklearn.datasets.load_digits``, 1,797 images, read offline), optionally
  upsampled (bilinear) to a larger side;
- a user's data (``--set data=PATH``): a folder with one sub-folder per class holding ``.png`` images (converted to
  grey) or ``.npy`` 2-D arrays, or an ``.npz`` file with ``images`` ``(M, S, S)`` and integer ``labels`` ``(M,)``.
  Pixel values are scaled to [0, 1] by the largest value (PNG: by 255).

Prompts: ``[<prompt>, <class k>, <boi>]`` with ids ``prompt = K + 2``, ``k`` in ``0..K-1``, ``null = K`` (the
unconditional prompt of classifier-free guidance), ``boi = K + 1``: vocabulary ``V = K + 3``.

Glossary: ``M`` images, ``S`` side, ``K`` classes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

IMAGE_SUFFIXES = (".png", ".npy")


@dataclass(frozen=True)
class ImageSet:
    """Labelled grey images.

    Attributes:
        images: ``(M, 1, S, S)`` float32 in [0, 1].
        labels: ``(M,)`` int64 in ``0..K-1``.
        class_names: the K class names (sub-folder names, or the label values).
    """

    images: Tensor
    labels: Tensor
    class_names: tuple[str, ...]

    @property
    def num_classes(self) -> int:
        """K."""
        return len(self.class_names)

    @property
    def side(self) -> int:
        """S."""
        return int(self.images.shape[-1])


def check_images(images: np.ndarray, labels: np.ndarray, *, name: str = "images") -> None:
    """Raise ValueError naming ``name`` unless ``images`` is a finite ``(M, S, S)`` stack with matching labels."""
    if images.ndim != 3 or images.shape[1] != images.shape[2]:
        raise ValueError(f"{name}: expected square grey images of shape (M, S, S), got {images.shape}")
    if images.shape[0] == 0:
        raise ValueError(f"{name}: no images")
    if not np.isfinite(images).all():
        raise ValueError(f"{name}: holds NaN or infinite pixels")
    if labels.shape != (images.shape[0],):
        raise ValueError(f"{name}: {images.shape[0]} images but labels of shape {labels.shape}")


def _to_set(images: np.ndarray, labels: np.ndarray, class_names: tuple[str, ...], side: int | None) -> ImageSet:
    x = torch.from_numpy(images.astype(np.float32)).unsqueeze(1)  # (M, 1, S, S)
    if side is not None and side != x.shape[-1]:
        x = F.interpolate(x, size=(side, side), mode="bilinear", align_corners=False).clamp(0.0, 1.0)
    return ImageSet(images=x, labels=torch.from_numpy(labels.astype(np.int64)), class_names=class_names)


def load_digits_set(*, side: int = 8) -> ImageSet:
    """The bundled 8x8 digits scaled to [0, 1] (``pixel / 16``), bilinearly resized to ``side``."""
    from sklearn.datasets import load_digits  # bundled with scikit-learn (extra "data"), read offline

    digits = load_digits()
    return _to_set(digits.images / 16.0, digits.target, tuple(str(k) for k in range(10)), side)


def _read_image(path: Path) -> np.ndarray:
    if path.suffix == ".npy":
        return np.asarray(np.load(path, allow_pickle=False), dtype=np.float64)
    from PIL import Image

    with Image.open(path) as im:
        return np.asarray(im.convert("L"), dtype=np.float64) / 255.0


def resize(image: np.ndarray, side: int) -> np.ndarray:
    """A square grey image ``(S, S)`` resized to ``(side, side)`` as :func:`load_digits_set` resizes (bilinear)."""
    x = torch.from_numpy(image.astype(np.float32))[None, None]
    return F.interpolate(x, size=(side, side), mode="bilinear", align_corners=False)[0, 0].numpy().astype(np.float64)


def load_user_images(path: Path, *, side: int | None = None) -> ImageSet:
    """A user's labelled images (see the module docstring for the formats).

    Args:
        path: a class-folder tree or an ``.npz`` file.
        side: resize to this side (None: keep).

    Raises:
        ValueError: for a missing path, an empty folder or file, unreadable files, non-square images (or images of
            several sizes without ``side``), NaN pixels, fewer than two classes; the message says what to fix.
    """
    path = Path(path)
    if not path.exists():
        raise ValueError(f"{path} does not exist")
    if path.is_file():
        if path.suffix != ".npz":
            raise ValueError(f"{path} is a file; give a folder of class sub-folders or an .npz file")
        try:
            with np.load(path, allow_pickle=False) as z:
                images, labels = np.asarray(z["images"], dtype=np.float64), np.asarray(z["labels"])
        except (OSError, ValueError, KeyError, EOFError) as err:  # EOFError: an empty or truncated file
            raise ValueError(f"{path}: cannot read arrays 'images' and 'labels' ({err or 'empty file'})") from None
        if not np.issubdtype(labels.dtype, np.integer):
            raise ValueError(f"{path}: labels must be integers, got dtype {labels.dtype}")
        check_images(images, labels, name=str(path))
        classes, labels = np.unique(labels, return_inverse=True)
        names = tuple(str(c) for c in classes)
    else:
        class_dirs = sorted(p for p in path.iterdir() if p.is_dir())
        files = [(k, f) for k, d in enumerate(class_dirs) for f in sorted(d.iterdir()) if f.suffix in IMAGE_SUFFIXES]
        if not files:
            raise ValueError(f"{path} holds no images: put .png or .npy files in one sub-folder per class")
        arrays = []
        for _, f in files:
            try:
                arrays.append(_read_image(f))
            except Exception as err:  # noqa: BLE001 - any decoding failure is the user's file, reported by name
                raise ValueError(f"cannot read image {f}: {err}") from None
        shapes = {a.shape for a in arrays}
        if len(shapes) != 1:
            odd = sorted(s for s in shapes if len(s) != 2 or s[0] != s[1])
            if side is None or odd:
                raise ValueError(
                    f"{path}: images differ in shape {sorted(shapes)}; give square images (any sizes are resized "
                    f"to image_side) or images of one size"
                )
            arrays = [resize(a, side) for a in arrays]  # each to the side the run resizes to anyway
        images = np.stack(arrays)
        labels = np.array([k for k, _ in files])
        check_images(images, labels, name=str(path))
        peak = images.max()
        if peak > 1.0:
            images = images / peak
        used = np.unique(labels)
        names = tuple(class_dirs[k].name for k in used)
        labels = np.searchsorted(used, labels)
    if images.min() < 0:
        raise ValueError(f"{path}: negative pixel values; give intensities in [0, 1] or [0, 255]")
    if len(names) < 2:
        raise ValueError(f"{path}: found {len(names)} class; class-conditional generation needs at least two")
    return _to_set(np.clip(images, 0.0, 1.0), labels, names, side)


@dataclass(frozen=True)
class Split:
    """A stratified train/test split of an :class:`ImageSet`.

    Attributes:
        train: images the tokenizer, classifier and AR models are trained on.
        test: held-out real images (the reference of the Fréchet distance, the classifier's test set).
    """

    train: ImageSet
    test: ImageSet


def split_set(data: ImageSet, *, test_fraction: float, seed: int) -> Split:
    """Stratified split: each class gives ``round(test_fraction * n_k)`` (at least 1) images to the test part.

    Raises:
        ValueError: if a class has fewer than two images or ``test_fraction`` is outside (0, 1).
    """
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must lie in (0, 1), got {test_fraction}")
    rng = np.random.default_rng(seed)
    labels = data.labels.numpy()
    test = []
    for k in range(data.num_classes):
        idx = np.flatnonzero(labels == k)
        if len(idx) < 2:
            raise ValueError(f"class {data.class_names[k]!r} has {len(idx)} image(s); a split needs at least 2")
        n_test = min(len(idx) - 1, max(1, round(test_fraction * len(idx))))
        test.append(rng.permutation(idx)[:n_test])
    test_idx = np.sort(np.concatenate(test))
    train_idx = np.setdiff1d(np.arange(len(labels)), test_idx)

    def part(ix: np.ndarray) -> ImageSet:
        t = torch.from_numpy(ix)
        return ImageSet(images=data.images[t], labels=data.labels[t], class_names=data.class_names)

    return Split(train=part(train_idx), test=part(test_idx))


def prompt_ids(labels: Tensor, num_classes: int, *, null: bool = False) -> Tensor:
    """``(M, 3)`` prompts ``[<prompt>, <class>, <boi>]``; ``null=True`` puts the null class id ``K`` instead."""
    cls = torch.full_like(labels, num_classes) if null else labels
    prefix = torch.full_like(labels, num_classes + 2)
    boi = torch.full_like(labels, num_classes + 1)
    return torch.stack([prefix, cls, boi], dim=1)
