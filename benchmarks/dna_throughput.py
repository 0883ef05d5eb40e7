"""Throughput of DNA's translators on one CPU thread: SmolLM2-135M-Instruct few-shot and the small model.

Run: ``ICLR26_THREADS=1 python benchmarks/dna_throughput.py``. Prints CPU seconds per call for clause, quantifier
and statement requests (the prompts the reproduction builds), and a few replies, so the ``n_pretrained`` budget of
``iclr26 run dna`` can be planned from measured numbers. Not part of any verdict.
"""

from __future__ import annotations

import time

import torch


def main() -> None:
    from iclr26.common.pretrained import load_pretrained
    from iclr26.dna.config import DNAConfig
    from iclr26.dna.corpus import gold_library
    from iclr26.dna.experiment import corpus_data, prompt_book, reply_budgets
    from iclr26.dna.pipeline import decompose_informal
    from iclr26.dna.translators import PretrainedTranslator, Request

    torch.set_num_threads(1)
    config = DNAConfig(n_train=60, n_test=8, test_max_clauses=4)
    data = corpus_data(config)
    lm = load_pretrained(dtype="bfloat16")
    book = prompt_book(config, data.train, gold_library())
    t = PretrainedTranslator(lm, book, max_new_tokens=reply_budgets(config, pretrained=True))
    items = data.test[:8]
    trees = [decompose_informal(it.informal) for it in items]
    cases = {
        "clause": [Request(tr.premises[0], "clause", True) for tr in trees],
        "binders": [Request(tr.binders_text, "binders", True) for tr in trees],
        "statement": [Request(it.informal, "statement", False) for it in items],
    }
    for kind, reqs in cases.items():
        start = time.process_time()
        replies = t.translate(reqs)
        cpu = time.process_time() - start
        prompt = sum(r.prompt_tokens for r in replies) / len(replies)
        new = sum(r.completion_tokens for r in replies) / len(replies)
        print(f"{kind:9s}: {cpu / len(reqs):.2f} CPU s/call, {prompt:.0f} prompt + {new:.0f} new tokens per call")
        for req, rep in list(zip(reqs, replies, strict=True))[:2]:
            print(f"   {req.text[:70]!r} -> {rep.text[:90]!r}")


if __name__ == "__main__":
    main()
