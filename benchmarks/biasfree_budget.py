"""Per-stage cost of the biasfree reproduction on SmolLM2-135M-Instruct (one thread, bf16); run on demand.

Measures one vanilla generation batch (32 items), one CoT batch, one SFT step and one DPO step at the cpu preset's
sizes, and prints the first responses with the judge's labels, so the preset's item and step counts can be planned.
Usage: ``ICLR26_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/biasfree_budget.py``.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from iclr26.biasfree.experiment import BiasFreeConfig
from iclr26.biasfree.items import generate_items, generate_pairs
from iclr26.biasfree.judge import judge_bbq
from iclr26.biasfree.prompts import cot_messages, option_order, vanilla_messages
from iclr26.biasfree.training import train_pairs
from iclr26.common.pretrained import load_pretrained


def main() -> None:
    torch.set_num_threads(1)
    config = BiasFreeConfig()
    lm = load_pretrained(dtype=config.dtype)
    items = generate_items(4, seed=0)[:32]
    rng = np.random.default_rng(0)
    orders = [option_order(it, rng) for it in items]
    for name, build, budget in (("vanilla", vanilla_messages, config.max_new_tokens),
                                ("cot", cot_messages, config.cot_max_new_tokens)):  # fmt: skip
        t0 = time.process_time()
        gen = lm.generate([build(it, o) for it, o in zip(items, orders, strict=True)], max_new_tokens=budget)
        dt = time.process_time() - t0
        labels = [judge_bbq(r, it.biased_answer, it.anti_answer) for it, r in zip(items, gen.texts, strict=True)]
        print(f"{name}: {dt:.1f} CPU s for 32 items, {gen.n_new_tokens} new tokens; labels "
              f"{ {k: labels.count(k) for k in set(labels)} }")  # fmt: skip
        for r, lab in list(zip(gen.texts, labels, strict=True))[:4]:
            print(f"   [{lab}] {r!r}")
    pairs = generate_pairs()
    for method in ("sft", "dpo"):
        fresh = load_pretrained(dtype=config.dtype)
        t0 = time.process_time()
        log = train_pairs(fresh, pairs, method=method, steps=2, batch_size=config.train_batch, lr=config.lr)
        print(f"{method}: {(time.process_time() - t0) / 2:.1f} CPU s per step (incl. setup), losses {log.losses}")


if __name__ == "__main__":
    main()
