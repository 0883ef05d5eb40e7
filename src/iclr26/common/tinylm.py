"""A small decoder-only transformer language model with a pluggable feed-forward block.

Pre-norm blocks (LayerNorm → causal self-attention → residual; LayerNorm → feed-forward → residual), rotary
(RoPE, Su et al. 2021) or learned absolute positions, causal attention through
``torch.nn.functional.scaled_dot_product_attention``. The feed-forward block of each layer is built by a factory,
so a paper can swap the dense MLP for a mixture-of-experts block with its own router.

Glossary: ``B`` batch, ``T`` tokens (≤ ``context_len``), ``D`` model width, ``H`` heads, ``Dh = D / H`` head width,
``V`` vocabulary.

Feed-forward contract: ``ffn_factory(layer_index) -> nn.Module`` whose ``forward(x: (B, T, D))`` returns either a
tensor ``(B, T, D)`` or :class:`FFNOutput` ``(y, aux_loss)`` where ``aux_loss`` is a scalar already multiplied by its
coefficient (e.g. a load-balancing loss); the model sums the layers' ``aux_loss``. A module may define
``active_parameters() -> int`` (parameters used per token, for MoE) which parameter and FLOP counts then use.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from iclr26.common.config import require


@dataclass(frozen=True)
class TinyLMConfig:
    """Architecture of :class:`TinyLM`.

    Attributes:
        vocab_size: number of token ids (256 for byte-level text).
        context_len: maximum sequence length T.
        d_model: residual width D.
        n_layers: number of transformer blocks.
        n_heads: attention heads H (must divide D; with RoPE, D/H must be even).
        d_ff: hidden width of the default dense MLP.
        positional: ``"rope"`` (rotary, no parameters) or ``"learned"`` (absolute embeddings).
        dropout: dropout on attention and residual branches (0 for the deterministic small-scale runs).
        tie_embeddings: share the input embedding and output projection matrices.
    """

    vocab_size: int = 256
    context_len: int = 128
    d_model: int = 128
    n_layers: int = 4
    n_heads: int = 4
    d_ff: int = 512
    positional: Literal["rope", "learned"] = "rope"
    dropout: float = 0.0
    tie_embeddings: bool = True
    rope_base: float = field(default=10_000.0)

    def __post_init__(self) -> None:
        for name in ("vocab_size", "context_len", "d_model", "n_layers", "n_heads", "d_ff"):
            require(getattr(self, name) > 0, name, f"must be positive, got {getattr(self, name)}")
        require(self.d_model % self.n_heads == 0, "n_heads", f"must divide d_model={self.d_model}")
        if self.positional == "rope":
            require(
                (self.d_model // self.n_heads) % 2 == 0,
                "n_heads",
                "RoPE needs an even head width d_model/n_heads",
            )
        require(self.positional in ("rope", "learned"), "positional", "must be 'rope' or 'learned'")
        require(0.0 <= self.dropout < 1.0, "dropout", f"must lie in [0, 1), got {self.dropout}")


class FFNOutput(NamedTuple):
    """Output of a feed-forward block that also has an auxiliary loss.

    Attributes:
        y: the block output, ``(B, T, D)``.
        aux_loss: scalar auxiliary loss, already weighted by its coefficient, or None.
    """

    y: Tensor
    aux_loss: Tensor | None


class Generation(NamedTuple):
    """Output of :meth:`TinyLM.generate`.

    Attributes:
        tokens: ``(B, N)`` long, the new tokens of each row (its end token included), ``pad_id`` after the row's
            end; ``N <= max_new_tokens``.
        lengths: ``(B,)`` long, the number of new tokens of each row.
        finished: ``(B,)`` bool, whether the row produced the end token (else it stopped at the cap).
    """

    tokens: Tensor
    lengths: Tensor
    finished: Tensor

    def rows(self) -> list[list[int]]:
        """The new tokens of each row as lists (without the padding after the end)."""
        return [self.tokens[i, :n].tolist() for i, n in enumerate(self.lengths.tolist())]


class LMOutput(NamedTuple):
    """Output of :meth:`TinyLM.forward`.

    Attributes:
        logits: ``(B, T, V)`` next-token logits.
        loss: mean next-token cross-entropy over all positions (None without targets).
        aux_loss: sum of the feed-forward blocks' auxiliary losses (a zero scalar if none).
    """

    logits: Tensor
    loss: Tensor | None
    aux_loss: Tensor


class DenseMLP(nn.Module):
    """The dense feed-forward block: ``W2 · GELU(W1 x + b1) + b2``."""

    def __init__(self, d_model: int, d_ff: int, *, dropout: float = 0.0) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.drop(self.fc2(F.gelu(self.fc1(x))))


def rope_tables(seq_len: int, head_dim: int, base: float, *, device=None, dtype=torch.float32) -> tuple[Tensor, Tensor]:
    """cos/sin tables ``(T, Dh/2)`` of rotary embeddings: angle ``t · base^(-2i/Dh)`` for pair ``i``.

    The tables are computed once per ``(T, Dh, base, device, dtype)`` (in float64, then cast) and cached: rebuilding
    them in every forward pass was the whole gap between TinyLM and a learned-position model. They are
    built outside inference mode, so tables first made during generation can be saved for a later backward pass.
    Callers must not modify them in place.
    """
    return _rope_tables(int(seq_len), int(head_dim), float(base), torch.device(device or "cpu"), dtype)


@functools.lru_cache(maxsize=64)
def _rope_tables(seq_len: int, head_dim: int, base: float, device: torch.device, dtype: torch.dtype):
    with torch.inference_mode(False), torch.no_grad():
        inv_freq = base ** (-torch.arange(0, head_dim, 2, device=device, dtype=torch.float64) / head_dim)
        angles = torch.arange(seq_len, device=device, dtype=torch.float64)[:, None] * inv_freq[None, :]
        return angles.cos().to(dtype), angles.sin().to(dtype)


def apply_rope(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotate the pairs ``(x_{2i}, x_{2i+1})`` of ``x: (..., T, Dh)`` by the angles of ``cos/sin: (T, Dh/2)``.

    ``(x_{2i} + i·x_{2i+1}) · (cos + i·sin)``, i.e. ``(x_{2i} cos − x_{2i+1} sin, x_{2i} sin + x_{2i+1} cos)``. In
    float32/float64 this is one complex multiplication (the Llama reference form: equal to the real form up to one
    rounding, and 5-8x faster, which closes the gap to a learned-position model); other dtypes (bf16,
    fp16, which have no complex type here) take the real form, in their own precision.
    """
    if x.dtype in (torch.float32, torch.float64) and cos.dtype == x.dtype and x.stride(-1) == 1:
        pairs = torch.view_as_complex((x if _even_strides(x) else x.contiguous()).unflatten(-1, (-1, 2)))
        return torch.view_as_real(pairs * torch.complex(cos, sin)).flatten(-2)  # (..., T, Dh)
    x1, x2 = x[..., 0::2], x[..., 1::2]  # (..., T, Dh/2) each
    rotated = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)  # (..., T, Dh/2, 2)
    return rotated.flatten(-2)


def _even_strides(x: Tensor) -> bool:
    """Whether ``x``'s pairs can be viewed as complex numbers without a copy (every stride but the last even)."""
    return all(stride % 2 == 0 for stride in x.stride()[:-1])


@functools.lru_cache(maxsize=64)
def rope_rotations(seq_len: int, head_dim: int, base: float, device: torch.device, dtype: torch.dtype, n_heads: int):
    """The unit complex numbers ``cos + i·sin`` of :func:`rope_tables` and their conjugates.

    ``(T, Dh/2)`` each, broadcast over the heads; or, where a row of ``Dh/2`` complex numbers fills whole 128-byte
    blocks, ``(H, T, Dh/2)`` over a ``(T, H, Dh/2)`` memory layout, the layout of q and k inside the projection's
    output and of SDPA's gradients. Then the complex product runs over rows of ``H·Dh/2`` numbers instead of ``Dh/2``,
    which is faster forward and backward. Its values are
    the same bit for bit: the product is taken lane by lane in vectors (two 64-byte vectors per loop step at most),
    and with whole 128-byte rows no element falls to the scalar remainder loop, which rounds differently, in
    either layout. Code traced by ``torch.compile`` keeps the broadcast tables: it builds them in its graph at every
    call (Dynamo looks through the cache), where the copy per head costs more than it saves
    (``benchmarks/tinylm_step.py --compile``).
    """
    cos, sin = _rope_tables(seq_len, head_dim, base, device, dtype)
    with torch.inference_mode(False), torch.no_grad():
        rotations = torch.complex(cos, sin), torch.complex(cos, -sin)
        if (head_dim // 2) * rotations[0].element_size() % 128 or torch.compiler.is_compiling():
            return rotations
        return tuple(
            r[:, None, :].expand(seq_len, n_heads, head_dim // 2).contiguous().transpose(0, 1) for r in rotations
        )


class _RopeQKV(torch.autograd.Function):
    """``q, k, v`` from the fused projection's output ``h: (B·T, 3·D)``, RoPE applied to ``q, k`` in place.

    The same complex multiplication as :func:`apply_rope` on ``q, k`` (bit-identical outputs), written over the
    projection's output (``h`` is marked dirty and returned first; ``q, k, v`` are ``(B, H, T, Dh)`` views of it, laid
    out as a learned-position model's are), with a backward written by hand: the gradient of ``q, k`` is rotated back
    by the conjugate (what autograd computes for a complex product, ``grad · conj(w)``) straight into one buffer laid
    out like ``h``, where ``v``'s gradient is copied too. Autograd's own graph (slice, select, unbind) filled two zero
    tensors of the size of ``h``, added them and copied the sum into the projection's layout, and a rotation out of
    place wrote q and k to new memory: 1.6 % of a training step. ``h`` must be no one else's: the
    projection's forward hooks see it rotated.
    """

    @staticmethod
    def forward(ctx, h: Tensor, rot: Tensor, rot_conj: Tensor, batch: int, n_heads: int):  # noqa: ANN205
        ctx.mark_dirty(h)
        ctx.save_for_backward(rot_conj)
        T, Dh = h.shape[0] // batch, h.shape[1] // (3 * n_heads)
        ctx.shape = (batch, n_heads, T, Dh)
        qkv = h.view(batch, T, 3, n_heads, Dh).permute(2, 0, 3, 1, 4)  # (3, B, H, T, Dh), no copy
        pairs = torch.view_as_complex(qkv[:2].unflatten(-1, (-1, 2)))  # (2, B, H, T, Dh/2), no copy
        torch.mul(pairs, rot, out=pairs)
        q, k, v = qkv.unbind(0)
        return h, q, k, v

    @staticmethod
    def backward(ctx, _grad_h: Tensor | None, grad_q: Tensor | None, grad_k: Tensor | None, grad_v: Tensor | None):  # noqa: ANN205
        (rot_conj,) = ctx.saved_tensors
        B, H, T, Dh = ctx.shape
        buffer = torch.empty((B, T, 3, H, Dh), dtype=rot_conj.real.dtype, device=rot_conj.device)
        grad = buffer.permute(2, 0, 3, 1, 4)  # (3, B, H, T, Dh) over the projection's memory layout
        # Autograd multiplied a contiguous (…, T, Dh/2) complex tensor. The vectorised and the scalar complex
        # products round differently, so the product may be taken in another memory layout (SDPA's gradients come
        # as (B, T, H, Dh), and the buffer is strided) only where every row of Dh/2 complex numbers is a whole number
        # of 64-byte vectors (AVX-512 and narrower): then every element takes the vectorised product in both layouts.
        whole_vectors = (Dh * rot_conj.real.element_size()) % 64 == 0
        for i, g in enumerate((grad_q, grad_k)):
            if g is None:
                grad[i].zero_()
            elif whole_vectors:
                g = g if g.stride(-1) == 1 and _even_strides(g) else g.contiguous()
                out = torch.view_as_complex(grad[i].unflatten(-1, (-1, 2)))
                torch.mul(torch.view_as_complex(g.unflatten(-1, (-1, 2))), rot_conj, out=out)
            else:
                rotated = torch.view_as_complex(g.contiguous().unflatten(-1, (-1, 2))) * rot_conj
                grad[i].copy_(torch.view_as_real(rotated).flatten(-2))
        if grad_v is None:
            grad[2].zero_()
        else:
            grad[2].copy_(grad_v)
        return buffer.view(B * T, 3 * H * Dh), None, None, None, None


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention (fused QKV projection, SDPA with ``is_causal=True``)."""

    def __init__(self, config: TinyLMConfig) -> None:
        super().__init__()
        self.n_heads = config.n_heads
        self.qkv = nn.Linear(config.d_model, 3 * config.d_model)
        self.proj = nn.Linear(config.d_model, config.d_model)
        self.dropout = config.dropout
        self.use_rope = config.positional == "rope"

    def forward(self, x: Tensor, rope: tuple[Tensor, ...] | None) -> Tensor:
        B, T, D = x.shape
        h = self.qkv(x.reshape(B * T, D))  # (B·T, 3·D), a tensor of its own (not a view) for the in-place rotation
        qkv = h.view(B, T, 3, self.n_heads, D // self.n_heads).permute(2, 0, 3, 1, 4)  # (3, B, H, T, Dh)
        if rope is not None and len(rope) == 4 and qkv.dtype == rope[0].dtype:
            # float32/64 (not under autocast, which makes the projection bf16/fp16): the fused rotation
            _, q, k, v = _RopeQKV.apply(h, rope[2], rope[3], B, self.n_heads)
        elif rope is not None:
            q, k = apply_rope(qkv[:2], rope[0], rope[1]).unbind(0)  # one rotation for q and k together
            v = qkv[2]
        else:
            q, k, v = qkv.unbind(0)
        y = F.scaled_dot_product_attention(
            q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0.0
        )  # (B, H, T, Dh)
        return self.proj(y.transpose(1, 2).reshape(B, T, D))


class Block(nn.Module):
    """Pre-norm transformer block: ``x + Attn(LN(x))`` then ``x + FFN(LN(x))``."""

    def __init__(self, config: TinyLMConfig, ffn: nn.Module) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(config.d_model)
        self.attn = CausalSelfAttention(config)
        self.ln2 = nn.LayerNorm(config.d_model)
        self.ffn = ffn
        self.drop = nn.Dropout(config.dropout)

    def forward(self, x: Tensor, rope: tuple[Tensor, ...] | None) -> tuple[Tensor, Tensor | None]:
        x = x + self.drop(self.attn(self.ln1(x), rope))
        out = self.ffn(self.ln2(x))
        y, aux = (out.y, out.aux_loss) if isinstance(out, FFNOutput) else (out, None)
        if y.shape != x.shape:
            raise ValueError(f"feed-forward block returned shape {tuple(y.shape)}, expected {tuple(x.shape)}")
        return x + self.drop(y), aux


class TinyLM(nn.Module):
    """Decoder-only transformer LM.

    Args:
        config: the architecture.
        ffn_factory: ``layer_index -> nn.Module`` building each block's feed-forward module; default
            :class:`DenseMLP` ``(d_model, d_ff)``.

    Shapes:
        ``forward(idx: (B, T) long, targets: (B, T) long | None) -> LMOutput(logits (B, T, V), loss, aux_loss)``.
    """

    def __init__(self, config: TinyLMConfig, ffn_factory: Callable[[int], nn.Module] | None = None) -> None:
        super().__init__()
        self.config = config
        factory = ffn_factory or (lambda _i: DenseMLP(config.d_model, config.d_ff, dropout=config.dropout))
        self.tok_emb = nn.Embedding(config.vocab_size, config.d_model)
        self.pos_emb = nn.Embedding(config.context_len, config.d_model) if config.positional == "learned" else None
        self.blocks = nn.ModuleList(Block(config, factory(i)) for i in range(config.n_layers))
        self.ln_f = nn.LayerNorm(config.d_model)
        self.head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.apply(self._init_weights)
        if config.tie_embeddings:
            self.head.weight = self.tok_emb.weight
        # GPT-2 scaled init of the residual output projections: std 0.02 / sqrt(2 L).
        for block in self.blocks:
            nn.init.normal_(block.attn.proj.weight, std=0.02 / math.sqrt(2 * config.n_layers))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)

    def forward(self, idx: Tensor, targets: Tensor | None = None) -> LMOutput:
        if idx.dim() != 2 or idx.dtype != torch.long:
            raise ValueError(f"idx must be a (B, T) long tensor, got shape {tuple(idx.shape)} dtype {idx.dtype}")
        B, T = idx.shape
        if T > self.config.context_len:
            raise ValueError(f"sequence length {T} exceeds context_len={self.config.context_len}")
        if targets is not None and targets.shape != idx.shape:
            raise ValueError(f"targets shape {tuple(targets.shape)} must equal idx shape {tuple(idx.shape)}")
        x = self.tok_emb(idx)  # (B, T, D)
        rope = None
        if self.pos_emb is not None:
            x = x + self.pos_emb(torch.arange(T, device=idx.device))
        else:
            rope = rope_tables(
                T,
                self.config.d_model // self.config.n_heads,
                self.config.rope_base,
                device=idx.device,
                dtype=x.dtype,
            )
            if x.dtype in (torch.float32, torch.float64):
                rope = rope + rope_rotations(
                    T,
                    self.config.d_model // self.config.n_heads,
                    float(self.config.rope_base),
                    x.device,
                    x.dtype,
                    self.config.n_heads,
                )
        aux_total = x.new_zeros(())
        for block in self.blocks:
            x, aux = block(x, rope)
            if aux is not None:
                aux_total = aux_total + aux
        logits = self.head(self.ln_f(x))  # (B, T, V)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T))
        return LMOutput(logits=logits, loss=loss, aux_loss=aux_total)

    @torch.no_grad()
    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        *,
        max_new_tokens: int,
        eos_id: int,
        pad_id: int = 0,
        temperature: float = 0.0,
        generator: torch.Generator | None = None,
    ) -> Generation:
        """Sample (``temperature > 0``) or greedily decode (``0``) a continuation of each prompt, batched, with a
        key/value cache.

        Prompts are left-padded with ``pad_id``; attention never sees a padded key (a padded query sees only
        itself), and RoPE depends on relative positions only, so each row's logits equal those of its unpadded
        sequence through :meth:`forward` up to float rounding. Steps: one pass over the padded prompts fills the
        cache of every block and gives the first next-token logits; then each step draws a token per row,
        ``softmax(logits / temperature)`` from ``generator`` or the argmax, and runs the new tokens alone against
        the cache. A row ends at ``eos_id`` (kept) or after ``max_new_tokens``; a finished row is fed ``pad_id``.
        Everything runs on the model's device; sampling draws on ``generator``'s device (the CPU for
        ``torch.Generator()``), so a seeded generator draws the same tokens wherever the model is.

        Args:
            prompts: token ids of each row (at least one token each).
            max_new_tokens: the most new tokens per row (0 gives empty rows).
            eos_id: the end token.
            pad_id: the padding id of the prompts and of finished rows.
            temperature: 0 for greedy decoding, else the sampling temperature.
            generator: the sampling draws (torch's default generator if None).

        Returns:
            :class:`Generation`.

        Raises:
            ValueError: for a model with learned positions (only RoPE keys are cached), no prompt or an empty one,
                a negative cap or temperature, or a prompt + cap longer than ``context_len``.
        """
        cfg = self.config
        if cfg.positional != "rope":
            raise ValueError("generate caches the keys of RoPE models only; build the model with positional='rope'")
        if not prompts or any(len(p) == 0 for p in prompts):
            raise ValueError("generate needs at least one prompt, each of at least one token")
        if max_new_tokens < 0 or temperature < 0:
            raise ValueError(f"max_new_tokens and temperature must be >= 0, got {max_new_tokens}, {temperature}")
        B, P = len(prompts), max(len(p) for p in prompts)
        S = P + max_new_tokens
        if S > cfg.context_len:
            raise ValueError(f"prompt ({P}) + max_new_tokens ({max_new_tokens}) exceeds context_len={cfg.context_len}")
        device = self.tok_emb.weight.device
        ids = torch.full((B, P), pad_id, dtype=torch.long)
        valid = torch.zeros(B, S, dtype=torch.bool)  # (B, S): real (non-padding) key positions
        for i, p in enumerate(prompts):
            ids[i, P - len(p) :] = torch.tensor(list(p), dtype=torch.long)
            valid[i, P - len(p) : P] = True
        ids, valid = ids.to(device), valid.to(device)
        cache = _KVCache.empty(self, B, S)
        was_training = self.training
        self.eval()
        logits = cache.step(ids, 0, valid)  # (B, V)
        tokens = torch.full((B, max_new_tokens), pad_id, dtype=torch.long, device=device)
        done = torch.zeros(B, dtype=torch.bool, device=device)
        lengths = torch.zeros(B, dtype=torch.long, device=device)
        for step in range(max_new_tokens):
            if temperature > 0:
                probs = torch.softmax(logits.float() / temperature, dim=-1)  # (B, V)
                on = generator.device if generator is not None else probs.device
                nxt = torch.multinomial(probs.to(on), 1, generator=generator)[:, 0].to(device)
            else:
                nxt = logits.argmax(dim=-1)  # (B,)
            nxt = torch.where(done, pad_id, nxt)
            tokens[:, step] = nxt
            lengths += (~done).long()
            done = done | (nxt == eos_id)
            if bool(done.all()) or step == max_new_tokens - 1:
                break
            valid[:, P + step] = True
            logits = cache.step(torch.where(done, pad_id, nxt)[:, None], P + step, valid)
        self.train(was_training)
        width = int(lengths.max()) if B else 0
        return Generation(tokens[:, :width], lengths, done)

    def num_params(self, *, active: bool = False, embeddings: bool = False) -> int:
        """Parameter count.

        Args:
            active: count only the parameters a token uses (feed-forward modules with ``active_parameters()``
                report theirs; e.g. top-k experts of an MoE block).
            embeddings: include the token/position embeddings (a tied output head is counted once, with them).
        """
        total = 0
        for block in self.blocks:
            ffn_params = sum(p.numel() for p in block.ffn.parameters())
            block_params = sum(p.numel() for p in block.parameters())
            if active and hasattr(block.ffn, "active_parameters"):
                block_params += block.ffn.active_parameters() - ffn_params
            total += block_params
        total += sum(p.numel() for p in self.ln_f.parameters())
        if not self.config.tie_embeddings:
            total += self.head.weight.numel()
        if embeddings:
            total += self.tok_emb.weight.numel() + (self.pos_emb.weight.numel() if self.pos_emb is not None else 0)
        return total

    def flops_per_token(self, seq_len: int | None = None) -> float:
        """Training FLOPs per token, forward + backward: ``6 N + 6 L T D`` (Kaplan et al. 2020, Table 1).

        ``N`` counts active non-embedding parameters plus the output head (tied or not, the head's matmul is done);
        ``T`` is ``seq_len`` (default ``context_len``).
        """
        T = seq_len or self.config.context_len
        n = self.num_params(active=True) + (self.head.weight.numel() if self.config.tie_embeddings else 0)
        return 6.0 * n + 6.0 * self.config.n_layers * T * self.config.d_model


@dataclass
class _KVCache:
    """The keys and values of every block for :meth:`TinyLM.generate`, preallocated for ``S`` positions.

    Attributes:
        model: the model whose blocks' own modules (``ln1``, ``attn.qkv``, ``attn.proj``, ``ln2``, ``ffn``) are run.
        keys, values: ``(L, B, H, S, Dh)``; keys are stored rotated.
        cos, sin: ``(S, Dh/2)`` RoPE tables.
    """

    model: TinyLM
    keys: Tensor
    values: Tensor
    cos: Tensor
    sin: Tensor

    @classmethod
    def empty(cls, model: TinyLM, batch: int, length: int) -> _KVCache:
        cfg, weight = model.config, model.tok_emb.weight
        head_dim = cfg.d_model // cfg.n_heads
        keys = torch.zeros(cfg.n_layers, batch, cfg.n_heads, length, head_dim, device=weight.device, dtype=weight.dtype)
        cos, sin = rope_tables(length, head_dim, cfg.rope_base, device=weight.device, dtype=weight.dtype)
        return cls(model, keys, torch.zeros_like(keys), cos, sin)

    def step(self, ids: Tensor, start: int, valid: Tensor) -> Tensor:
        """Run tokens ``ids: (B, n)`` at positions ``start .. start + n − 1`` against the cache (and add them to it);
        ``valid: (B, S)`` marks real keys. Returns the next-token logits of the last position, ``(B, V)``."""
        model = self.model
        B, n = ids.shape
        H, D = model.config.n_heads, model.config.d_model
        x = model.tok_emb(ids)  # (B, n, D)
        q_pos = torch.arange(start, start + n, device=ids.device)
        k_pos = torch.arange(start + n, device=ids.device)
        causal = k_pos[None, :] <= q_pos[:, None]  # (n, start + n)
        # causal, real keys only, and each position sees itself (a padded query never has an empty row)
        allowed = (causal[None, None] & valid[:, None, None, : start + n]) | (k_pos[None, :] == q_pos[:, None])
        cos, sin = self.cos[start : start + n], self.sin[start : start + n]  # (n, Dh/2)
        for layer, block in enumerate(model.blocks):
            q, k, v = block.attn.qkv(block.ln1(x)).split(D, dim=-1)
            q, k, v = (t.view(B, n, H, D // H).transpose(1, 2) for t in (q, k, v))  # (B, H, n, Dh)
            q = apply_rope(q, cos, sin)
            self.keys[layer, :, :, start : start + n] = apply_rope(k, cos, sin)
            self.values[layer, :, :, start : start + n] = v
            y = F.scaled_dot_product_attention(
                q, self.keys[layer, :, :, : start + n], self.values[layer, :, :, : start + n], attn_mask=allowed
            )  # (B, H, n, Dh)
            x = x + block.attn.proj(y.transpose(1, 2).reshape(B, n, D))
            out = block.ffn(block.ln2(x))
            x = x + (out.y if isinstance(out, FFNOutput) else out)
        return model.head(model.ln_f(x[:, -1]))  # (B, V)
