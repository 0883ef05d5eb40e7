"""A small ANN teacher and its spiking twin (same architecture, LIF instead of ReLU) for MEOM distillation.

Many Eyes, One Mind (MEOM), ICLR 2026, OpenReview NbdEDRRsCI. The paper distils an ANN (ResNet) into an SNN
(ResNet-19 / ResNet-34 / a spiking transformer) with direct input coding: the static image is fed at every one of
T timesteps and the SNN emits one logit vector per timestep. The TMPD loss needs the teacher split into a feature
extractor and a classifier head (the same author's SeAl code, ``model/ResNet_ANN.py``, has ``forward_from_layer4``:
global average pooling + fc applied to the last conv feature map), so :class:`ConvTeacher` exposes
``features(x)`` and ``head``.

Architecture (both nets): ``widths = (c1, c2, c3)``; conv3x3(c1)-BN-act, conv3x3(c2)-BN-act, avgpool 2x2,
conv3x3(c3)-BN-act, then the head: global average pool + linear. ``act`` is ReLU (teacher) or LIF (student).

Shapes: T timesteps, B batch, C classes, D channels of the last feature map, H x W its spatial size,
``I`` input channels, ``S x S`` input size.

Deviations: a 3-conv net instead of ResNet-19/34 (CPU budget; 8x8 inputs).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

from iclr26.meom.lif import LIF


def repeat_input(x: Tensor, timesteps: int) -> Tensor:
    """Direct (repeated) input coding: the same static input at every timestep.

    Args:
        x: a batch of inputs, shape (B, *).
        timesteps: T >= 1.

    Returns:
        (T, B, *), a broadcast view of ``x``.

    Raises:
        ValueError: if ``timesteps`` < 1.
    """
    if timesteps < 1:
        raise ValueError(f"timesteps: need at least 1 timestep, got {timesteps}")
    # direct coding, as the TWD code: the static input repeated T times, a view (no copy)
    return x.unsqueeze(0).expand(timesteps, *x.shape)


class ClassifierHead(nn.Module):
    """Global average pooling + a linear layer: (N, D, H, W) feature maps -> (N, C) logits."""

    def __init__(self, channels: int, num_classes: int) -> None:
        super().__init__()
        self.fc = nn.Linear(channels, num_classes)

    @property
    def num_classes(self) -> int:
        """C, the number of output classes."""
        return self.fc.out_features

    def forward(self, features: Tensor) -> Tensor:
        """Logits (N, C) for feature maps (N, D, H, W)."""
        # W_c = avgpool + fc; TMPD masks its input f^A, the last conv map (inferred from the author's SeAl code)
        return self.fc(features.mean(dim=(-2, -1)))


def _conv_bn(c_in: int, c_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out))


def _check_widths(widths: tuple[int, int, int]) -> None:
    if len(widths) != 3 or any(w < 1 for w in widths):
        raise ValueError(f"widths: expected three positive channel counts, got {widths}")


class ConvTeacher(nn.Module):
    """The ANN teacher: a conv trunk (``features``) and a :class:`ClassifierHead` (``head``).

    Args:
        in_channels: I.
        num_classes: C.
        widths: channel counts of the three conv layers.
    """

    def __init__(self, in_channels: int, num_classes: int, *, widths: tuple[int, int, int] = (16, 32, 64)) -> None:
        super().__init__()
        _check_widths(widths)
        c1, c2, c3 = widths
        self.trunk = nn.Sequential(
            _conv_bn(in_channels, c1), nn.ReLU(),
            _conv_bn(c1, c2), nn.ReLU(), nn.AvgPool2d(2),
            _conv_bn(c2, c3), nn.ReLU(),
        )  # fmt: skip
        self.head = ClassifierHead(c3, num_classes)

    def features(self, x: Tensor) -> Tensor:
        """f^A: the last conv feature map (B, D, H, W) of inputs (B, I, S, S)."""
        return self.trunk(x)

    def forward(self, x: Tensor) -> Tensor:
        """z^A = head(f^A): logits (B, C)."""
        return self.head(self.features(x))


class _TimeFlattened(nn.Module):
    """Apply a per-sample module to (T, B, *) by folding T into the batch: (T*B, *) -> module -> (T, B, *)."""

    def __init__(self, module: nn.Module) -> None:
        super().__init__()
        self.module = module

    def forward(self, x: Tensor) -> Tensor:
        t, b = x.shape[:2]
        y = self.module(x.reshape(t * b, *x.shape[2:]))  # (T*B, ...)
        return y.reshape(t, b, *y.shape[1:])  # (T, B, ...)


class SpikingConvNet(nn.Module):
    """The SNN student: the teacher's architecture with LIF neurons, emitting per-timestep logits (T, B, C).

    Conv and BatchNorm act on all timesteps at once (BN statistics over T*B, as spikingjelly's multi-step mode);
    each LIF layer integrates over time. The head reads the spikes of the last layer at every timestep.

    Args:
        in_channels: I.
        num_classes: C.
        timesteps: T, the number of timesteps the static input is repeated for.
        widths: channel counts of the three conv layers.
        make_lif: factory for the spiking nonlinearity (default: :class:`LIF` with the TWD settings).
    """

    def __init__(
        self,
        in_channels: int,
        num_classes: int,
        *,
        timesteps: int,
        widths: tuple[int, int, int] = (16, 32, 64),
        make_lif: Callable[[], nn.Module] = LIF,
    ) -> None:
        super().__init__()
        _check_widths(widths)
        if timesteps < 1:
            raise ValueError(f"timesteps: need at least 1 timestep, got {timesteps}")
        self.timesteps = timesteps
        c1, c2, c3 = widths
        self.trunk = nn.Sequential(
            _TimeFlattened(_conv_bn(in_channels, c1)), make_lif(),
            _TimeFlattened(_conv_bn(c1, c2)), make_lif(), _TimeFlattened(nn.AvgPool2d(2)),
            _TimeFlattened(_conv_bn(c2, c3)), make_lif(),
        )  # fmt: skip
        self.head = _TimeFlattened(ClassifierHead(c3, num_classes))

    def features(self, x: Tensor) -> Tensor:
        """Spike maps of the last layer, (T, B, D, H, W), for static inputs (B, I, S, S)."""
        return self.trunk(repeat_input(x, self.timesteps))

    def forward(self, x: Tensor) -> Tensor:
        """Per-timestep logits z^S_t, shape (T, B, C), for static inputs (B, I, S, S)."""
        return self.head(self.features(x))


@torch.no_grad()
def predict_logits(model: nn.Module, x: Tensor, *, batch_size: int = 512) -> Tensor:
    """Run ``model`` in eval mode over ``x`` in batches and concatenate along the batch axis.

    Returns:
        Teacher logits (N, C) or student logits (T, N, C); the batch axis is the one of length N.
    """
    was_training = model.training
    model.eval()
    outs = [model(x[i : i + batch_size]) for i in range(0, len(x), batch_size)]
    model.train(was_training)
    return torch.cat(outs, dim=outs[0].dim() - 2)
