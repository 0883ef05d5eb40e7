"""A fixed, lossless causal "VAE": space-to-depth patchify with Wan's causal temporal grouping.

Wan2.1's VAE compresses a video of F = 4(T-1)+1 frames to T latent frames: frame 0 alone, then groups of 4 frames,
and 8x8 pixels to one latent cell. This stand-in keeps that grouping exactly (frame 0 is repeated s times so every
latent frame holds s pixel frames) with a space-to-depth of p x p pixels, so latent frame t holds pixel frames
``s(t-1)+1 .. st`` and the mask layout of :func:`iclr26.magref.masking.mask_channels` lines up with it as in Wan.
It has no parameters and ``decode(encode(v)) == v`` exactly.

Dimension letters: B batch, C colour channels, F pixel frames, T latent frames, H/W pixels, h/w latent cells,
s temporal stride, p spatial stride, K = C * s * p * p latent channels.

Deviation: a learned 16-channel VAE (Wan) is replaced by this fixed patchify (K = 3*4*2*2 = 48 channels at p = 2).
"""

from __future__ import annotations

import torch

from iclr26.magref.masking import latent_frames


class CausalPatchify:
    """Encode ``(B, C, F, H, W)`` videos to ``(B, K, T, h, w)`` latents and back.

    Args:
        channels: colour channels C.
        temporal_stride: s (Wan: 4).
        spatial_stride: p (Wan's VAE: 8; here a space-to-depth, 2 for tiny frames).
    """

    def __init__(self, *, channels: int = 3, temporal_stride: int = 4, spatial_stride: int = 2) -> None:
        if channels < 1 or temporal_stride < 1 or spatial_stride < 1:
            raise ValueError("channels, temporal_stride and spatial_stride must be >= 1")
        self.c, self.s, self.p = channels, temporal_stride, spatial_stride

    @property
    def latent_channels(self) -> int:
        """K = C * s * p * p."""
        return self.c * self.s * self.p * self.p

    def encode(self, video: torch.Tensor) -> torch.Tensor:
        """``(B, C, F, H, W)`` -> ``(B, K, T, h, w)``.

        Raises:
            ValueError: for a wrong channel count, F not of the form s(T-1)+1, or H/W not multiples of p.
        """
        b, c, f, h, w = video.shape
        if c != self.c:
            raise ValueError(f"video: expected {self.c} channels, got {c}")
        if h % self.p or w % self.p:
            raise ValueError(f"video: size {h}x{w} is not a multiple of the spatial stride {self.p}")
        t = latent_frames(f, self.s)
        # causal grouping: frame 0 repeated s times, then the remaining frames in groups of s
        padded = torch.cat([video[:, :, :1].expand(b, c, self.s, h, w), video[:, :, 1:]], dim=2)  # (B, C, sT, H, W)
        x = padded.reshape(b, c, t, self.s, h // self.p, self.p, w // self.p, self.p)
        x = x.permute(0, 1, 3, 5, 7, 2, 4, 6)  # (B, C, s, p, p, T, h, w)
        return x.reshape(b, self.latent_channels, t, h // self.p, w // self.p)

    def decode(self, latent: torch.Tensor) -> torch.Tensor:
        """``(B, K, T, h, w)`` -> ``(B, C, F, H, W)``; frame 0 is the mean of its s copies.

        Raises:
            ValueError: if K differs from :attr:`latent_channels`.
        """
        b, k, t, h, w = latent.shape
        if k != self.latent_channels:
            raise ValueError(f"latent: expected {self.latent_channels} channels, got {k}")
        x = latent.reshape(b, self.c, self.s, self.p, self.p, t, h, w).permute(0, 1, 5, 2, 6, 3, 7, 4)
        x = x.reshape(b, self.c, t * self.s, h * self.p, w * self.p)  # (B, C, sT, H, W)
        first = x[:, :, : self.s].mean(dim=2, keepdim=True)
        return torch.cat([first, x[:, :, self.s :]], dim=2)
