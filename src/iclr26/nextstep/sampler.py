"""Sampling: the per-token flow sampler of the FM head and the autoregressive image loop.

NextStep-1 (ICLR 2026, arXiv 2508.10711); ``stepfun-ai/NextStep-1`` ``modeling_fm_head.py`` (``sample``) and
``pipeline_nextstep.py``:

- Time grid ``t_k = linspace(0, 1 - last_step, steps)``, shifted ``t <- t / (shift - (shift - 1) t)``.
- Guidance: ``v = v_u + w (v_c - v_u)`` (``w = 1``: no guidance), constant over the tokens.
- SDE (Euler–Maruyama): score from velocity on the path ``x_t = t x + (1-t) eps``,
  ``s = (t v - x) / (1 - t)``; drift ``v + (1 - t) s``; noise ``sqrt(2 (1 - t)) dW``; then a final deterministic
  step ``x + v * last_step``. ``sde=False`` gives the plain Euler ODE on the same grid.
- Each sampled token is layer-normalised (no affine) and fed back through the transformer's input projection.

Glossary: ``B`` images, ``S`` text tokens, ``N`` image tokens, ``d`` token width, ``D`` transformer width.

Steps of :func:`generate` for image token ``i``:

1. run the transformer on ``[text, tokens_<i]`` (and on the null prompt when guiding);
2. sample token ``i`` from the head given the condition (flow sampler / argmax-free categorical / regression);
3. layer-normalise it (continuous tokens) and append.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from iclr26.nextstep.heads import DiscreteHead, FlowMatchingHead, RegressionHead
from iclr26.nextstep.model import ARTransformer
from iclr26.nextstep.tokenizer import channel_norm


def timestep_grid(steps: int, *, last_step: float = 0.04, shift: float = 1.0) -> Tensor:
    """The sampler's ``steps`` times from 0 to ``1 - last_step``, shifted by ``t / (shift - (shift - 1) t)``.

    Raises:
        ValueError: for ``steps < 2``, ``last_step`` outside (0, 1) or ``shift <= 0``.
    """
    if steps < 2:
        raise ValueError(f"steps must be >= 2, got {steps}")
    if not 0.0 < last_step < 1.0:
        raise ValueError(f"last_step must lie in (0, 1), got {last_step}")
    if shift <= 0:
        raise ValueError(f"shift must be > 0, got {shift}")
    t = torch.linspace(0.0, 1.0 - last_step, steps, dtype=torch.float64)
    # official time shift: t / (s - (s - 1) t)
    return (t / (shift - (shift - 1.0) * t)).float()


def velocity_to_score(v: Tensor, x: Tensor, t: Tensor | float) -> Tensor:
    """Score of ``x_t`` from the velocity on the path ``x_t = t x_1 + (1 - t) eps``: ``(t v - x) / (1 - t)``.

    With ``alpha_t = t``, ``sigma_t = 1 - t``: ``score = (alpha/alpha' v - x) / (sigma^2 - alpha/alpha' sigma' sigma)``
    and the denominator is ``(1-t)^2 + t(1-t) = 1 - t``.
    """
    # score of the linear path: s = (t v - x) / (1 - t)
    return (t * v - x) / (1.0 - t)


def cfg_combine(cond: Tensor, uncond: Tensor, scale: float) -> Tensor:
    """Classifier-free guidance ``uncond + scale * (cond - uncond)``."""
    # classifier-free guidance: v_u + w (v_c - v_u)
    return uncond + scale * (cond - uncond)


def sample_flow(
    velocity: Callable[[Tensor, Tensor], Tensor],
    shape: tuple[int, ...],
    *,
    steps: int = 20,
    last_step: float = 0.04,
    shift: float = 1.0,
    sde: bool = True,
    generator: torch.Generator | None = None,
    device=None,
) -> Tensor:
    """Integrate a velocity field from ``x_0 ~ N(0, I)`` at t = 0 to data at t = 1.

    Args:
        velocity: ``(x: (B, d), t: (B,)) -> (B, d)``, already guided.
        shape: ``(B, d)``.
        steps: grid points (``steps - 1`` stochastic steps and one final deterministic step, as in the official
            sampler).
        last_step: size of the final deterministic step (official 0.04).
        shift: time-shift factor (official ``timesteps_shift``, default 1).
        sde: Euler–Maruyama on the equivalent SDE (official) or Euler on the ODE.
        generator: noise source.
        device: where to draw.

    Returns:
        ``(B, d)`` samples.
    """
    grid = timestep_grid(steps, last_step=last_step, shift=shift).tolist()
    x = torch.randn(shape, generator=generator, device=device)
    B = shape[0]
    for ti, tj in zip(grid[:-1], grid[1:], strict=True):
        dt = tj - ti
        v = velocity(x, torch.full((B,), ti, device=x.device))
        if sde:
            drift = v + (1.0 - ti) * velocity_to_score(v, x, ti)
            dw = torch.randn(shape, generator=generator, device=device) * dt**0.5
            # dx = [v + (1 - t) s] dt + sqrt(2 (1 - t)) dW
            x = x + drift * dt + (2.0 * (1.0 - ti)) ** 0.5 * dw
        else:
            x = x + v * dt  # the probability-flow ODE dx = v dt
    # the official final deterministic step from the grid's last time to t = 1 (the score is singular at t = 1)
    v = velocity(x, torch.full((B,), grid[-1], device=x.device))
    return x + v * (1.0 - grid[-1])


@torch.no_grad()
def generate(
    model: ARTransformer,
    head: nn.Module,
    prompts: Tensor,
    *,
    num_tokens: int,
    null_prompts: Tensor | None = None,
    cfg_scale: float = 1.0,
    steps: int = 20,
    last_step: float = 0.04,
    shift: float = 1.0,
    sde: bool = True,
    codebook: Tensor | None = None,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Sample ``num_tokens`` image tokens per prompt, token by token.

    Args:
        model: the transformer.
        head: :class:`FlowMatchingHead`, :class:`RegressionHead` or :class:`DiscreteHead`.
        prompts: ``(B, S)`` text ids ending in ``<boi>``.
        num_tokens: N.
        null_prompts: ``(B, S)`` unconditional prompts (needed when ``cfg_scale != 1``).
        cfg_scale: guidance scale w (1 = none).
        steps, last_step, shift, sde: the flow sampler's settings (FM head only).
        codebook: ``(K, d)`` code vectors fed back for a discrete head.
        generator: randomness (flow noise, categorical draws).

    Returns:
        ``(B, N, d)`` tokens as fed back (layer-normalised for continuous heads, code vectors for VQ).

    Raises:
        ValueError: for guidance without null prompts, a discrete head without codebook, or an unknown head.
    """
    guided = cfg_scale != 1.0
    if guided and (null_prompts is None or null_prompts.shape != prompts.shape):
        raise ValueError("null_prompts: a (B, S) tensor like prompts is needed when cfg_scale != 1")
    if isinstance(head, DiscreteHead) and codebook is None:
        raise ValueError("codebook: a discrete head needs the (K, d) code vectors to feed back")
    if not isinstance(head, FlowMatchingHead | RegressionHead | DiscreteHead):
        raise ValueError(f"head: unsupported head type {type(head).__name__}")
    B = prompts.shape[0]
    # CFG: the prompts and the null prompts run as one batch of 2B, conditional half first
    text = torch.cat([prompts, null_prompts]) if guided else prompts  # (B or 2B, S)
    tokens = prompts.new_zeros((B, 0, model.token_dim), dtype=torch.float32)
    for _ in range(num_tokens):
        fed = torch.cat([tokens, tokens]) if guided else tokens
        c = model(text, fed).image_cond[:, -1]  # (B or 2B, D)
        if isinstance(head, FlowMatchingHead):

            def v_fn(x: Tensor, t: Tensor, c: Tensor = c) -> Tensor:
                if not guided:
                    return head.velocity(x, t, c)
                v = head.velocity(torch.cat([x, x]), torch.cat([t, t]), c)
                return cfg_combine(v[:B], v[B:], cfg_scale)

            new = sample_flow(
                v_fn, (B, model.token_dim), steps=steps, last_step=last_step, shift=shift, sde=sde,
                generator=generator, device=prompts.device,
            )  # fmt: skip
            # each sampled token is layer-normalised before it is fed back, like the tokenizer's encoded tokens
            new = channel_norm(new)
        elif isinstance(head, RegressionHead):
            pred = head.predict(c)
            new = channel_norm(cfg_combine(pred[:B], pred[B:], cfg_scale) if guided else pred)
        else:
            logits = head.logits(c)
            logits = cfg_combine(logits[:B], logits[B:], cfg_scale) if guided else logits
            codes = torch.multinomial(F.softmax(logits, dim=-1), 1, generator=generator).squeeze(1)
            new = codebook[codes]
        tokens = torch.cat([tokens, new[:, None]], dim=1)
    return tokens
