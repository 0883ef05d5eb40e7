"""Per-token image heads of NextStep-1: the flow-matching head and the two baselines' heads.

NextStep-1: Toward Autoregressive Image Generation with Continuous Tokens at Scale, ICLR 2026, arXiv 2508.10711.

The transformer's hidden state ``h_i`` at the position before image token ``x_i`` is the condition ``c`` of a small
head that models ``p(x_i | c)``:

- :class:`FlowMatchingHead` (the paper's): an AdaLN residual MLP ``f(x_t, t, c)`` trained with the rectified-flow loss
  ``L = E ||f(t x + (1-t) eps, t, c) - (x - eps)||^2`` with logit-normal ``t = sigmoid(u), u ~ N(0, 1)``; each token is
  repeated ``batch_mul`` times with fresh ``(t, eps)``. Architecture, zero initialisation and loss follow
  ``stepfun-ai/NextStep-1`` ``nextstep/models/modeling_fm_head.py`` (``SimpleMLPAdaLN``, ``FlowMatchingHead``).
- :class:`RegressionHead` (baseline): the same network with a constant input ``(x_t, t) = (x0, 0)`` (``x0`` learned),
  trained with ``||f(x0, 0, c) - x||^2``; it predicts the conditional mean (the "mode-averaged" baseline).
- :class:`DiscreteHead` (VQ baseline): the same network with ``K`` logits out, trained with cross-entropy on code
  indices.

Glossary: ``B`` rows (tokens), ``d`` token width, ``Dc`` condition width, ``Dh`` head width, ``K`` codes.

Steps of one flow-matching loss evaluation (:func:`flow_matching_loss`):

1. repeat every (token, condition) pair ``batch_mul`` times;
2. draw ``u ~ N(0, 1)``, ``t = sigmoid(u)`` and ``eps ~ N(0, I)`` per row;
3. ``x_t = t x + (1 - t) eps`` and the target velocity ``v = x - eps``;
4. the mean over rows (and the mask) of the per-row mean squared error of ``f(x_t, t, c)`` against ``v``.

Deviations: widths and depths are CPU-sized (official: 12 blocks of width 1536, ~157M parameters).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def timestep_embedding(t: Tensor, dim: int, *, max_period: float = 10_000.0) -> Tensor:
    """Sinusoidal embedding ``[cos(t w_k), sin(t w_k)]`` with ``w_k = max_period^(-k / (dim/2))``.

    Args:
        t: ``(B,)`` times (fractional values allowed).
        dim: embedding width (an odd width gets a zero column).
        max_period: the slowest period.

    Returns:
        ``(B, dim)`` embeddings in ``t``'s dtype.
    """
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, device=t.device, dtype=torch.float32) / half)
    args = t.float()[:, None] * freqs[None]  # (B, dim/2)
    emb = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
    if dim % 2:
        emb = torch.cat([emb, torch.zeros_like(emb[:, :1])], dim=-1)
    return emb.to(t.dtype)


class AdaLNResBlock(nn.Module):
    """``x + g * MLP(LN(x) * (1 + s) + b)`` with ``(b, s, g) = W SiLU(y)`` (modulation zero-initialised)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.SiLU(), nn.Linear(dim, dim))
        self.modulation = nn.Sequential(nn.SiLU(), nn.Linear(dim, 3 * dim))

    def forward(self, x: Tensor, y: Tensor) -> Tensor:
        shift, scale, gate = self.modulation(y).chunk(3, dim=-1)
        # AdaLN residual block: x + gate * MLP(LN(x) (1 + scale) + shift), modulated by y = t_emb + W_c c
        return x + gate * self.mlp(self.norm(x) * (1 + scale) + shift)


class AdaLNMLP(nn.Module):
    """The head network: ``y = TimeMLP(emb(t)) + W_c c``; ``layers`` :class:`AdaLNResBlock` on ``W_in x``; an AdaLN
    final layer. Modulations and the output layer start at zero, so the untrained head outputs 0.

    Args:
        in_dim: width of the input ``x`` (the token width d).
        cond_dim: width of the condition ``c`` (the transformer width).
        out_dim: output width (d for velocities and regressions, K for logits).
        dim: hidden width Dh.
        layers: number of residual blocks.
        freq_dim: width of the sinusoidal time embedding.

    Shapes:
        ``forward(x: (B, in_dim), t: (B,), c: (B, cond_dim)) -> (B, out_dim)``.
    """

    def __init__(self, in_dim: int, cond_dim: int, out_dim: int, *, dim: int, layers: int, freq_dim: int = 64) -> None:
        super().__init__()
        for name, value in (("in_dim", in_dim), ("cond_dim", cond_dim), ("out_dim", out_dim), ("dim", dim)):
            if value < 1:
                raise ValueError(f"{name} must be positive, got {value}")
        if layers < 1:
            raise ValueError(f"layers must be >= 1, got {layers}")
        self.in_dim, self.cond_dim, self.freq_dim = in_dim, cond_dim, freq_dim
        self.time_mlp = nn.Sequential(nn.Linear(freq_dim, dim), nn.SiLU(), nn.Linear(dim, dim))
        self.cond_proj = nn.Linear(cond_dim, dim)
        self.in_proj = nn.Linear(in_dim, dim)
        self.blocks = nn.ModuleList(AdaLNResBlock(dim) for _ in range(layers))
        self.final_norm = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.final_modulation = nn.Sequential(nn.SiLU(), nn.Linear(dim, 2 * dim))
        self.out = nn.Linear(dim, out_dim)
        self._init_weights()

    def _init_weights(self) -> None:
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                nn.init.zeros_(m.bias)
        nn.init.normal_(self.time_mlp[0].weight, std=0.02)
        nn.init.normal_(self.time_mlp[2].weight, std=0.02)
        # zero modulations and output layer (official init): every block starts as the identity, the head outputs 0
        zero = [b.modulation[-1] for b in self.blocks] + [self.final_modulation[-1], self.out]
        for layer in zero:
            nn.init.zeros_(layer.weight)
            nn.init.zeros_(layer.bias)

    def forward(self, x: Tensor, t: Tensor, c: Tensor) -> Tensor:
        if x.dim() != 2 or x.shape[1] != self.in_dim:
            raise ValueError(f"x must have shape (B, {self.in_dim}), got {tuple(x.shape)}")
        if c.dim() != 2 or c.shape != (x.shape[0], self.cond_dim):
            raise ValueError(f"c must have shape ({x.shape[0]}, {self.cond_dim}), got {tuple(c.shape)}")
        if t.shape != (x.shape[0],):
            raise ValueError(f"t must have shape ({x.shape[0]},), got {tuple(t.shape)}")
        # the head's condition: y = t_emb + W_c c, with c the transformer's hidden state before this token
        y = self.time_mlp(timestep_embedding(t.to(x.dtype), self.freq_dim)) + self.cond_proj(c)  # (B, Dh)
        h = self.in_proj(x)
        for block in self.blocks:
            h = block(h, y)
        shift, scale = self.final_modulation(y).chunk(2, dim=-1)
        return self.out(self.final_norm(h) * (1 + scale) + shift)


def logit_normal_t(n: int, *, generator: torch.Generator | None = None, device=None, dtype=torch.float32) -> Tensor:
    """``t = sigmoid(u)``, ``u ~ N(0, 1)``: the logit-normal time distribution of the FM loss, shape ``(n,)``."""
    u = torch.randn(n, generator=generator, device=device, dtype=dtype)
    # logit-normal time (official FlowMatchingHead): t = sigmoid(u), u ~ N(0, 1)
    return torch.sigmoid(u)


class FlowPair(NamedTuple):
    """A point on the linear path and its velocity target.

    Attributes:
        x_t: ``t x + (1 - t) eps``, ``(B, d)``.
        v: the target velocity ``x - eps``, ``(B, d)``.
    """

    x_t: Tensor
    v: Tensor


def interpolate(x: Tensor, eps: Tensor, t: Tensor) -> FlowPair:
    """The rectified-flow path from noise (t = 0) to data (t = 1).

    Args:
        x: ``(B, d)`` data tokens.
        eps: ``(B, d)`` noise.
        t: ``(B,)`` times in [0, 1].
    """
    tt = t[:, None]
    # x_t = t x + (1 - t) eps;  v = d x_t / dt = x - eps
    return FlowPair(x_t=tt * x + (1 - tt) * eps, v=x - eps)


def flow_matching_loss(
    velocity: nn.Module,
    x: Tensor,
    c: Tensor,
    *,
    batch_mul: int = 4,
    mask: Tensor | None = None,
    generator: torch.Generator | None = None,
    noise: tuple[Tensor, Tensor] | None = None,
) -> Tensor:
    """The NextStep-1 image loss ``E_{t, eps} ||f(x_t, t, c) - (x - eps)||^2``, averaged per row over ``d``.

    Args:
        velocity: ``f(x_t: (B, d), t: (B,), c: (B, Dc)) -> (B, d)``.
        x: ``(B, d)`` target tokens.
        c: ``(B, Dc)`` conditions.
        batch_mul: repeats of every row with fresh ``(t, eps)`` (official ``fm_head_batch_mul = 4``).
        mask: optional ``(B,)`` weights (1 = counted); the loss is ``sum(mask * l) / sum(mask)``.
        generator: source of ``t`` and ``eps``.
        noise: ``(t (B·batch_mul,), eps (B·batch_mul, d))`` to use instead of drawing them (rows in the repeated
            order); data parallelism passes a rank's rows of the whole batch's draws.

    Returns:
        The scalar loss.

    Raises:
        ValueError: for mismatched shapes, non-finite targets or ``batch_mul < 1``.
    """
    if batch_mul < 1:
        raise ValueError(f"batch_mul must be >= 1, got {batch_mul}")
    if x.dim() != 2 or c.dim() != 2 or x.shape[0] != c.shape[0]:
        raise ValueError(f"x (B, d) and c (B, Dc) must share B, got {tuple(x.shape)} and {tuple(c.shape)}")
    if not torch.isfinite(x).all():
        raise ValueError("x holds non-finite values")
    # fm_head_batch_mul: batch_mul (t, eps) draws per token for one transformer pass (the head is the cheap part)
    x = x.repeat(batch_mul, 1)  # (B * batch_mul, d), the official repeat order
    c = c.repeat(batch_mul, 1)
    if noise is None:
        t = logit_normal_t(x.shape[0], generator=generator, device=x.device, dtype=x.dtype)
        eps = torch.randn(x.shape, generator=generator, device=x.device, dtype=x.dtype)
    else:
        t, eps = noise
        if t.shape != (x.shape[0],) or eps.shape != x.shape:
            raise ValueError(f"noise must be (t {(x.shape[0],)}, eps {tuple(x.shape)}), got {tuple(t.shape)}, "
                             f"{tuple(eps.shape)}")  # fmt: skip
    pair = interpolate(x, eps, t)
    # L_im = E_{t, eps} || f(x_t, t, c) - (x - eps) ||^2, averaged over d per row
    per_row = ((velocity(pair.x_t, t, c).float() - pair.v.float()) ** 2).mean(dim=-1)  # (B * batch_mul,)
    if mask is None:
        return per_row.mean()
    if mask.shape != (x.shape[0] // batch_mul,):
        raise ValueError(f"mask must have shape ({x.shape[0] // batch_mul},), got {tuple(mask.shape)}")
    m = mask.float().repeat(batch_mul)
    return (per_row * m).sum() / (m.sum() + 1e-8)


class FlowMatchingHead(nn.Module):
    """The NextStep-1 head: a velocity field ``f(x_t, t, c)`` on token space, trained by :func:`flow_matching_loss`.

    Drop-in use on any AR transformer: take the hidden state before each continuous token as ``c``; train with
    ``head.loss(tokens, c)`` added to the LM loss; sample with :func:`iclr26.nextstep.sampler.sample_flow` and
    ``head.velocity``.

    Args:
        token_dim: d.
        cond_dim: Dc, the transformer width.
        dim: head width.
        layers: residual blocks.
        batch_mul: repeats per token in the loss (official 4).
    """

    kind = "fm"

    def __init__(self, token_dim: int, cond_dim: int, *, dim: int = 128, layers: int = 3, batch_mul: int = 4) -> None:
        super().__init__()
        if batch_mul < 1:
            raise ValueError(f"batch_mul must be >= 1, got {batch_mul}")
        self.token_dim, self.batch_mul = token_dim, batch_mul
        self.net = AdaLNMLP(token_dim, cond_dim, token_dim, dim=dim, layers=layers)

    def velocity(self, x_t: Tensor, t: Tensor, c: Tensor) -> Tensor:
        """``f(x_t, t, c)``, ``(B, d)``."""
        return self.net(x_t, t, c)

    def loss(
        self,
        x: Tensor,
        c: Tensor,
        *,
        generator: torch.Generator | None = None,
        noise: tuple[Tensor, Tensor] | None = None,
    ) -> Tensor:
        """:func:`flow_matching_loss` with this head's ``batch_mul`` (``noise``: given ``(t, eps)``)."""
        return flow_matching_loss(self.net, x, c, batch_mul=self.batch_mul, generator=generator, noise=noise)


class RegressionHead(nn.Module):
    """Baseline: ``x_hat = f(x0, 0, c)`` (the FM network with its noisy input held at a learned constant ``x0``),
    loss ``||x_hat - x||^2``.

    The parameters of :class:`FlowMatchingHead` plus the ``d`` entries of ``x0``; the only change is the constant
    input and the MSE target. A constant input of zeros would leave the zero-initialised network at a stationary
    point (``LN(0) = 0`` kills every gradient but the output bias), so ``x0`` starts at ``N(0, I)``.
    """

    kind = "reg"

    def __init__(self, token_dim: int, cond_dim: int, *, dim: int = 128, layers: int = 3) -> None:
        super().__init__()
        self.token_dim = token_dim
        self.net = AdaLNMLP(token_dim, cond_dim, token_dim, dim=dim, layers=layers)
        self.x0 = nn.Parameter(torch.randn(token_dim))

    def predict(self, c: Tensor) -> Tensor:
        """The predicted token, ``(B, d)``."""
        # a constant input (x0, t = 0): f depends on c alone, so the MSE drives it to the conditional mean E[x | c]
        return self.net(self.x0.expand(c.shape[0], -1), c.new_zeros(c.shape[0]), c)

    def loss(self, x: Tensor, c: Tensor, *, generator: torch.Generator | None = None) -> Tensor:
        """Mean squared error of :meth:`predict` (``generator`` unused: the loss is deterministic)."""
        if x.shape != (c.shape[0], self.token_dim):
            raise ValueError(f"x must have shape ({c.shape[0]}, {self.token_dim}), got {tuple(x.shape)}")
        return F.mse_loss(self.predict(c), x)


class DiscreteHead(nn.Module):
    """VQ baseline: logits ``f(x0, 0, c) in R^K`` over the codebook (learned constant input ``x0`` as in
    :class:`RegressionHead`), loss cross-entropy on code indices."""

    kind = "vq"

    def __init__(self, num_codes: int, cond_dim: int, *, token_dim: int, dim: int = 128, layers: int = 3) -> None:
        super().__init__()
        if num_codes < 2:
            raise ValueError(f"num_codes must be >= 2, got {num_codes}")
        self.token_dim, self.num_codes = token_dim, num_codes
        self.net = AdaLNMLP(token_dim, cond_dim, num_codes, dim=dim, layers=layers)
        self.x0 = nn.Parameter(torch.randn(token_dim))

    def logits(self, c: Tensor) -> Tensor:
        """``(B, K)`` logits."""
        return self.net(self.x0.expand(c.shape[0], -1), c.new_zeros(c.shape[0]), c)

    def loss(self, codes: Tensor, c: Tensor, *, generator: torch.Generator | None = None) -> Tensor:
        """Cross-entropy of the code indices ``codes: (B,)`` (``generator`` unused)."""
        if codes.shape != (c.shape[0],) or codes.dtype != torch.long:
            raise ValueError(f"codes must be a ({c.shape[0]},) long tensor, got {tuple(codes.shape)} {codes.dtype}")
        return F.cross_entropy(self.logits(c), codes)
