"""A tiny video DiT in the Wan-I2V layout, with MAGREF's subject disentanglement.

MAGREF, ICLR 2026, arXiv 2505.23742 (§3, "subject disentanglement"). The generator is a small DiT over latent tokens
(one token per latent cell of every latent frame) whose input is ``concat(z_t, y)`` (see :mod:`.masking`): a linear
patch embedding, then ``depth`` blocks of adaLN-modulated self-attention, text cross-attention and an MLP.

Subject disentanglement: for subject i with word tokens S_i of the prompt and latent region R_i (its reference's
cells on the first latent frame), in every block l

    h' = h + alpha * sum_i M_i (.) v_i^l,    v_i^l = mean_{j in S_i} W_v^l c_j,

where c are the text encoder's (contextual) token features and W_v^l the block's cross-attention value projection:
each subject's semantic value from the text condition is added to its own visual region (:func:`inject_values`).
The paper's equation was not available to check; this follows the project notes ([unverified] there): values of the
subject's word tokens, injected into the first-frame tokens inside its region, in each layer.

Dimension letters: B batch, K latent channels, T latent frames, h/w latent cells, L video tokens (T*h*w), D width,
N subjects, J text tokens, A heads.

Deviations: a previous-frame mixing layer in each block (see :class:`Block`); no CLIP image context (Wan adds
CLIP features of the canvas to the cross-attention context); a one-layer text encoder over a closed vocabulary
stands in for T5; learned factorised position embeddings instead of 3D RoPE.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def subject_values(values: torch.Tensor, subject_tokens: torch.Tensor) -> torch.Tensor:
    """v_i = mean over subject i's tokens of the value features: ``(B, J, D)``, ``(B, N, J)`` -> ``(B, N, D)``.

    A subject without tokens gets v_i = 0.

    Raises:
        ValueError: if the batch or token counts differ.
    """
    if values.shape[:2] != (subject_tokens.shape[0], subject_tokens.shape[2]):
        raise ValueError(f"values {tuple(values.shape)} and subject_tokens {tuple(subject_tokens.shape)} disagree")
    w = subject_tokens.to(values.dtype)
    count = w.sum(dim=2, keepdim=True).clamp_min(1.0)
    # v_i = mean_{j in S_i} W_v c_j (the layer's cross-attention values of subject i's words)
    return torch.einsum("bnj,bjd->bnd", w, values) / count


def inject_values(hidden: torch.Tensor, regions: torch.Tensor, values: torch.Tensor, alpha: float) -> torch.Tensor:
    """Subject disentanglement: ``h' = h + alpha * sum_i M_i (.) v_i``.

    Args:
        hidden: ``(B, L, D)`` video tokens.
        regions: ``(B, N, L)`` region masks M_i over the video tokens (1 inside subject i's region).
        values: ``(B, N, D)`` subject values v_i.
        alpha: injection strength.

    Returns:
        ``(B, L, D)``; tokens outside every region are unchanged.

    Raises:
        ValueError: on mismatched shapes.
    """
    if regions.shape[0] != hidden.shape[0] or regions.shape[2] != hidden.shape[1]:
        raise ValueError(f"regions {tuple(regions.shape)} do not match hidden {tuple(hidden.shape)}")
    if values.shape != (hidden.shape[0], regions.shape[1], hidden.shape[2]):
        raise ValueError(
            f"values {tuple(values.shape)}: expected {(hidden.shape[0], regions.shape[1], hidden.shape[2])}"
        )
    # subject disentanglement: h' = h + alpha * sum_i M_i (.) v_i
    return hidden + alpha * torch.einsum("bnl,bnd->bld", regions.to(hidden.dtype), values)


def timestep_embedding(t: torch.Tensor, dim: int) -> torch.Tensor:
    """Sinusoidal embedding of t in [0, 1] (scaled by 1000 as Wan's timesteps): ``(B,)`` -> ``(B, dim)``."""
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
    args = 1000.0 * t.float()[:, None] * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=1)


class TextEncoder(nn.Module):
    """Prompt tokens -> contextual features: token + subject-slot + role embeddings, then one encoder layer.

    Args:
        vocab: vocabulary size (id 0 is padding).
        dim: width D.
        max_subjects: subject slots.
        roles: tokens per subject slot.
    """

    def __init__(self, *, vocab: int, dim: int, max_subjects: int, roles: int) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, dim, padding_idx=0)
        self.pos = nn.Parameter(torch.randn(max_subjects * roles, dim) * 0.02)
        self.layer = nn.TransformerEncoderLayer(dim, 4, 2 * dim, dropout=0.0, batch_first=True, norm_first=True)
        self.norm = nn.LayerNorm(dim)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """``(B, J)`` token ids -> ``(B, J, D)``."""
        pad = tokens == 0
        x = self.tok(tokens) + self.pos[: tokens.shape[1]]
        x = self.layer(x, src_key_padding_mask=pad)
        return self.norm(x)


class Block(nn.Module):
    """adaLN self-attention, cross-attention to the text, previous-frame mixing, MLP.

    The value injection happens before self-attention. The previous-frame mixing (h_t += W h_{t-1} at the same
    latent cell, zero-initialised; not in Wan) lets a cell see the same cell of the previous latent frame directly,
    which a ~100k-parameter model trained for a few hundred steps does not learn from position embeddings alone.
    """

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim, elementwise_affine=False)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.cproj = nn.Linear(dim, dim)
        self.prev = nn.Linear(dim, dim)  # previous-latent-frame mixing (see the class doc)
        nn.init.zeros_(self.prev.weight)
        nn.init.zeros_(self.prev.bias)
        self.norm3 = nn.LayerNorm(dim, elementwise_affine=False)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.ada = nn.Linear(dim, 6 * dim)
        nn.init.zeros_(self.ada.weight)
        nn.init.zeros_(self.ada.bias)

    def _attn(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, pad: torch.Tensor | None) -> torch.Tensor:
        b, lq, d = q.shape
        a = self.heads
        q, k, v = (x.reshape(b, -1, a, d // a).transpose(1, 2) for x in (q, k, v))  # (B, A, L, D/A)
        mask = None if pad is None else ~pad[:, None, None, :]
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return out.transpose(1, 2).reshape(b, lq, d)

    def forward(
        self,
        x: torch.Tensor,
        temb: torch.Tensor,
        ctx: torch.Tensor,
        pad: torch.Tensor,
        regions: torch.Tensor | None,
        subject_tokens: torch.Tensor | None,
        alpha: float,
        grid: tuple[int, int, int],
    ) -> torch.Tensor:
        """``(B, L, D)`` -> ``(B, L, D)`` with ``grid`` = (T, h, w), L = T*h*w."""
        s1, b1, g1, s2, b2, g2 = self.ada(temb)[:, None].chunk(6, dim=2)
        ctx_v = self.v(ctx)  # (B, J, D)
        if regions is not None and subject_tokens is not None and alpha != 0.0:
            # Disentanglement: h' = h + alpha * sum_i M_i v_i with v_i from this layer's value projection
            x = inject_values(x, regions, subject_values(ctx_v, subject_tokens), alpha)
        hmod = self.norm1(x) * (1 + s1) + b1
        q, k, v = self.qkv(hmod).chunk(3, dim=2)
        x = x + g1 * self.proj(self._attn(q, k, v, None))
        x = x + self.cproj(self._attn(self.q(self.norm2(x)), self.k(ctx), ctx_v, pad))
        b, length, d = x.shape
        t, h, w = grid
        frames = x.reshape(b, t, h * w, d)
        prev = torch.cat([torch.zeros_like(frames[:, :1]), frames[:, :-1]], dim=1)  # h_{t-1}, zero for t = 0
        x = x + self.prev(prev).reshape(b, length, d)
        return x + g2 * self.mlp(self.norm3(x) * (1 + s2) + b2)


class TinyVideoDiT(nn.Module):
    """The generator: ``v = f(concat(z_t, y), t, prompt)`` predicting the flow-matching velocity of ``z_t``.

    Args:
        in_channels: K + s + K (Wan I2V: 16 + 4 + 16 = 36).
        out_channels: K.
        max_frames: latent frames the position embedding covers.
        height: latent height h.
        width: latent width w.
        dim: width D.
        depth: blocks.
        heads: attention heads A.
        vocab: text vocabulary size.
        max_subjects: subject slots of a prompt.
        roles: tokens per subject slot.
    """

    def __init__(
        self,
        *,
        in_channels: int,
        out_channels: int,
        max_frames: int,
        height: int,
        width: int,
        dim: int,
        depth: int,
        heads: int,
        vocab: int,
        max_subjects: int,
        roles: int,
    ) -> None:
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim: {dim} is not a multiple of heads={heads}")
        self.in_channels, self.out_channels, self.dim = in_channels, out_channels, dim
        self.max_frames, self.height, self.width = max_frames, height, width
        self.embed = nn.Linear(in_channels, dim)
        self.pos_t = nn.Parameter(torch.randn(max_frames, dim) * 0.02)
        self.pos_hw = nn.Parameter(torch.randn(height * width, dim) * 0.02)
        self.temb = nn.Sequential(nn.Linear(dim, dim), nn.SiLU(), nn.Linear(dim, dim))
        self.text = TextEncoder(vocab=vocab, dim=dim, max_subjects=max_subjects, roles=roles)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(depth))
        self.norm_out = nn.LayerNorm(dim)
        self.out = nn.Linear(dim, out_channels)
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)

    def forward(
        self,
        x: torch.Tensor,
        t: torch.Tensor,
        tokens: torch.Tensor,
        *,
        regions: torch.Tensor | None = None,
        subject_tokens: torch.Tensor | None = None,
        alpha: float = 0.0,
    ) -> torch.Tensor:
        """Predict the velocity.

        Args:
            x: ``(B, in_channels, T, h, w)`` the DiT input ``concat(z_t, y)``.
            t: ``(B,)`` flow time in [0, 1] (1 = noise).
            tokens: ``(B, J)`` prompt token ids (0 = padding).
            regions: ``(B, N, T, h, w)`` subject regions on the latent grid (disentanglement), or None.
            subject_tokens: ``(B, N, J)`` which prompt tokens name subject i, or None.
            alpha: disentanglement strength (0: off).

        Returns:
            ``(B, out_channels, T, h, w)``.

        Raises:
            ValueError: on a wrong channel count, latent size or too many frames.
        """
        b, c, tt, h, w = x.shape
        if c != self.in_channels:
            raise ValueError(f"x: expected {self.in_channels} channels, got {c}")
        if (h, w) != (self.height, self.width) or tt > self.max_frames:
            raise ValueError(f"x: latent {tt}x{h}x{w} exceeds the model's {self.max_frames}x{self.height}x{self.width}")
        seq = x.flatten(2).transpose(1, 2)  # (B, L, C) with L = T*h*w, frame-major
        pos = (self.pos_t[:tt, None, :] + self.pos_hw[None]).reshape(tt * h * w, self.dim)
        hid = self.embed(seq) + pos
        temb = self.temb(timestep_embedding(t, self.dim))
        ctx = self.text(tokens)
        pad = tokens == 0
        reg = None if regions is None else regions.flatten(2)  # (B, N, L)
        for blk in self.blocks:
            hid = blk(hid, temb, ctx, pad, reg, subject_tokens, alpha, (tt, h, w))
        out = self.out(self.norm_out(hid))  # (B, L, K)
        return out.transpose(1, 2).reshape(b, self.out_channels, tt, h, w)
