"""A tiny random Llama with a byte-level tokenizer and the ChatML template, for smoke runs and tests.

It has SmolLM2's special tokens (``<|endoftext|>``, ``<|im_start|>``, ``<|im_end|>`` at ids 0–2) and the same
chat format, so every code path of the reproduction (chat prompts, generation, LoRA, DPO, task vectors) runs on it in
a fraction of a second; its outputs are random bytes, so nothing it scores means anything.
"""

from __future__ import annotations

import torch

from iclr26.common.pretrained import ModelSource, PretrainedLM

__all__ = ["tiny_random_lm"]

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + "
    "'\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def tiny_random_lm(*, seed: int = 0, hidden: int = 16, layers: int = 2) -> PretrainedLM:
    """A random-init ``LlamaForCausalLM`` (width ``hidden``, ``layers`` blocks, tied embeddings, float32) wrapped as
    a :class:`~iclr26.common.pretrained.PretrainedLM`; the weights are drawn from torch's generator seeded with
    ``seed`` inside ``fork_rng``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    table = bytes_to_unicode()
    vocab = {token: i for i, token in enumerate(SPECIALS + [table[b] for b in range(256)])}
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    backend.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<|im_start|>",
                                        eos_token="<|im_end|>", pad_token="<|im_end|>",
                                        additional_special_tokens=["<|endoftext|>"])  # fmt: skip
    tokenizer.chat_template = CHATML
    config = LlamaConfig(vocab_size=len(vocab), hidden_size=hidden, intermediate_size=2 * hidden,
                         num_hidden_layers=layers, num_attention_heads=2, num_key_value_heads=1,
                         max_position_embeddings=2048, tie_word_embeddings=True, bos_token_id=1, eos_token_id=2,
                         pad_token_id=2)  # fmt: skip
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config).eval()
    source = ModelSource("tiny-random-llama", "<in memory>", "hf", None, "folder", None, 0.0)
    return PretrainedLM(model, tokenizer, source=source, dtype="float32")
