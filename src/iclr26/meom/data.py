"""Data for the MEOM reproduction: scikit-learn's bundled 8x8 digits, made harder by occlusion and noise.

The paper trains on CIFAR-10/100 and ImageNet, which cannot be downloaded here. The 1,797 bundled digit images
(``sklearn.datasets.load_digits``, shipped inside scikit-learn) are scaled to [0, 1], a random k x k square of each
image is blanked and Gaussian noise is added, once, from a fixed seed, so that accuracies sit well below 100% and
teacher, TWD and MEOM students can be told apart. The split is stratified and fixed by ``data_seed``.

Shapes: N images, 1 channel, 8 x 8 pixels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor


@dataclass(frozen=True)
class DigitsSplit:
    """A fixed train/test split of the corrupted digits.

    Attributes:
        x_train: (N_train, 1, 8, 8) float32 images.
        y_train: (N_train,) int64 labels in 0..9.
        x_test: (N_test, 1, 8, 8) float32 images.
        y_test: (N_test,) int64 labels.
    """

    x_train: Tensor
    y_train: Tensor
    x_test: Tensor
    y_test: Tensor

    @property
    def num_classes(self) -> int:
        """C = 10."""
        return 10

    def to(self, device: torch.device | str) -> DigitsSplit:
        """The same split with every tensor on ``device`` (the tensors themselves when they are already there)."""
        return DigitsSplit(
            x_train=self.x_train.to(device),
            y_train=self.y_train.to(device),
            x_test=self.x_test.to(device),
            y_test=self.y_test.to(device),
        )


def corrupt_images(images: np.ndarray, *, occlusion: int, noise_std: float, rng: np.random.Generator) -> np.ndarray:
    """Blank one random ``occlusion x occlusion`` square per image, then add N(0, noise_std^2) noise.

    Args:
        images: (N, S, S) images with values in [0, 1].
        occlusion: side k of the blanked square, 0 <= k <= S (0: no occlusion).
        noise_std: standard deviation of the additive Gaussian noise, >= 0.
        rng: the random source.

    Returns:
        Corrupted images (N, S, S), float32 (not clipped: the noise is part of the input).

    Raises:
        ValueError: for images that are not (N, S, S) or an occlusion larger than the image.
    """
    if images.ndim != 3 or images.shape[1] != images.shape[2]:
        raise ValueError(f"images: expected square images of shape (N, S, S), got {images.shape}")
    n, size = images.shape[0], images.shape[1]
    if not 0 <= occlusion <= size:
        raise ValueError(f"occlusion: the square side must lie in [0, {size}], got {occlusion}")
    if noise_std < 0:
        raise ValueError(f"noise_std: must be non-negative, got {noise_std}")
    out = images.astype(np.float32).copy()
    if occlusion > 0:
        rows = rng.integers(0, size - occlusion + 1, size=n)
        cols = rng.integers(0, size - occlusion + 1, size=n)
        for i in range(n):
            out[i, rows[i] : rows[i] + occlusion, cols[i] : cols[i] + occlusion] = 0.0
    out += rng.normal(0.0, noise_std, size=out.shape).astype(np.float32)
    return out


def stratified_counts(class_sizes: np.ndarray, total: int) -> np.ndarray:
    """Per-class sample counts proportional to ``class_sizes`` that sum to exactly ``total``.

    Largest-remainder rounding: every class gets floor(total * n_c / n), and the classes with the largest
    fractional parts get one more until the counts add up to ``total``.

    Args:
        class_sizes: n_c, shape (K,), non-negative integers.
        total: the number of samples to allocate, 0 <= total <= sum(class_sizes).

    Returns:
        Counts of shape (K,), each at most its class size, summing to ``total``.

    Raises:
        ValueError: if ``total`` is outside [0, sum(class_sizes)].
    """
    n = int(class_sizes.sum())
    if not 0 <= total <= n:
        raise ValueError(f"total: must lie in [0, {n}] (the number of samples), got {total}")
    quota = total * class_sizes / n  # (K,)
    counts = np.floor(quota).astype(np.int64)
    # the classes with the largest remainders take the samples that flooring left over (stable order on ties)
    extra = np.argsort(-(quota - counts), kind="stable")[: total - int(counts.sum())]
    counts[extra] += 1
    return counts


def load_corrupted_digits(*, n_test: int, occlusion: int, noise_std: float, data_seed: int) -> DigitsSplit:
    """The bundled digits, corrupted by :func:`corrupt_images` and split (stratified) into train and test.

    Args:
        n_test: number of test images, exactly (the rest, 1797 - n_test, are for training).
        occlusion: side of the blanked square (pixels).
        noise_std: additive noise standard deviation (pixel scale [0, 1]).
        data_seed: seed of the corruption and the split.

    Returns:
        :class:`DigitsSplit`.

    Raises:
        ValueError: if ``n_test`` leaves fewer than 10 training or test images.
    """
    from sklearn.datasets import load_digits  # bundled with scikit-learn (extra "data"), read offline

    digits = load_digits()
    images = digits.images / 16.0  # (1797, 8, 8) in [0, 1]
    labels = digits.target.astype(np.int64)
    n = len(labels)
    if not 10 <= n_test <= n - 10:
        raise ValueError(f"n_test: must leave at least 10 images on each side of the split of {n}, got {n_test}")
    rng = np.random.default_rng(data_seed)
    corrupted = corrupt_images(images, occlusion=occlusion, noise_std=noise_std, rng=rng)
    # stratified split: each class gives its share of the test set, by a fixed permutation within the class
    test_idx = []
    for c, k in enumerate(stratified_counts(np.bincount(labels, minlength=10), n_test)):
        idx = rng.permutation(np.flatnonzero(labels == c))
        test_idx.append(idx[:k])
    test = np.sort(np.concatenate(test_idx))
    train = np.setdiff1d(np.arange(n), test)
    x = torch.from_numpy(corrupted).unsqueeze(1)  # (N, 1, 8, 8)
    y = torch.from_numpy(labels)
    return DigitsSplit(x_train=x[train], y_train=y[train], x_test=x[test], y_test=y[test])


def training_subset(split: DigitsSplit, n_train: int, seed: int) -> DigitsSplit:
    """``split`` with a stratified random ``n_train`` of its training images (the test images unchanged).

    Args:
        split: a train/test split.
        n_train: training images to keep, exactly (per class by :func:`stratified_counts`); all of them keep the
            split as it is.
        seed: seed of the draw within each class.

    Raises:
        ValueError: if ``n_train`` is not in [1, len(split.y_train)].
    """
    labels = split.y_train.cpu().numpy()
    if not 1 <= n_train <= len(labels):
        raise ValueError(f"n_train: must lie in [1, {len(labels)}] (the training images), got {n_train}")
    if n_train == len(labels):
        return split
    rng = np.random.default_rng(seed)
    counts = stratified_counts(np.bincount(labels, minlength=split.num_classes), n_train)
    keep = np.sort(np.concatenate([rng.permutation(np.flatnonzero(labels == c))[:k] for c, k in enumerate(counts)]))
    idx = torch.from_numpy(keep).to(split.y_train.device)
    return DigitsSplit(x_train=split.x_train[idx], y_train=split.y_train[idx], x_test=split.x_test, y_test=split.y_test)
