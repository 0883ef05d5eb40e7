"""Leaky integrate-and-fire (LIF) neurons with a sigmoid surrogate gradient, multi-step over T timesteps.

Many Eyes, One Mind (MEOM), ICLR 2026, OpenReview NbdEDRRsCI. MEOM's students are spiking networks of LIF neurons
trained by backpropagation through time with a surrogate gradient. The official MEOM code could not be read; its
code base is shared with the TWD repository (Intelli-Chip-Lab/snn_temporal_decoupling_distillation,
``model/layer.py``), whose ``LIFLayer`` is spikingjelly's ``LIFNode`` with ``decay_input=False``, a hard reset to
``v_reset = 0``, threshold 1, leak factor ``sigmoid(logit(0.5)) = 0.5`` and spikingjelly's default
``surrogate.Sigmoid(alpha=4)``. This file re-derives that neuron in plain torch (no spikingjelly dependency).

Difference equations, for t = 1..T with V_0 = V_reset (hard reset) or 0 (soft reset):

1. charge:  H_t = V_reset + beta * (V_{t-1} - V_reset) + X_t        (soft reset: H_t = beta * V_{t-1} + X_t)
2. fire:    S_t = Theta(H_t - V_th)                                   (Theta(0) = 1, as spikingjelly's heaviside)
3. reset:   V_t = H_t * (1 - S_t) + V_reset * S_t                     (soft reset: V_t = H_t - V_th * S_t)

Backward: dS/dH = alpha * sigmoid(alpha * (H - V_th)) * (1 - sigmoid(alpha * (H - V_th))).

Fast path, the TWD neuron's case V_reset = 0: H_t = beta V_{t-1} + X_t, and fire and reset are one autograd
node (:class:`FireAndReset`): S_t = Theta(H_t - V_th), V_t = H_t (1 - S_t), whose backward is written out,

    dL/dH = g_S S' + g_V ((1 - S) - H S')      (S' = dS/dH, the surrogate; detach_reset drops the - H S' term),

so each timestep records two autograd nodes instead of eight. The membrane is stacked only when asked for
(``membrane=True``). ``benchmarks/meom_lif.py`` times the layer against snntorch's ``Leaky``.

Shapes: T timesteps, B batch, ``*`` any trailing neuron dimensions.

Deviations: none from the TWD neuron; spikingjelly's CUDA/cupy backends are not reproduced (pure torch loop).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn


class SigmoidSurrogateSpike(torch.autograd.Function):
    """Heaviside step forward, derivative of ``sigmoid(alpha * x)`` backward (spikingjelly ``surrogate.Sigmoid``)."""

    @staticmethod
    def forward(ctx, x: Tensor, alpha: float) -> Tensor:  # type: ignore[override]
        ctx.save_for_backward(x)
        ctx.alpha = alpha
        # S = Theta(x), with Theta(0) = 1
        return (x >= 0).to(x.dtype)

    @staticmethod
    def backward(ctx, grad_output: Tensor) -> tuple[Tensor, None]:  # type: ignore[override]
        (x,) = ctx.saved_tensors
        sig = torch.sigmoid(ctx.alpha * x)
        # dS/dx ~= alpha * sigmoid(alpha x) * (1 - sigmoid(alpha x))
        return grad_output * ctx.alpha * sig * (1.0 - sig), None


def spike(x: Tensor, *, alpha: float = 4.0) -> Tensor:
    """Spikes ``Theta(x)`` with the sigmoid surrogate gradient of sharpness ``alpha``.

    Args:
        x: membrane potential minus threshold, any shape.
        alpha: surrogate sharpness (spikingjelly default 4).

    Returns:
        A tensor of 0/1 values shaped like ``x``.
    """
    return SigmoidSurrogateSpike.apply(x, alpha)


class FireAndReset(torch.autograd.Function):
    """S = Theta(H - V_th) and the hard reset to 0, V = H (1 - S), as one node with the surrogate of :func:`spike`.

    Backward (S' = alpha sigmoid(alpha (H - V_th)) (1 - sigmoid(alpha (H - V_th)))):
    dL/dH = g_S S' + g_V ((1 - S) - H S'), or g_S S' + g_V (1 - S) with ``detach_reset``.
    """

    @staticmethod
    def forward(ctx, h: Tensor, v_threshold: float, alpha: float, detach_reset: bool) -> tuple[Tensor, Tensor]:  # type: ignore[override]
        fired = h >= v_threshold  # Theta(0) = 1
        ctx.save_for_backward(h, fired)
        ctx.v_threshold, ctx.alpha, ctx.detach_reset = v_threshold, alpha, detach_reset
        # V = H (1 - S) = H where the neuron did not fire, 0 where it did
        return fired.to(h.dtype), h.masked_fill(fired, 0.0)

    @staticmethod
    def backward(ctx, grad_s: Tensor, grad_v: Tensor) -> tuple[Tensor | None, None, None, None]:  # type: ignore[override]
        h, fired = ctx.saved_tensors
        # S' = alpha sig (1 - sig), sig = sigmoid(alpha (H - V_th)); in place on fresh buffers (large layers are
        # bound by memory traffic and allocation, not arithmetic)
        sig = (h - ctx.v_threshold).mul_(ctx.alpha).sigmoid_()
        sg = sig.mul_(torch.rsub(sig, 1.0)).mul_(ctx.alpha)
        # g_S S' - g_V H S' (without the reset term when it is detached)
        through_spike = (grad_s if ctx.detach_reset else torch.addcmul(grad_s, grad_v, h, value=-1.0)).mul(sg)
        # + g_V (1 - S), the gradient through the kept membrane
        return through_spike.add_(grad_v.masked_fill(fired, 0.0)), None, None, None


class LIFSequence(torch.autograd.Function):
    """The whole hard-reset-to-0 sequence as one autograd node: spikes ``(T, B, *)`` from currents ``(T, B, *)``.

    Forward, for t = 1..T (V_0 = 0): H_t = X_t + beta V_{t-1}, S_t = Theta(H_t - V_th), V_t = H_t (1 - S_t), with the
    same torch operations as :class:`FireAndReset` per step, written into preallocated ``(T, B, *)`` buffers (no
    autograd graph per step, no stack). Backward, t = T..1, with g_V(T) = 0 and g_V(t-1) = beta dL/dH_t:

        dL/dX_t = dL/dH_t = g_S S'_t + g_V(t) ((1 - S_t) - H_t S'_t)    (detach_reset: without the - H_t S'_t term)

    in the operation order of :class:`FireAndReset`'s backward and of autograd's ``add(alpha=beta)``, so values and
    gradients equal the per-step path's bit for bit (tested).
    """

    @staticmethod
    def forward(ctx, x: Tensor, decay: float, v_threshold: float, alpha: float, detach_reset: bool) -> Tensor:  # type: ignore[override]
        h_all = torch.empty_like(x)
        spikes = torch.empty_like(x)
        fired_all = torch.empty(x.shape, dtype=torch.bool, device=x.device)
        v = None
        for t in range(x.shape[0]):
            h = h_all[t]
            if v is None:
                h.copy_(x[t])
            else:
                torch.add(x[t], v, alpha=decay, out=h)
            fired = torch.ge(h, v_threshold, out=fired_all[t])  # Theta(0) = 1
            spikes[t].copy_(fired)
            v = h.masked_fill(fired, 0.0)  # V = H (1 - S)
        ctx.save_for_backward(h_all, fired_all)
        ctx.decay, ctx.v_threshold, ctx.alpha, ctx.detach_reset = decay, v_threshold, alpha, detach_reset
        return spikes

    @staticmethod
    def backward(ctx, grad_s_all: Tensor) -> tuple[Tensor, None, None, None, None]:  # type: ignore[override]
        h_all, fired_all = ctx.saved_tensors
        grad_x = torch.empty_like(h_all)
        grad_v = None  # dL/dV_t, zero after the last step
        for t in range(h_all.shape[0] - 1, -1, -1):
            h, fired, grad_s = h_all[t], fired_all[t], grad_s_all[t]
            sig = (h - ctx.v_threshold).mul_(ctx.alpha).sigmoid_()
            sg = sig.mul_(torch.rsub(sig, 1.0)).mul_(ctx.alpha)  # S'
            if grad_v is None:
                torch.mul(grad_s, sg, out=grad_x[t])  # g_V = 0: the per-step path's zero terms add exactly
            else:
                through_spike = grad_s if ctx.detach_reset else torch.addcmul(grad_s, grad_v, h, value=-1.0)
                torch.mul(through_spike, sg, out=grad_x[t]).add_(grad_v.masked_fill_(fired, 0.0))
            if t > 0:
                grad_v = grad_x[t] * ctx.decay  # through H_t = X_t + beta V_{t-1}
        return grad_x, None, None, None, None


@dataclass(frozen=True)
class LIFTrace:
    """The output of :func:`lif_multistep`.

    Attributes:
        spikes: S_t, shape (T, B, *), values 0/1.
        membrane: V_t after the reset of step t, shape (T, B, *); ``None`` unless ``membrane=True`` was passed.
    """

    spikes: Tensor
    membrane: Tensor | None


def lif_multistep(
    x: Tensor,
    *,
    decay: float = 0.5,
    v_threshold: float = 1.0,
    v_reset: float | None = 0.0,
    alpha: float = 4.0,
    detach_reset: bool = False,
    membrane: bool = False,
) -> LIFTrace:
    """Run LIF neurons over the leading time axis of ``x`` from rest.

    Args:
        x: input currents X_t, shape (T, B, *).
        decay: leak factor beta in (0, 1]; spikingjelly's ``1 - 1/tau`` (TWD default 0.5, i.e. tau = 2).
        v_threshold: firing threshold V_th > V_reset.
        v_reset: reset potential for a hard reset, or ``None`` for a soft reset (subtract V_th).
        alpha: surrogate-gradient sharpness.
        detach_reset: stop the gradient through S_t in the reset step (spikingjelly ``detach_reset``).
        membrane: also return the post-reset membrane potentials (costs one (T, B, *) tensor).

    Returns:
        :class:`LIFTrace` with spikes and, if ``membrane``, the post-reset membrane potentials, both (T, B, *).

    Raises:
        ValueError: if ``x`` has fewer than 2 dimensions, ``decay`` is outside (0, 1], ``alpha`` is not positive or
            ``v_threshold`` is not above ``v_reset``.
    """
    if x.dim() < 2:
        raise ValueError(f"x: expected shape (T, B, ...), got {tuple(x.shape)}")
    if not 0.0 < decay <= 1.0:
        raise ValueError(f"decay: the leak factor must lie in (0, 1], got {decay}")
    if alpha <= 0:
        raise ValueError(f"alpha: surrogate sharpness must be positive, got {alpha}")
    if v_reset is not None and v_threshold <= v_reset:
        raise ValueError(f"v_threshold: must exceed v_reset={v_reset}, got {v_threshold}")
    spikes, potentials = [], []
    if v_reset == 0.0 and not membrane and x.is_floating_point():
        # fast path without the membrane: the whole sequence as one node
        return LIFTrace(spikes=LIFSequence.apply(x, decay, v_threshold, alpha, detach_reset), membrane=None)
    if v_reset == 0.0:
        # fast path: H_t = beta V_{t-1} + X_t (V_0 = 0, so H_1 = X_1); S_t, V_t = FireAndReset(H_t)
        v = None
        for x_t in x:
            h = x_t if v is None else torch.add(x_t, v, alpha=decay)
            s, v = FireAndReset.apply(h, v_threshold, alpha, detach_reset)
            spikes.append(s)
            if membrane:
                potentials.append(v)
        return LIFTrace(spikes=torch.stack(spikes), membrane=torch.stack(potentials) if membrane else None)
    v = torch.full_like(x[0], 0.0 if v_reset is None else v_reset)
    for x_t in x:
        if v_reset is None:
            # H_t = beta V_{t-1} + X_t
            h = decay * v + x_t
        else:
            # H_t = V_reset + beta (V_{t-1} - V_reset) + X_t
            h = v_reset + decay * (v - v_reset) + x_t
        # S_t = Theta(H_t - V_th)
        s = spike(h - v_threshold, alpha=alpha)
        s_reset = s.detach() if detach_reset else s
        if v_reset is None:
            # V_t = H_t - V_th S_t
            v = h - v_threshold * s_reset
        else:
            # V_t = H_t (1 - S_t) + V_reset S_t
            v = h * (1.0 - s_reset) + v_reset * s_reset
        spikes.append(s)
        if membrane:
            potentials.append(v)
    return LIFTrace(spikes=torch.stack(spikes), membrane=torch.stack(potentials) if membrane else None)


class LIF(nn.Module):
    """A layer of LIF neurons, multi-step: (T, B, *) currents in, (T, B, *) spikes out (state reset per call).

    H_t = V_reset + beta (V_{t-1} - V_reset) + X_t;  S_t = Theta(H_t - V_th);  V_t = H_t (1 - S_t) + V_reset S_t.

    Args:
        decay: leak factor beta (TWD code: 0.5).
        v_threshold: firing threshold (TWD code: 1.0).
        v_reset: hard-reset potential, ``None`` for soft reset (TWD code: 0.0).
        alpha: sigmoid surrogate sharpness (spikingjelly default 4).
        detach_reset: detach the spike in the reset step (TWD code: False).
    """

    def __init__(
        self,
        *,
        decay: float = 0.5,
        v_threshold: float = 1.0,
        v_reset: float | None = 0.0,
        alpha: float = 4.0,
        detach_reset: bool = False,
    ) -> None:
        super().__init__()
        self.decay = decay
        self.v_threshold = v_threshold
        self.v_reset = v_reset
        self.alpha = alpha
        self.detach_reset = detach_reset
        # validate once at construction with a dummy input so bad settings fail early
        lif_multistep(torch.zeros(1, 1), **self._kwargs())

    def _kwargs(self) -> dict:
        return {
            "decay": self.decay,
            "v_threshold": self.v_threshold,
            "v_reset": self.v_reset,
            "alpha": self.alpha,
            "detach_reset": self.detach_reset,
        }

    def forward(self, x: Tensor) -> Tensor:
        """Spikes (T, B, *) for input currents (T, B, *)."""
        return lif_multistep(x, **self._kwargs()).spikes

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self._kwargs().items())
