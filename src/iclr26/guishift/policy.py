"""The policy: a small CNN over both screens with one head per action field.

GUI-Shift, ICLR 2026, arXiv 2505.12493. The paper's policy is a 7B vision-language model that writes the action as
JSON text; here a CNN trained from scratch reads ``(S_t, S_{t+K})`` (or the current and the goal screen) and
factorises the action as

    π(a | S_t, S_{t+K}) = π(type) · π(param | type),

with ``param`` a grid cell for click (the point is the cell's centre), a direction for scroll, an app for open_app,
a text token for input_text, and nothing for navigate_back. ``log π(a)`` is the sum of the two log-probabilities, the
per-sample log-prob that GRPO's ratio uses (one "token" per action).

Architecture (input ``(B, 9, H, W)``: both screens and their difference, scaled to [0, 1] / [-1, 1]):
three 3x3 convolutions (the last two with stride 2) to a ``(B, C, G, G)`` map when ``cell = 4``; a click logit per
cell from a 1x1 convolution over the map and the global feature; type, direction, app and text logits from a linear
layer over the flattened map.

Shape glossary: ``B`` batch, ``H = W`` pixels, ``G`` grid cells a side, ``C`` channels, ``S`` samples per item.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from iclr26.guishift.env import ACTION_TYPES, DIRECTIONS, app_name, text_name

__all__ = ["ActionDist", "GUIPolicy", "SampledActions", "decode_actions", "encode_label", "screens_to_tensor"]

_TYPE = {t: i for i, t in enumerate(ACTION_TYPES)}
_DIR = {d: i for i, d in enumerate(DIRECTIONS)}


def screens_to_tensor(before: np.ndarray, after: np.ndarray, device: torch.device | str = "cpu") -> Tensor:
    """``(B, H, W, 3)`` uint8 screens → ``(B, 9, H, W)`` float on ``device``: before, after, after − before (the
    uint8 screens are moved first, so a GPU does the conversion)."""
    b = torch.from_numpy(np.ascontiguousarray(before)).to(device).permute(0, 3, 1, 2).float() / 255.0
    a = torch.from_numpy(np.ascontiguousarray(after)).to(device).permute(0, 3, 1, 2).float() / 255.0
    return torch.cat([b, a, a - b], dim=1)  # the two screenshots channel-concatenated, plus their difference


@dataclass(frozen=True)
class ActionDist:
    """Log-probabilities of every head, ``(B, ·)`` each."""

    type: Tensor  # (B, 5)
    click: Tensor  # (B, G*G)
    direction: Tensor  # (B, 4)
    app: Tensor  # (B, n_apps)
    text: Tensor  # (B, n_text)

    def heads(self) -> tuple[Tensor, ...]:
        """The parameter heads indexed by action type (navigate_back has none: ``None``)."""
        return (self.click, self.direction, None, self.app, self.text)  # type: ignore[return-value]


@dataclass(frozen=True)
class SampledActions:
    """``S`` actions per item as indices: ``type`` and ``param`` ``(B, S)`` (``param`` 0 for navigate_back)."""

    type: Tensor
    param: Tensor


class GUIPolicy(nn.Module):
    """The CNN policy (module docstring).

    Args:
        size: image side ``H = W``.
        cell: click grid cell side (the map after two stride-2 convolutions has ``size // 4`` cells a side, so
            ``cell`` must be 4).
        n_apps: open_app targets.
        n_text: input_text tokens.
        channels: convolution width ``C``.
        hidden: width of the global feature.
    """

    def __init__(self, *, size: int, cell: int = 4, n_apps: int, n_text: int, channels: int = 32, hidden: int = 128):
        super().__init__()
        if cell != 4 or size % 4:
            raise ValueError(f"cell must be 4 and size a multiple of 4, got size={size}, cell={cell}")
        for name, v in (("n_apps", n_apps), ("n_text", n_text), ("channels", channels), ("hidden", hidden)):
            if v < 1:
                raise ValueError(f"{name} must be >= 1, got {v}")
        self.size, self.cell, self.grid = size, cell, size // cell
        self.n_apps, self.n_text = n_apps, n_text
        self.conv = nn.Sequential(
            nn.Conv2d(9, channels // 2, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(channels // 2, channels, 3, stride=2, padding=1),
            nn.ReLU(),
            nn.Conv2d(channels, channels, 3, stride=2, padding=1),
            nn.ReLU(),
        )
        self.glob = nn.Linear(channels * self.grid * self.grid, hidden)
        self.to_map = nn.Linear(hidden, channels)
        self.click_head = nn.Conv2d(2 * channels, 1, 1)
        self.type_head = nn.Linear(hidden, len(ACTION_TYPES))
        self.direction_head = nn.Linear(hidden, len(DIRECTIONS))
        self.app_head = nn.Linear(hidden, n_apps)
        self.text_head = nn.Linear(hidden, n_text)

    def forward(self, x: Tensor) -> ActionDist:
        """``(B, 9, H, W)`` → :class:`ActionDist` (log-softmax of every head)."""
        if x.ndim != 4 or x.shape[1] != 9 or x.shape[2] != self.size or x.shape[3] != self.size:
            raise ValueError(f"x must have shape (B, 9, {self.size}, {self.size}), got {tuple(x.shape)}")
        fmap = self.conv(x)  # (B, C, G, G)
        g = F.relu(self.glob(fmap.flatten(1)))  # (B, hidden)
        gmap = self.to_map(g)[:, :, None, None].expand(-1, -1, self.grid, self.grid)  # (B, C, G, G)
        click = self.click_head(torch.cat([fmap, gmap], dim=1)).flatten(1)  # (B, G*G)
        return ActionDist(
            F.log_softmax(self.type_head(g), -1),
            F.log_softmax(click, -1),
            F.log_softmax(self.direction_head(g), -1),
            F.log_softmax(self.app_head(g), -1),
            F.log_softmax(self.text_head(g), -1),
        )

    def sample(self, dist: ActionDist, n: int, generator: torch.Generator | None = None) -> SampledActions:
        """``n`` actions per item drawn from ``dist`` (type first, then its parameter)."""
        b = dist.type.shape[0]
        # GRPO's G rollouts per item: an action type, then the parameter from that type's head
        types = torch.multinomial(dist.type.exp(), n, replacement=True, generator=generator)  # (B, S)
        param = torch.zeros_like(types)
        for t, head in enumerate(dist.heads()):
            if head is None:
                continue
            draws = torch.multinomial(head.exp(), n, replacement=True, generator=generator)  # (B, S)
            param = torch.where(types == t, draws, param)
        assert param.shape == (b, n)
        return SampledActions(types, param)

    @staticmethod
    def greedy(dist: ActionDist) -> SampledActions:
        """The most likely type and, given it, the most likely parameter: ``(B, 1)`` each."""
        types = dist.type.argmax(-1, keepdim=True)
        param = torch.zeros_like(types)
        for t, head in enumerate(dist.heads()):
            if head is not None:
                param = torch.where(types == t, head.argmax(-1, keepdim=True), param)
        return SampledActions(types, param)

    @staticmethod
    def log_prob(dist: ActionDist, actions: SampledActions) -> Tensor:
        """``log π(a) = log π(type) + log π(param | type)``, ``(B, S)``."""
        # log π(a) = log π(type) + log π(param | type): the per-action log-prob of GRPO's ratio
        lp = dist.type.gather(1, actions.type)
        for t, head in enumerate(dist.heads()):
            if head is None:
                continue
            safe = actions.param.clamp(max=head.shape[1] - 1)
            lp = lp + torch.where(actions.type == t, head.gather(1, safe), torch.zeros_like(lp))
        return lp


def decode_actions(actions: SampledActions, *, cell: int, grid: int) -> list[list[dict[str, Any]]]:
    """Index actions → official-schema dicts, ``[B][S]``; a click is the centre pixel of its cell."""
    out = []
    types, params = actions.type.tolist(), actions.param.tolist()
    for trow, prow in zip(types, params, strict=True):
        row = []
        for t, p in zip(trow, prow, strict=True):
            kind = ACTION_TYPES[t]
            if kind == "click":
                r, c = divmod(p, grid)
                row.append({"action_type": "click", "x": c * cell + cell // 2, "y": r * cell + cell // 2})
            elif kind == "scroll":
                row.append({"action_type": "scroll", "direction": DIRECTIONS[p]})
            elif kind == "open_app":
                row.append({"action_type": "open_app", "app_name": app_name(p)})
            elif kind == "input_text":
                row.append({"action_type": "input_text", "text": text_name(p)})
            else:
                row.append({"action_type": "navigate_back"})
        out.append(row)
    return out


def encode_label(action: dict[str, Any], *, cell: int, grid: int) -> tuple[int, int]:
    """A ground-truth action → ``(type index, param index)`` for supervised training; a click's param is the cell
    of its exact point ``(x, y)`` (not of the bbox)."""
    kind = action["action_type"]
    t = _TYPE[kind]
    if kind == "click":
        c = min(int(action["x"]) // cell, grid - 1)
        r = min(int(action["y"]) // cell, grid - 1)
        return t, r * grid + c
    if kind == "scroll":
        return t, _DIR[action["direction"]]
    if kind == "open_app":
        return t, int(action["app_name"].removeprefix("app"))
    if kind == "input_text":
        return t, int(action["text"].removeprefix("t"))
    return t, 0
