"""Data-parallel LoRA training steps of ``iclr26.common.pretrained`` (DDP and FSDP2) under torchrun, gloo, 2 ranks.

The launched script (``SCRIPT``) trains a tiny random Llama (``tiny_llama_dir``, float32) with LoRA: two
:func:`sft_step`, one :func:`grpo_step` on a rollout sampled with per-prompt seeds and one :func:`dpo_step`. Each
rank passes its shard of the 4 prompts (:func:`~iclr26.common.distributed.shard_range`). What the 2-rank run must
equal: the same script in one process on the whole batch, i.e. identical sampled completions (per-prompt seeds make
a prompt's samples independent of its batch) and the same losses and adapter weights up to float summation order
(the halves' gradients are averaged by an all-reduce instead of summed in one backward).
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from iclr26.common.pretrained import add_lora, distribute, load_pretrained, sample_rollout
from tests.conftest import TORCHRUN, dist_env

SCRIPT = r"""
import sys

import torch

from iclr26.common import distributed as D
from iclr26.common.pretrained import (
    adapters_disabled, add_lora, distribute, dpo_step, grpo_step, load_pretrained, sample_rollout, sft_step,
)

mode, folder, out = sys.argv[1:4]
world = D.world_from_env()
if world.is_distributed:
    D.init_process_group(world, timeout=60)
lm = add_lora(load_pretrained(folder, dtype="float32"), r=2, alpha=4.0, seed=1)
if mode != "none":
    distribute(lm, mode=mode)
opt = torch.optim.AdamW([p for p in lm.model.parameters() if p.requires_grad], lr=1e-2)
prompts = ["add one", "say hi", "count to three", "name a colour"]
completions = ["two", "hello there", "one two three", "blue"]
mine = D.shard_range(len(prompts), world.rank, world.size)
sft = [
    sft_step(lm, opt, prompts[mine.start : mine.stop], completions[mine.start : mine.stop], micro_batch_size=1)
    for _ in range(2)
]
seeds = [11, 12, 13, 14]
roll = sample_rollout(
    lm, prompts[mine.start : mine.stop], group_size=3, max_new_tokens=5, temperature=1.0,
    prompt_seeds=seeds[mine.start : mine.stop],
)
rewards = torch.tensor([float(len(t) % 3) for t in roll.texts]).reshape(-1, 3)
grpo = grpo_step(lm, opt, roll, rewards=rewards, micro_batch_size=2, aggregation="token")
chosen, rejected = ["three", "hi", "one two three", "red"], ["zero", "bye", "three two one", "loud"]
shard = [x[mine.start : mine.stop] for x in (prompts, chosen, rejected)]
with adapters_disabled(lm):
    refs = [lm.sequence_logprobs(shard[0], replies, add_eos=True) for replies in shard[1:]]
dpo = dpo_step(lm, opt, *shard, *refs, beta=0.5, micro_batch_size=1)
state = {}
for name, p in lm.model.named_parameters():
    if p.requires_grad:
        full = p.full_tensor() if hasattr(p, "full_tensor") else p
        state[name.replace("_fsdp_wrapped_module.", "")] = full.detach().cpu().clone()
ids = [roll.completion_ids]
if world.is_distributed:
    ids = [None] * world.size
    torch.distributed.all_gather_object(ids, roll.completion_ids)
if world.is_main:
    result = {"sft": sft, "grpo": grpo, "dpo": dpo, "ids": sum(ids, []), "state": state, "parallel": lm.parallel}
    torch.save(result, out)
D.destroy_process_group(synchronise=True)
"""

# Tolerance of losses and adapter weights, 2 ranks vs 1 (float32): the same per-sequence gradients summed in
# another order move them by ~1e-8 (measured: <= 6e-8 on the weights after 3 AdamW steps); a wrong weighting of a
# rank's shard (e.g. a local instead of the global token count) moves the losses by > 1e-2.
TOLERANCE = 1e-5


def launch(script, mode: str, folder, out, nproc: int) -> subprocess.CompletedProcess[str]:
    launch = [sys.executable] if nproc == 1 else [*TORCHRUN, f"--nproc_per_node={nproc}"]
    return subprocess.run(
        [*launch, str(script), mode, str(folder), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env=dist_env(),
        check=False,
    )


@pytest.fixture(scope="module")
def single_step(tiny_llama_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("dp-single")
    script = folder / "steps.py"
    script.write_text(SCRIPT)
    proc = launch(script, "none", tiny_llama_dir, folder / "one.pt", 1)
    assert proc.returncode == 0, proc.stderr
    return script, torch.load(folder / "one.pt", weights_only=False)


@pytest.mark.slow  # two torchrun launches of 2 interpreters each (~30 s)
@pytest.mark.parametrize("mode", ["ddp", "fsdp"])
def test_two_ranks_take_the_one_process_step_on_the_whole_batch(mode, single_step, tiny_llama_dir, tmp_path):
    script, one = single_step
    proc = launch(script, mode, tiny_llama_dir, tmp_path / "two.pt", 2)
    assert proc.returncode == 0, proc.stderr
    two = torch.load(tmp_path / "two.pt", weights_only=False)
    assert one["parallel"] is None and two["parallel"] == mode
    assert two["ids"] == one["ids"]  # per-prompt seeds: the same completions whichever rank drew them
    for a, b in zip(two["sft"], one["sft"], strict=True):
        assert a.n_tokens == b.n_tokens and a.loss == pytest.approx(b.loss, abs=TOLERANCE)
        assert a.grad_norm == pytest.approx(b.grad_norm, rel=1e-4)
    assert two["grpo"].n_tokens == one["grpo"].n_tokens
    for name in ("loss", "surrogate", "ratio_mean", "clip_fraction"):
        assert getattr(two["grpo"], name) == pytest.approx(getattr(one["grpo"], name), abs=TOLERANCE), name
    assert two["dpo"].n_pairs == one["dpo"].n_pairs == 4 and two["dpo"].accuracy == one["dpo"].accuracy
    for name in ("loss", "margin"):
        assert getattr(two["dpo"], name) == pytest.approx(getattr(one["dpo"], name), abs=TOLERANCE), name
    assert two["state"].keys() == one["state"].keys() and len(one["state"]) > 0
    for name, value in one["state"].items():
        torch.testing.assert_close(two["state"][name], value, atol=TOLERANCE, rtol=0)


def test_per_prompt_seeds_make_a_prompts_samples_independent_of_its_batch(tiny_lm):
    # what the data-parallel equivalence rests on: sampling prompts [a, b] with seeds [s_a, s_b] gives, for b, what
    # sampling [b] alone with [s_b] gives; one stream for the batch (seed=) would not
    prompts = ["add one", "say hi"]
    both = sample_rollout(tiny_lm, prompts, group_size=2, max_new_tokens=6, temperature=1.0, prompt_seeds=[5, 9])
    alone = sample_rollout(tiny_lm, prompts[1:], group_size=2, max_new_tokens=6, temperature=1.0, prompt_seeds=[9])
    assert both.completion_ids[2:] == alone.completion_ids
    torch.testing.assert_close(both.logp_old[2:, : alone.logp_old.shape[1]], alone.logp_old)
    with pytest.raises(ValueError, match="prompt_seeds: one seed per prompt expected \\(2\\), got 1"):
        sample_rollout(tiny_lm, prompts, group_size=2, max_new_tokens=2, prompt_seeds=[1])


def test_distribute_is_a_no_op_in_one_process_and_checks_its_arguments(tiny_lm):
    for p in tiny_lm.model.parameters():
        p.requires_grad_(False)
    with pytest.raises(ValueError, match="no trainable parameters"):
        distribute(tiny_lm)
    lm = add_lora(tiny_lm, r=2)
    with pytest.raises(ValueError, match="mode must be one of \\('ddp', 'fsdp'\\)"):
        distribute(lm, mode="zero3")
    model = lm.model
    assert distribute(lm, mode="fsdp") is lm and lm.parallel is None and lm.model is model  # no process group


def test_load_pretrained_leaves_models_undistributed(tiny_llama_dir):
    lm = load_pretrained(tiny_llama_dir, dtype="float32")
    assert lm.parallel is None and lm.train_model is None
