"""Per-stage cost of the biasfree reproduction on SmolLM2-135M-Instruct (one thread); run on demand.

Measures one vanilla generation batch (32 items), one CoT batch, one SFT step and one DPO step at the cpu preset's
sizes and dtype, and prints the first responses with the judge's labels, so the preset's item and step counts can
be planned. ``--clock cpu`` (the default) times by this thread's CPU time (``time.thread_time``), which other jobs on
a shared machine inflate far less than the wall time (``--clock wall``).

Usage: ``python benchmarks/biasfree_budget.py --clock cpu``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from iclr26.biasfree import (
    cot_messages,
    generate_items,
    generate_pairs,
    judge_bbq,
    option_order,
    train_pairs,
    vanilla_messages,
)
from iclr26.catalog import load_experiment
from iclr26.common.pretrained import load_pretrained


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clock", choices=["wall", "cpu"], default="cpu", help="cpu: this thread's CPU time")
    args = parser.parse_args()
    clock = time.thread_time if args.clock == "cpu" else time.perf_counter
    torch.set_num_threads(1)
    config = load_experiment("biasfree").config_cls()  # the cpu preset's defaults
    lm = load_pretrained(dtype=config.dtype)
    items = generate_items(4, seed=0)[:32]
    rng = np.random.default_rng(0)
    orders = [option_order(it, rng) for it in items]
    for name, build, budget in (("vanilla", vanilla_messages, config.max_new_tokens),
                                ("cot", cot_messages, config.cot_max_new_tokens)):  # fmt: skip
        t0 = clock()
        gen = lm.generate([build(it, o) for it, o in zip(items, orders, strict=True)], max_new_tokens=budget)
        dt = clock() - t0
        labels = [judge_bbq(r, it.biased_answer, it.anti_answer) for it, r in zip(items, gen.texts, strict=True)]
        print(f"{name}: {dt:.1f} s ({args.clock}) for 32 items, {gen.n_new_tokens} new tokens; labels "
              f"{ {k: labels.count(k) for k in set(labels)} }")  # fmt: skip
        for r, lab in list(zip(gen.texts, labels, strict=True))[:4]:
            print(f"   [{lab}] {r!r}")
    pairs = generate_pairs()
    for method in ("sft", "dpo"):
        fresh = load_pretrained(dtype=config.dtype)
        t0 = clock()
        log = train_pairs(fresh, pairs, method=method, steps=2, batch_size=config.train_batch, lr=config.lr)
        print(f"{method}: {(clock() - t0) / 2:.1f} s ({args.clock}) per step (incl. setup), losses {log.losses}")


if __name__ == "__main__":
    main()
