"""The image tokenizer: a small convolutional autoencoder whose latent is patchified into continuous tokens.

NextStep-1 (ICLR 2026, arXiv 2508.10711) §2 and ``stepfun-ai/NextStep-1`` ``modeling_flux_vae.py``: the latent
(f8, 16 channels) is patchified 2x2 into tokens of width 64, each token is layer-normalised over its channels without
affine parameters (``encoder_norm``, "channel-wise normalisation"), and during tokenizer training noise of a per-image
strength ``s ~ U(0, noise_strength)`` is added to the latent before decoding ("noise regularisation").

Here: an f2 convolutional autoencoder on small grey images; ``C`` latent channels, patch ``p`` -> ``N = (S/2p)^2``
tokens of width ``d = C p^2``. :class:`VectorQuantizer` turns the same tokens into codebook entries for the VQ
baseline (VQ-VAE loss with a straight-through gradient, van den Oord et al. 2017).

Glossary: ``B`` images, ``S`` image side, ``C`` latent channels, ``p`` patch, ``N`` tokens, ``d`` token width,
``K`` codes.

Steps of one tokenizer training step (:func:`train_tokenizer`):

1. encode images to tokens ``z`` (patchify, layer norm);
2. VQ only: quantize ``z`` to its nearest codes ``e`` and add ``||sg[z] - e||^2 + beta ||z - sg[e]||^2``;
3. add ``s * eps`` with ``s ~ U(0, noise_strength)`` per image; decode; loss ``||x_hat - x||^2`` (+ VQ terms).

Deviations: a deterministic autoencoder (no KL posterior) at f2, CPU-sized.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def patchify(z: Tensor, p: int) -> Tensor:
    """``(B, C, H, W) -> (B, (H/p)(W/p), C p^2)``, row-major over patches, channels outermost within a token."""
    if z.dim() != 4 or z.shape[2] % p or z.shape[3] % p:
        raise ValueError(f"z must be (B, C, H, W) with H, W divisible by p={p}, got {tuple(z.shape)}")
    B, C, H, W = z.shape
    z = z.reshape(B, C, H // p, p, W // p, p).permute(0, 2, 4, 1, 3, 5)  # (B, H/p, W/p, C, p, p)
    return z.reshape(B, (H // p) * (W // p), C * p * p)


def unpatchify(tokens: Tensor, p: int, channels: int) -> Tensor:
    """Inverse of :func:`patchify` for a square grid: ``(B, N, C p^2) -> (B, C, sqrt(N) p, sqrt(N) p)``."""
    B, N, d = tokens.shape
    g = int(round(N**0.5))
    if g * g != N or d != channels * p * p:
        raise ValueError(f"tokens (B, N, d) need a square N and d = {channels}*{p}^2, got {tuple(tokens.shape)}")
    z = tokens.reshape(B, g, g, channels, p, p).permute(0, 3, 1, 4, 2, 5)  # (B, C, g, p, g, p)
    return z.reshape(B, channels, g * p, g * p)


def channel_norm(tokens: Tensor, eps: float = 1e-6) -> Tensor:
    """Layer norm over each token's ``d`` channels without affine parameters (official ``encoder_norm``)."""
    return F.layer_norm(tokens, tokens.shape[-1:], None, None, eps)


class ConvAutoencoder(nn.Module):
    """f2 convolutional autoencoder with channel-normalised, patchified latents.

    Args:
        latent_channels: C.
        patch: p.
        width: hidden channels of the conv stacks.

    Shapes:
        ``encode(x: (B, 1, S, S)) -> (B, N, d)``; ``decode(tokens: (B, N, d)) -> (B, 1, S, S)``.
    """

    def __init__(self, *, latent_channels: int = 4, patch: int = 2, width: int = 32) -> None:
        super().__init__()
        for name, value in (("latent_channels", latent_channels), ("patch", patch), ("width", width)):
            if value < 1:
                raise ValueError(f"{name} must be positive, got {value}")
        self.latent_channels, self.patch = latent_channels, patch
        self.encoder = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1), nn.SiLU(),
            nn.Conv2d(width, width, 4, stride=2, padding=1), nn.SiLU(),
            nn.Conv2d(width, latent_channels, 3, padding=1),
        )  # fmt: skip
        self.decoder = nn.Sequential(
            nn.Conv2d(latent_channels, width, 3, padding=1), nn.SiLU(),
            nn.ConvTranspose2d(width, width, 4, stride=2, padding=1), nn.SiLU(),
            nn.Conv2d(width, 1, 3, padding=1),
        )  # fmt: skip

    @property
    def token_dim(self) -> int:
        """d = C p^2."""
        return self.latent_channels * self.patch**2

    def check_images(self, x: Tensor) -> None:
        """Raise ValueError unless ``x`` is a finite ``(B, 1, S, S)`` batch with S divisible by 2p."""
        if x.dim() != 4 or x.shape[1] != 1 or x.shape[2] != x.shape[3]:
            raise ValueError(f"images must have shape (B, 1, S, S), got {tuple(x.shape)}")
        if x.shape[2] % (2 * self.patch):
            raise ValueError(f"images: side {x.shape[2]} must be divisible by 2 * patch = {2 * self.patch}")
        if not torch.isfinite(x).all():
            raise ValueError("images hold NaN or infinite pixels")

    def encode(self, x: Tensor) -> Tensor:
        """Normalised tokens ``(B, N, d)`` of images ``(B, 1, S, S)``."""
        self.check_images(x)
        # the paper's channel-wise normalisation: each patchified token layer-normed over its d channels
        return channel_norm(patchify(self.encoder(x), self.patch))

    def decode(self, tokens: Tensor) -> Tensor:
        """Images ``(B, 1, S, S)`` from tokens ``(B, N, d)``."""
        if tokens.dim() != 3 or tokens.shape[-1] != self.token_dim:
            raise ValueError(f"tokens must have shape (B, N, {self.token_dim}), got {tuple(tokens.shape)}")
        return self.decoder(unpatchify(tokens, self.patch, self.latent_channels))


class Quantized(NamedTuple):
    """Output of :class:`VectorQuantizer`.

    Attributes:
        tokens: the nearest codes with a straight-through gradient, ``(..., d)``.
        codes: their indices, ``(...)`` long.
        loss: ``||sg[z] - e||^2 + beta ||z - sg[e]||^2`` (scalar).
    """

    tokens: Tensor
    codes: Tensor
    loss: Tensor


class VectorQuantizer(nn.Module):
    """Nearest-neighbour quantization onto ``K`` codes of width ``d`` (VQ-VAE, straight-through estimator).

    Args:
        num_codes: K.
        dim: d.
        beta: commitment weight (VQ-VAE default 0.25).
    """

    def __init__(self, num_codes: int, dim: int, *, beta: float = 0.25) -> None:
        super().__init__()
        if num_codes < 2:
            raise ValueError(f"num_codes must be >= 2, got {num_codes}")
        self.beta = beta
        self.codebook = nn.Parameter(torch.randn(num_codes, dim))

    def nearest(self, z: Tensor) -> Tensor:
        """Indices ``(...)`` of the nearest codes to ``z: (..., d)``."""
        flat = z.reshape(-1, z.shape[-1])
        return torch.cdist(flat, self.codebook).argmin(dim=-1).reshape(z.shape[:-1])

    def lookup(self, codes: Tensor) -> Tensor:
        """Code vectors ``(..., d)`` of indices ``codes``."""
        return self.codebook[codes]

    def forward(self, z: Tensor) -> Quantized:
        codes = self.nearest(z)
        e = self.lookup(codes)
        # VQ-VAE: codebook term ||sg[z] - e||^2 + commitment beta ||z - sg[e]||^2
        loss = F.mse_loss(e, z.detach()) + self.beta * F.mse_loss(z, e.detach())
        # straight-through estimator: forward gives e, the gradient flows to z unchanged
        return Quantized(tokens=z + (e - z).detach(), codes=codes, loss=loss)


@dataclass(frozen=True)
class TokenizerSpec:
    """Architecture of a tokenizer (to rebuild it from stored weights).

    Attributes:
        kind: ``"continuous"`` or ``"vq"``.
        latent_channels: C.
        patch: p.
        width: conv width.
        num_codes: K (VQ only).
    """

    kind: Literal["continuous", "vq"]
    latent_channels: int
    patch: int
    width: int
    num_codes: int = 0


class Tokenizer(nn.Module):
    """An autoencoder plus, for ``kind="vq"``, a quantizer; :meth:`tokens` gives what the AR model sees."""

    def __init__(self, spec: TokenizerSpec) -> None:
        super().__init__()
        if spec.kind not in ("continuous", "vq"):
            raise ValueError(f"kind must be 'continuous' or 'vq', got {spec.kind!r}")
        self.spec = spec
        self.ae = ConvAutoencoder(latent_channels=spec.latent_channels, patch=spec.patch, width=spec.width)
        self.vq = VectorQuantizer(spec.num_codes, self.ae.token_dim) if spec.kind == "vq" else None

    @torch.no_grad()
    def tokens(self, x: Tensor) -> tuple[Tensor, Tensor | None]:
        """Continuous tokens ``(B, N, d)`` (quantized for VQ) and the code indices ``(B, N)`` (None if continuous)."""
        z = self.ae.encode(x)
        if self.vq is None:
            return z, None
        codes = self.vq.nearest(z)
        return self.vq.lookup(codes), codes

    @torch.no_grad()
    def reconstruct(self, x: Tensor) -> Tensor:
        """``decode(tokens(x))``."""
        return self.ae.decode(self.tokens(x)[0])


def train_tokenizer(
    images: Tensor,
    spec: TokenizerSpec,
    *,
    steps: int,
    batch_size: int = 64,
    lr: float = 2e-3,
    noise_strength: float = 0.1,
    generator: torch.Generator,
) -> Tokenizer:
    """Train a tokenizer on ``images: (M, 1, S, S)`` by reconstruction with latent noise regularisation.

    The codebook of a VQ tokenizer starts at randomly chosen encoded tokens (a common warm start).

    Args:
        images: training images, values roughly in [0, 1].
        spec: the architecture.
        steps: Adam steps.
        batch_size: images per step.
        lr: Adam learning rate (cosine decay).
        noise_strength: upper end of the per-image latent noise scale (official ``noise_strength``).
        generator: source of batches, noise and the codebook start (CPU).

    Returns:
        The trained tokenizer in eval mode.

    Raises:
        ValueError: for bad images, ``steps < 1`` or ``noise_strength < 0``.
    """
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    if noise_strength < 0:
        raise ValueError(f"noise_strength must be >= 0, got {noise_strength}")
    tok = Tokenizer(spec).to(images.device)
    tok.ae.check_images(images)
    opt = torch.optim.Adam(tok.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    m = images.shape[0]
    if tok.vq is not None:
        with torch.no_grad():
            z = tok.ae.encode(images[torch.randperm(m, generator=generator)[:256].to(images.device)]).flatten(0, 1)
            pick = torch.randint(0, z.shape[0], (spec.num_codes,), generator=generator).to(images.device)
            tok.vq.codebook.copy_(z[pick])
    tok.train()
    for _ in range(steps):
        idx = torch.randint(0, m, (min(batch_size, m),), generator=generator).to(images.device)
        x = images[idx]
        z = tok.ae.encode(x)  # (B, N, d)
        loss = z.new_zeros(())
        if tok.vq is not None:
            q = tok.vq(z)
            z, loss = q.tokens, q.loss
        # noise regularisation: z + s eps, s ~ U(0, noise_strength) per image
        s = torch.rand(z.shape[0], 1, 1, generator=generator).to(z) * noise_strength
        z = z + s * torch.randn(z.shape, generator=generator).to(z)
        loss = loss + F.mse_loss(tok.ae.decode(z), x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    return tok.eval()
