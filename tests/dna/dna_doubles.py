"""Test doubles of the DNA tests: a scripted translator that answers with gold translations, a tiny chat LM."""

from __future__ import annotations

from iclr26.dna.corpus import binders_formal, gold_library
from iclr26.dna.dsl import expand, parse_statement, render_statement
from iclr26.dna.pipeline import decompose_informal, gold_clause_target, parse_clause
from iclr26.dna.translators import Reply, Request


def gold_answer(req: Request, statements: dict[str, str] | None = None) -> str:
    """The gold translation of a request (statements looked up in ``statements``: informal -> gold formal)."""
    gold = gold_library().definitions
    if req.kind == "clause":
        return gold_clause_target(parse_clause(req.text), library=req.library, gold=gold)
    if req.kind == "binders":
        return binders_formal(decompose_informal(f"Let {req.text}. Assume x. Then y.").binders)
    st = parse_statement((statements or {})[req.text])
    if not req.library:
        st = type(st)(st.binders, expand(st.premises, gold), expand(st.conclusion, gold))
    return render_statement(st)


class Scripted:
    """A translator that answers from a function of the request and records every request (one call each)."""

    def __init__(self, answer) -> None:
        self.answer = answer
        self.requests: list[Request] = []

    def translate(self, requests):
        self.requests.extend(requests)
        return [Reply(self.answer(r), 3, 2) for r in requests]


def tiny_chat_lm(folder):
    """A random-init 2-layer Llama with a byte-level ChatML tokenizer, saved to ``folder`` and loaded through
    :func:`iclr26.common.pretrained.load_pretrained` (the same kind of model ``tests/common`` builds)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    from iclr26.common.pretrained import load_pretrained

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    table = bytes_to_unicode()
    vocab = {t: i for i, t in enumerate(specials + [table[b] for b in range(256)])}
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    backend.decoder = decoders.ByteLevel()
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<|im_start|>", eos_token="<|im_end|>",
                                  pad_token="<|im_end|>", additional_special_tokens=["<|endoftext|>"])  # fmt: skip
    tok.chat_template = (
        "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
        "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
    )
    config = LlamaConfig(vocab_size=len(vocab), hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=2048,
                         tie_word_embeddings=True, bos_token_id=1, eos_token_id=2, pad_token_id=2)  # fmt: skip
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = LlamaForCausalLM(config)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return load_pretrained(folder, dtype="float32")
