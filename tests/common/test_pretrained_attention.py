"""The fused-forward/explicit-backward attention against ``sdpa``: same outputs, same gradients."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers")

from iclr26.common.pretrained import TINY_LLAMA, random_llama  # noqa: E402
from iclr26.common.pretrained.attention import NAME, fused_forward_explicit_backward, register  # noqa: E402

PROMPTS = ["Explain the water cycle in a few sentences.", "hi", "What is DNA, briefly?"]
COMPLETIONS = ["Water evaporates, condenses and falls as rain.", "Hello! How can I help you today?", "A molecule."]


def scores_and_grads(lm, implementation):
    """Per-token log-probs and every parameter's gradient of their sum, with the model attending through
    ``implementation`` (left padding: rows of different lengths in one micro-batch)."""
    lm.model.set_attn_implementation(implementation)
    lm.model.zero_grad(set_to_none=True)
    scored = lm.token_logprobs(PROMPTS, COMPLETIONS, micro_batch_size=3, grad=True)
    scored.total.sum().backward()
    lm.model.set_attn_implementation("sdpa")
    return scored.logprobs.detach(), [p.grad.clone() for p in lm.model.parameters()]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_forward_is_sdpa_and_backward_its_gradient(dtype):
    lm = random_llama(TINY_LLAMA, seed=3, dtype=dtype)
    assert register() == NAME
    reference, expected = scores_and_grads(lm, "sdpa")
    scores, grads = scores_and_grads(lm, NAME)
    assert torch.equal(scores, reference)  # the forward is sdpa's, bit for bit
    # float32: the two backward passes differ by summation order only; bfloat16: by the rounding of the recomputed
    # attention weights to bfloat16 (eager attention's), a few units of its 2^-8 precision relative to the gradient
    bound = 1e-5 if dtype == "float32" else 2e-2
    for g, e in zip(grads, expected, strict=True):
        assert torch.isfinite(g).all()
        assert float((g.float() - e.float()).norm() / e.float().norm()) <= bound


def test_without_gradient_or_with_a_longer_key_it_is_plain_sdpa():
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    lm = random_llama(TINY_LLAMA, seed=1)
    module = lm.model.model.layers[0].self_attn
    heads, groups, d = TINY_LLAMA.heads, TINY_LLAMA.heads // TINY_LLAMA.kv_heads, TINY_LLAMA.hidden // TINY_LLAMA.heads
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, heads, 5, d, generator=g, requires_grad=True)
    k, v = (torch.randn(2, heads // groups, 7, d, generator=g, requires_grad=True) for _ in range(2))
    out, _ = fused_forward_explicit_backward(module, q, k, v, None)  # a cache longer than the queries
    assert out.grad_fn.name() != "_FusedForwardExplicitBackwardBackward"
    with torch.no_grad():
        plain, _ = fused_forward_explicit_backward(module, q, k[:, :, :5], v[:, :, :5], None)
    assert plain.grad_fn is None
    assert torch.equal(plain, sdpa_attention_forward(module, q, k[:, :, :5], v[:, :, :5], None)[0])
    out, _ = fused_forward_explicit_backward(module, q, k[:, :, :5], v[:, :, :5], None)
    assert out.grad_fn.name() == "_FusedForwardExplicitBackwardBackward"
    assert torch.equal(out.detach(), plain)


@pytest.mark.parametrize("extra", [{"dropout": 0.1}, {"position_bias": "zeros"}], ids=["dropout", "position_bias"])
def test_dropout_or_a_position_bias_leave_the_backward_to_sdpa(extra):
    lm = random_llama(TINY_LLAMA, seed=1)
    module = lm.model.model.layers[0].self_attn
    heads, kv_heads, d = TINY_LLAMA.heads, TINY_LLAMA.kv_heads, TINY_LLAMA.hidden // TINY_LLAMA.heads
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, heads, 5, d, generator=g, requires_grad=True)
    k, v = (torch.randn(2, kv_heads, 5, d, generator=g, requires_grad=True) for _ in range(2))
    if extra.get("position_bias") == "zeros":
        extra = {"position_bias": torch.zeros(2, heads, 5, 5)}
    out, _ = fused_forward_explicit_backward(module, q, k, v, None, **extra)
    assert out.grad_fn is not None
    assert out.grad_fn.name() != "_FusedForwardExplicitBackwardBackward"
    # the same call without the extra argument does take the explicit backward
    out, _ = fused_forward_explicit_backward(module, q, k, v, None)
    assert out.grad_fn.name() == "_FusedForwardExplicitBackwardBackward"
