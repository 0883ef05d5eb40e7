"""Sample metrics: class faithfulness, a Fréchet distance on classifier features, within-class diversity.

The paper reports GenEval, DPG-Bench and FID, which need hub weights. Here a small MLP classifier is trained on the
real training images (:func:`train_classifier`); its accuracy on samples labelled by their prompt is the
*faithfulness*, and the Fréchet distance between Gaussian fits of its hidden features on samples and on held-out
real images stands in for FID (Heusel et al. 2017):

    FD = ||mu_a - mu_b||^2 + tr(S_a + S_b - 2 (S_a S_b)^{1/2})

Glossary: ``M`` images, ``F`` feature width, ``K`` classes.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn


class DigitClassifier(nn.Module):
    """MLP ``image -> ReLU(W1 x) -> ReLU(W2 .) =: features -> logits``.

    Shapes:
        ``features(x: (M, 1, S, S)) -> (M, F)``; ``forward(x) -> (M, K)``.
    """

    def __init__(self, side: int, num_classes: int, *, hidden: int = 64) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Flatten(), nn.Linear(side * side, 2 * hidden), nn.ReLU(), nn.Linear(2 * hidden, hidden), nn.ReLU()
        )
        self.out = nn.Linear(hidden, num_classes)

    def features(self, x: Tensor) -> Tensor:
        """Hidden features ``(M, F)``."""
        return self.body(x)

    def forward(self, x: Tensor) -> Tensor:
        return self.out(self.body(x))


def train_classifier(
    images: Tensor, labels: Tensor, num_classes: int, *, steps: int = 1500, generator: torch.Generator
) -> DigitClassifier:
    """Adam on cross-entropy, batches of 128, light pixel noise (std 0.05) as augmentation; returned in eval mode."""
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    clf = DigitClassifier(images.shape[-1], num_classes).to(images.device)
    opt = torch.optim.Adam(clf.parameters(), lr=2e-3, weight_decay=1e-4)
    for _ in range(steps):
        idx = torch.randint(0, images.shape[0], (min(128, images.shape[0]),), generator=generator)
        x = images[idx] + 0.05 * torch.randn(images[idx].shape, generator=generator).to(images.device)
        loss = F.cross_entropy(clf(x), labels[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return clf.eval()


@torch.no_grad()
def faithfulness(clf: DigitClassifier, images: Tensor, prompted: Tensor) -> float:
    """Share of images the classifier assigns to the class they were prompted with, in [0, 1]."""
    if images.shape[0] != prompted.shape[0]:
        raise ValueError(f"images ({images.shape[0]}) and prompted labels ({prompted.shape[0]}) differ in count")
    return float((clf(images).argmax(-1) == prompted).double().mean())


def frechet_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Fréchet distance between Gaussian fits of feature sets ``a: (M_a, F)`` and ``b: (M_b, F)``.

    Raises:
        ValueError: for mismatched widths, fewer than 2 rows, or non-finite features.
    """
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise ValueError(f"a and b must be (M, F) with one F, got {a.shape} and {b.shape}")
    if min(a.shape[0], b.shape[0]) < 2:
        raise ValueError("a and b need at least 2 rows each")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("features hold non-finite values")
    a, b = a.astype(np.float64), b.astype(np.float64)
    mu_a, mu_b = a.mean(0), b.mean(0)
    s_a, s_b = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    # tr (S_a S_b)^{1/2} = tr (S_a^{1/2} S_b S_a^{1/2})^{1/2}: a symmetric PSD form, stable for singular S
    w, u = np.linalg.eigh(s_a)
    half_a = (u * np.sqrt(np.clip(w, 0.0, None))) @ u.T
    tr_covmean = np.sqrt(np.clip(np.linalg.eigvalsh(half_a @ s_b @ half_a), 0.0, None)).sum()
    # FD = ||mu_a - mu_b||^2 + tr(S_a + S_b - 2 (S_a S_b)^{1/2})
    fd = float(((mu_a - mu_b) ** 2).sum() + np.trace(s_a) + np.trace(s_b) - 2.0 * tr_covmean)
    return max(fd, 0.0)


def within_class_diversity(images: Tensor, labels: Tensor) -> float:
    """Mean over classes of the mean pairwise Euclidean pixel distance between images of one class.

    Classes with fewer than two images are skipped; 0 if none has two.
    """
    flat = images.reshape(images.shape[0], -1).double()
    per_class = []
    for k in labels.unique():
        x = flat[labels == k]
        if x.shape[0] < 2:
            continue
        # within-class diversity: a mode-averaging head (the regression baseline) collapses it
        d = torch.cdist(x, x)  # (m, m)
        m = x.shape[0]
        per_class.append(float(d.sum() / (m * (m - 1))))
    return float(np.mean(per_class)) if per_class else 0.0
