"""Evaluation: a sprite-identity classifier trained on clean sprites, and the three metrics built on it.

The paper's ID-Sim is the cosine similarity of face-recognition embeddings; here the embedding is the classifier's
penultimate feature map e(window), and each identity k has a prototype e_k (the mean embedding of its clean sprite
on random backgrounds). With cos_k(window) = cos(e(window), e_k):

- **ID similarity**: for subject i of identity k, the mean over generated frames of max over windows of cos_k.
- **ID similarity at the prompted place**: the mean over generated frames of cos_k at the window where the prompt
  puts subject i (a generator that pastes the reference canvas shows the identity, but not there).
- **Subject swap** (two-subject clips): at the prompted positions p_A, p_B of every frame,
  swapped  <=>  sum_f [cos_B(p_A) + cos_A(p_B)] > sum_f [cos_A(p_A) + cos_B(p_B)].
- **Copy-paste score**: the share of frames in which subject i's most similar window is within one pixel of where
  its reference sat in the condition frame (a model that pastes the canvas scores high); the same share for the
  ground-truth clips is its chance level.
- **Placed**: the share of (subject, frame) whose prompted window is classified as that subject.

The classifier is fully convolutional with a receptive field of exactly one sprite (S x S), so one pass embeds
every window of a frame; class N_IDENTITIES is "no sprite aligned here".

Dimension letters: B batch, C colour channels, F frames, H/W pixels, S sprite size, P = H - S + 1 positions.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from iclr26.magref.data import N_IDENTITIES, background, paste, sprite


class IdentityClassifier(nn.Module):
    """Window classifier: ``(B, C, H, W)`` -> ``(B, N_IDENTITIES + 1, H-S+1, W-S+1)`` logits (valid convs).

    Args:
        sprite_size: S; the receptive field is S x S (S >= 4).
        width: hidden channels.
    """

    def __init__(self, *, sprite_size: int, width: int = 48) -> None:
        super().__init__()
        if sprite_size < 4:
            raise ValueError(f"sprite_size: need >= 4, got {sprite_size}")
        k3 = sprite_size - 3  # receptive field 3 + 2 + (S - 4) + ... = S
        self.net = nn.Sequential(
            nn.Conv2d(3, width, 3),
            nn.ReLU(),
            nn.Conv2d(width, width, 2),
            nn.ReLU(),
            nn.Conv2d(width, width, k3),
            nn.ReLU(),
            nn.Conv2d(width, N_IDENTITIES + 1, 1),
        )

    def features(self, frames: torch.Tensor) -> torch.Tensor:
        """The embedding e per window: ``(B, C, H, W)`` -> ``(B, width, P, P)``."""
        return self.net[:-1](frames)

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        """Logits per window position."""
        return self.net(frames)


def _classifier_batch(n: int, size: int, sprite_size: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Windows of S x S: half hold an aligned sprite (its label), half background or a misaligned sprite (no-sprite)."""
    s = sprite_size
    size = 3 * s  # room for a misaligned sprite around the window at (S, S)
    table = [sprite(k, s) for k in range(N_IDENTITIES)]
    sprites = torch.stack([t[0] for t in table])  # (K, C, S, S)
    masks = torch.stack([t[1] for t in table])  # (K, S, S)
    frames = background(size, gen, n)  # (B, C, 3S, 3S)
    ks = torch.randint(N_IDENTITIES, (n,), generator=gen)
    gain = 1 + 0.15 * (2 * torch.rand(n, 1, 1, 1, generator=gen) - 1)  # as the pipeline's re-rendering
    spr = ((sprites[ks] + 1) / 2 * gain).clamp(0, 1) * 2 - 1
    aligned = torch.arange(n) % 2 == 0
    shifted = torch.rand(n, generator=gen) < 0.5  # negatives: half plain background, half a misaligned sprite
    off = torch.randint(2, 4, (n, 2), generator=gen) * torch.where(torch.rand(n, 2, generator=gen) < 0.5, -1, 1)
    off[:, 1] = torch.where(torch.rand(n, generator=gen) < 0.3, torch.zeros_like(off[:, 1]), off[:, 1])
    labels = torch.where(aligned, ks, torch.full_like(ks, N_IDENTITIES))
    for i in range(n):
        if aligned[i]:
            paste(frames[i], spr[i], masks[ks[i]], s, s)
        elif shifted[i]:
            paste(frames[i], spr[i], masks[ks[i]], s + int(off[i, 0]), s + int(off[i, 1]))
    return frames[:, :, s : 2 * s, s : 2 * s], labels


def train_classifier(
    *, sprite_size: int, size: int, steps: int, batch_size: int, gen: torch.Generator, lr: float = 3e-3
) -> tuple[IdentityClassifier, float, torch.Tensor]:
    """Train the window classifier on clean sprites.

    Returns:
        The classifier, its accuracy on 512 fresh windows, and the prototypes ``(N_IDENTITIES, width)``: the mean
        embedding of each identity's aligned sprite over 16 random backgrounds.
    """
    clf = IdentityClassifier(sprite_size=sprite_size)
    opt = torch.optim.Adam(clf.parameters(), lr=lr)
    for _ in range(steps):
        x, y = _classifier_batch(batch_size, size, sprite_size, gen)
        loss = F.cross_entropy(clf(x)[:, :, 0, 0], y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    x, y = _classifier_batch(512, size, sprite_size, gen)
    with torch.no_grad():
        acc = float((clf(x)[:, :, 0, 0].argmax(1) == y).float().mean())
        protos = torch.zeros(N_IDENTITIES, clf.net[-1].in_channels)
        counts = torch.zeros(N_IDENTITIES, 1)
        while counts.min() < 16:
            x, y = _classifier_batch(2 * N_IDENTITIES * 4, size, sprite_size, gen)
            keep = y < N_IDENTITIES
            e = clf.features(x[keep])[:, :, 0, 0]
            protos.index_add_(0, y[keep], e)
            counts.index_add_(0, y[keep], torch.ones(int(keep.sum()), 1))
    return clf, acc, protos / counts


@dataclass(frozen=True)
class ClipScores:
    """Per-item scores of a set of clips.

    Attributes:
        id_sim: per item, the mean over its subjects of the ID similarity.
        swapped: per two-subject item, 1.0 if swapped else 0.0 (None for one-subject items).
        copy_paste: per item, the mean over subjects of the copy-paste share.
        placed: per item, the share of (subject, frame) whose prompted window is classified as that subject.
        id_at_place: per item, the mean over subjects and frames of cos_k at the subject's prompted window.
    """

    id_sim: list[float]
    swapped: list[float | None]
    copy_paste: list[float]
    placed: list[float]
    id_at_place: list[float]


@torch.no_grad()
def score_clips(
    clf: IdentityClassifier,
    prototypes: torch.Tensor,
    clips: torch.Tensor,
    identities: list[tuple[int, ...]],
    positions: torch.Tensor,
    ref_pos: torch.Tensor,
) -> ClipScores:
    """Score ``clips`` ``(B, C, F', H, W)`` whose subjects are ``identities`` at ``positions`` ``(B, N, F', 2)``.

    ``prototypes`` ``(K, width)``: the identities' embeddings. ``ref_pos`` ``(B, N, 2)``: where each reference sat
    in the condition frame.
    """
    b, c, f, h, w = clips.shape
    e = clf.features(clips.permute(0, 2, 1, 3, 4).reshape(b * f, c, h, w).clamp(-1, 1))  # (BF', D, P, P)
    e = F.normalize(e, dim=1, eps=1e-8)
    protos = F.normalize(prototypes, dim=1, eps=1e-8)
    cos = torch.einsum("ndyx,kd->nkyx", e, protos)  # (BF', K, P, P)
    cos = cos.reshape(b, f, *cos.shape[1:])
    pw = cos.shape[-1]
    id_sim, swapped, cps, placed, at_place = [], [], [], [], []
    fr = torch.arange(f)
    for i, ids in enumerate(identities):
        sims, cp, pl, ap = [], [], [], []
        for j, k in enumerate(ids):
            ck = cos[i, :, k]  # (F', P, P)
            # ID-Sim stand-in: the best cosine to subject k's prototype anywhere in the frame, averaged over frames
            sims.append(float(ck.flatten(1).amax(1).mean()))
            ap.append(float(ck[fr, positions[i, j, :, 0].long(), positions[i, j, :, 1].long()].mean()))
            arg = ck.flatten(1).argmax(1)
            ay, ax = arg // pw, arg % pw
            ry, rx = ref_pos[i, j]
            # copy-paste: share of frames where the subject is found where its reference sat in the condition frame
            cp.append(float((((ay - ry).abs() <= 1) & ((ax - rx).abs() <= 1)).float().mean()))
            py, px = positions[i, j, :, 0].long(), positions[i, j, :, 1].long()
            pl.append(float((cos[i, fr, :, py, px].argmax(1) == k).float().mean()))
        id_sim.append(sum(sims) / len(sims))
        cps.append(sum(cp) / len(cp))
        placed.append(sum(pl) / len(pl))
        at_place.append(sum(ap) / len(ap))
        if len(ids) == 2:
            a, bb = ids
            pa, pb = positions[i, 0].long(), positions[i, 1].long()
            at_a = cos[i, fr, :, pa[:, 0], pa[:, 1]]  # (F', K)
            at_b = cos[i, fr, :, pb[:, 0], pb[:, 1]]
            correct = float(at_a[:, a].sum() + at_b[:, bb].sum())
            swap = float(at_a[:, bb].sum() + at_b[:, a].sum())
            # a swap: summed over frames, the two prompted places match the exchanged subjects better than their own
            swapped.append(1.0 if swap > correct else 0.0)
        else:
            swapped.append(None)
    return ClipScores(id_sim, swapped, cps, placed, at_place)
