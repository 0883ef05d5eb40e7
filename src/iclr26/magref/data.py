"""A synthetic sprite world, MAGREF's four-stage data pipeline in miniature, and the official prompt-file format.

Subjects are sprites whose identity is shape x colour x texture; they move over a static textured background. A
prompt names each subject by its three attribute words plus where it starts and where it moves; the clip has
F = s(T-1)+1 frames (frame 0 is the scene's first frame; the generated clip is frames 1..F-1).

The four stages (paper §3.3; their models replaced by the world's ground truth, as the data are synthetic):

1. Captioning (Qwen2.5-VL): the prompt tokens from the clip's true attributes, starts and motions.
2. Subject cut-outs (GroundingDINO + SAM2): each subject is cut out, with its segmentation mask, from a frame *other
   than the target's* (a source frame with both subjects at fresh positions), so copying the reference's position
   is not rewarded.
3. Filtering (InsightFace quality filter): cut-outs less than ``min_visible`` visible (occluded by the other
   subject in the source frame) are rejected and drawn again.
4. Cross-pairing augmentation (generative re-rendering): the cut-out's brightness is jittered, so the reference is
   never a pixel copy of the subject in the clip.

Dimension letters: B batch, N subject slots, C colour channels, F frames, H/W pixels, S sprite size, J prompt tokens.
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

COLOURS = ("red", "green", "blue", "yellow")
TEXTURES = ("solid", "striped", "checked")
SHAPES = ("square", "disk", "diamond", "cross")
STARTS = ("topleft", "topright", "bottomleft", "bottomright")
MOTIONS = ("right", "left", "down", "up")
#: token ids: 0 is padding, then every word once
VOCAB = ("<pad>", *COLOURS, *TEXTURES, *SHAPES, *STARTS, *MOTIONS)
WORD_ID = {w: i for i, w in enumerate(VOCAB)}
ROLES = 5  # colour, texture, shape, start, motion
IDENTITY_ROLES = 3  # the subject's own words (colour, texture, shape)
N_IDENTITIES = len(SHAPES) * len(COLOURS) * len(TEXTURES)
_RGB = {"red": (0.9, 0.15, 0.15), "green": (0.15, 0.8, 0.2), "blue": (0.2, 0.3, 0.95), "yellow": (0.95, 0.85, 0.1)}
_STEP = {"right": (0, 1), "left": (0, -1), "down": (1, 0), "up": (-1, 0)}
_INWARD = {
    "topleft": ("right", "down"),
    "topright": ("left", "down"),
    "bottomleft": ("right", "up"),
    "bottomright": ("left", "up"),
}


def identity_id(shape: int, colour: int, texture: int) -> int:
    """Index of the identity (shape, colour, texture) in 0..47."""
    return (shape * len(COLOURS) + colour) * len(TEXTURES) + texture


def identity_attrs(k: int) -> tuple[int, int, int]:
    """(shape, colour, texture) of identity ``k`` (inverse of :func:`identity_id`)."""
    return k // (len(COLOURS) * len(TEXTURES)), (k // len(TEXTURES)) % len(COLOURS), k % len(TEXTURES)


def sprite(k: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Identity ``k`` as an RGB sprite in [-1, 1] and its shape mask: ``(3, S, S)``, ``(S, S)``."""
    shape, colour, texture = identity_attrs(k)
    c = (size - 1) / 2
    yy, xx = torch.meshgrid(torch.arange(size) - c, torch.arange(size) - c, indexing="ij")
    r = size / 2
    masks = (
        torch.ones(size, size, dtype=torch.bool),
        yy**2 + xx**2 <= (r + 0.2) ** 2 * 0.82,
        yy.abs() + xx.abs() <= r - 0.5,
        (yy.abs() <= size / 6 + 0.5) | (xx.abs() <= size / 6 + 0.5),
    )
    m = masks[shape].float()
    iy, ix = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    shade = (torch.ones(size, size), torch.where(iy % 2 == 0, 1.0, 0.5), torch.where((iy + ix) % 2 == 0, 1.0, 0.5))
    rgb = torch.tensor(_RGB[COLOURS[colour]])[:, None, None] * shade[texture][None]
    return rgb * 2 - 1, m


def background(size: int, gen: torch.Generator, n: int | None = None) -> torch.Tensor:
    """A static textured background ``(3, H, W)`` (or ``(n, 3, H, W)``) in [-1, 1]: a muted tint, an oriented wave
    and fine noise."""
    b = 1 if n is None else n
    tint = 0.3 + 0.3 * torch.rand(b, 3, 1, 1, generator=gen)
    yy, xx = torch.meshgrid(torch.arange(size).float(), torch.arange(size).float(), indexing="ij")
    r = torch.rand(b, 3, generator=gen)
    ang, freq, ph = r[:, 0] * np.pi, 0.4 + 0.8 * r[:, 1], 6.28 * r[:, 2]
    arg = freq[:, None, None] * (torch.cos(ang)[:, None, None] * xx + torch.sin(ang)[:, None, None] * yy)
    wave = 0.08 * torch.sin(arg + ph[:, None, None])  # (b, H, W)
    noise = 0.03 * torch.randn(b, 3, size, size, generator=gen)
    out = (tint + wave[:, None] + noise).clamp(0, 1) * 2 - 1
    return out[0] if n is None else out


def paste(frame: torch.Tensor, spr: torch.Tensor, mask: torch.Tensor, y: int, x: int) -> None:
    """Paste ``spr`` with ``mask`` onto ``frame`` (C, H, W) at top-left (y, x), in place."""
    s = spr.shape[-1]
    region = frame[:, y : y + s, x : x + s]
    frame[:, y : y + s, x : x + s] = region * (1 - mask) + spr * mask


@dataclass(frozen=True)
class Item:
    """One training/evaluation example (stages 1-4 applied).

    Attributes:
        video: ``(3, F, H, W)`` the target clip in [-1, 1].
        identities: the subjects' identity ids, prompt order (1 or 2).
        tokens: ``(J,)`` prompt token ids (J = 2 slots x 5 roles; 0 = padding).
        positions: ``(N, F, 2)`` each subject's top-left (y, x) per frame.
        references: N cut-outs ``(3, S, S)`` (stage 2 + 4).
        ref_masks: N segmentation masks ``(S, S)``.
    """

    video: torch.Tensor
    identities: tuple[int, ...]
    tokens: torch.Tensor
    positions: torch.Tensor
    references: tuple[torch.Tensor, ...]
    ref_masks: tuple[torch.Tensor, ...]


def tokens_for(subjects: list[tuple[int, str, str]], max_subjects: int = 2) -> torch.Tensor:
    """Stage 1 (captioning): ``[colour, texture, shape, start, motion]`` per subject, padded to ``max_subjects``."""
    ids = []
    for k, start, motion in subjects:
        shape, colour, texture = identity_attrs(k)
        ids += [
            WORD_ID[COLOURS[colour]],
            WORD_ID[TEXTURES[texture]],
            WORD_ID[SHAPES[shape]],
            WORD_ID[start],
            WORD_ID[motion],
        ]
    ids += [0] * (ROLES * (max_subjects - len(subjects)))
    return torch.tensor(ids, dtype=torch.long)


def confusable_partner(k: int, gen: torch.Generator) -> int:
    """An identity sharing exactly two of ``k``'s three attributes (one attribute, drawn at random, differs)."""
    attrs = list(identity_attrs(k))
    which = int(torch.randint(3, (1,), generator=gen))
    sizes = (len(SHAPES), len(COLOURS), len(TEXTURES))
    attrs[which] = (attrs[which] + 1 + int(torch.randint(sizes[which] - 1, (1,), generator=gen))) % sizes[which]
    return identity_id(*attrs)


def make_item(
    gen: torch.Generator,
    *,
    size: int,
    sprite_size: int,
    n_frames: int,
    n_subjects: int,
    confusable: bool,
    min_visible: float = 0.7,
    jitter: float = 0.15,
) -> Item:
    """Draw a clip and run the four pipeline stages on it (module docstring).

    Raises:
        ValueError: if the sprites and motion do not fit the frame, or ``n_subjects`` is not 1 or 2.
    """
    if n_subjects not in (1, 2):
        raise ValueError(f"n_subjects: the world holds 1 or 2 subjects, got {n_subjects}")
    travel = n_frames - 1
    if sprite_size + 2 + travel > size:
        raise ValueError(f"size: {size} px cannot hold a {sprite_size} px sprite moving {travel} px")
    ids = [int(torch.randint(N_IDENTITIES, (1,), generator=gen))]
    if n_subjects == 2:
        if confusable:
            ids.append(confusable_partner(ids[0], gen))
        else:
            ids.append(int((ids[0] + 1 + torch.randint(N_IDENTITIES - 1, (1,), generator=gen)) % N_IDENTITIES))
    far = size - sprite_size - 1
    corner = {"topleft": (1, 1), "topright": (1, far), "bottomleft": (far, 1), "bottomright": (far, far)}
    while True:  # subjects in different corners whose paths never overlap
        starts = [STARTS[i] for i in torch.randperm(4, generator=gen)[:n_subjects].tolist()]
        motions = [_INWARD[s][int(torch.randint(2, (1,), generator=gen))] for s in starts]
        pos = torch.stack(
            [
                torch.tensor(
                    [[corner[s][0] + _STEP[m][0] * f, corner[s][1] + _STEP[m][1] * f] for f in range(n_frames)]
                )
                for s, m in zip(starts, motions, strict=True)
            ]
        )  # (N, F, 2)
        if n_subjects == 1 or (pos[0] - pos[1]).abs().amax(dim=1).min() >= sprite_size:
            break
    bg = background(size, gen)
    video = bg[:, None].repeat(1, n_frames, 1, 1)
    sprites = [sprite(k, sprite_size) for k in ids]
    for f in range(n_frames):
        for (spr, m), p in zip(sprites, pos, strict=True):
            paste(video[:, f], spr, m, int(p[f, 0]), int(p[f, 1]))
    refs, rmasks = [], []
    for i, (spr, m) in enumerate(sprites):
        while True:  # stage 2: a source frame outside the clip, subjects at fresh positions; stage 3: filter
            src = (torch.randint(size - sprite_size + 1, (len(ids), 2), generator=gen)).tolist()
            visible = m.clone()
            for j in range(i + 1, len(ids)):  # later subjects are drawn on top
                dy, dx = src[j][0] - src[i][0], src[j][1] - src[i][1]
                occl = torch.zeros_like(m)
                oy0, ox0 = max(dy, 0), max(dx, 0)
                oy1, ox1 = min(sprite_size + dy, sprite_size), min(sprite_size + dx, sprite_size)
                if oy0 < oy1 and ox0 < ox1:
                    occl[oy0:oy1, ox0:ox1] = sprites[j][1][oy0 - dy : oy1 - dy, ox0 - dx : ox1 - dx]
                visible = visible * (1 - occl)
            if visible.sum() >= min_visible * m.sum():
                break
        # stage 4: cross-pairing augmentation (brightness re-rendering)
        gain = 1 + jitter * (2 * torch.rand(1, generator=gen).item() - 1)
        refs.append((((spr + 1) / 2 * gain).clamp(0, 1) * 2 - 1) * visible + (1 - visible))
        rmasks.append(visible)
    toks = tokens_for([(k, s, mo) for k, s, mo in zip(ids, starts, motions, strict=True)])
    return Item(video, tuple(ids), toks, pos, tuple(refs), tuple(rmasks))


@dataclass(frozen=True)
class PromptItem:
    """One line of the official prompt file: ``key@@prompt@@ref1@@ref2...``.

    Attributes:
        key: the output name.
        prompt: the text prompt.
        images: the references as ``(3, h, w)`` tensors in [-1, 1] (RGBA composited on white, as the official code).
        paths: the reference files.
        dropped: references of the line beyond the ones kept (``max_references``), in file order.
    """

    key: str
    prompt: str
    images: tuple[torch.Tensor, ...]
    paths: tuple[Path, ...]
    dropped: tuple[str, ...] = ()


def load_prompt_file(path: Path | str, *, max_references: int = 8) -> list[PromptItem]:
    """Read MAGREF's official prompt file (``generate.py --prompt_path``; e.g. ``assets/multi_id.txt``).

    Each non-empty line is ``key@@prompt@@image_1@@...@@image_n``. A relative image path is looked up in the file's
    folder, then in each folder above it (the official files hold paths relative to the repository root, the folder
    above ``assets/``), then in the current folder. A line with more than ``max_references`` references keeps the
    first ``max_references`` (the layout's slots, in prompt order) with a warning; the rest are in
    :attr:`PromptItem.dropped`.

    Raises:
        ValueError: naming the line for a line with fewer than two fields, no references, an empty prompt or key, a
            duplicate key, a missing or unreadable image (of the references kept), or an empty file.
        OSError: if the file cannot be read.
    """
    path = Path(path)
    items: list[PromptItem] = []
    seen: set[str] = set()
    for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        parts = [p.strip() for p in line.strip().split("@@")]
        if len(parts) < 2:
            raise ValueError(f"{path}:{no}: expected key@@prompt@@image..., got {line[:60]!r}")
        key, prompt, refs = parts[0], parts[1], [p for p in parts[2:] if p]
        if not key or not prompt:
            raise ValueError(f"{path}:{no}: empty key or prompt")
        if key in seen:
            raise ValueError(f"{path}:{no}: duplicate key {key!r}")
        seen.add(key)
        if not refs:
            raise ValueError(f"{path}:{no}: no reference images (MAGREF needs at least one)")
        if len(refs) > max_references:
            warnings.warn(
                f"{path}:{no}: {len(refs)} references, the layout holds {max_references}; using the first "
                f"{max_references}",
                stacklevel=2,
            )
        kept = [_reference(path, no, ref) for ref in refs[:max_references]]
        images = tuple(image for image, _ in kept)
        items.append(PromptItem(key, prompt, images, tuple(f for _, f in kept), tuple(refs[max_references:])))
    if not items:
        raise ValueError(f"{path}: no prompt lines")
    return items


def _reference(path: Path, no: int, ref: str) -> tuple[torch.Tensor, Path]:
    """Line ``no``'s reference ``ref`` found (see :func:`load_prompt_file`) and read as ``(3, h, w)`` in [-1, 1]."""
    from PIL import Image, UnidentifiedImageError

    p = Path(ref)
    folders = [path.parent, *path.parent.resolve().parents, Path.cwd()]
    found = p if p.is_absolute() and p.is_file() else next((f / p for f in folders if (f / p).is_file()), None)
    if found is None:
        raise ValueError(f"{path}:{no}: reference image {ref!r} not found (looked in {path.parent} and above)")
    try:
        with Image.open(found) as im:
            im.load()
            if im.mode == "RGBA":  # composited on white, as the official resize_and_pad
                white = Image.new("RGB", im.size, (255, 255, 255))
                white.paste(im, mask=im.split()[3])
                im = white
            arr = np.asarray(im.convert("RGB"), dtype=np.float32) / 127.5 - 1.0
    except (UnidentifiedImageError, OSError) as err:
        raise ValueError(f"{path}:{no}: cannot read reference image {ref!r}: {err}") from None
    return torch.from_numpy(arr).permute(2, 0, 1).contiguous(), found


def prompt_tokens(prompt: str, max_subjects: int = 2) -> torch.Tensor:
    """Map a free-text prompt onto the world's vocabulary: subjects are read in order as runs of attribute words.

    Words outside the vocabulary are ignored; a new subject starts when an attribute role repeats. Used only to
    condition the tiny model on user prompts (``data=``), which it was not trained on. A prompt with none of the
    world's words gives only padding, which the model cannot represent (:func:`representable`).
    """
    subjects: list[list[int]] = []
    cur = [0] * ROLES
    groups = (COLOURS, TEXTURES, SHAPES, STARTS, MOTIONS)
    for raw in prompt.lower().replace(",", " ").replace(".", " ").split():
        for role, words in enumerate(groups):
            if raw in words:
                if cur[role] and role < IDENTITY_ROLES:
                    subjects.append(cur)
                    cur = [0] * ROLES
                cur[role] = WORD_ID[raw]
    if any(cur):
        subjects.append(cur)
    flat = list(itertools.chain.from_iterable(subjects[:max_subjects]))
    return torch.tensor(flat + [0] * (ROLES * max_subjects - len(flat)), dtype=torch.long)


def representable(tokens: torch.Tensor) -> bool:
    """Whether the prompt tokens hold at least one word (all padding masks out every key of the text attention)."""
    return bool((tokens != 0).any())
