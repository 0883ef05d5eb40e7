"""HICRA under torchrun (gloo, 2 ranks): per-prompt rollout seeds, prompts sharded by rank, DDP (tiny LM) and
DDP/FSDP2 (SmolLM2 with LoRA).

What a 2-rank run equals: a one-process run with ``rollout_seeds=prompt`` (each prompt's ``G`` completions drawn in
a batch of their own from ``prompt_seed(step seed, q)``; held-out accuracy decoded in fixed batches of
``EVAL_CHUNK``), up to float summation order (the halves' gradients all-reduced instead of summed in one backward).
The one-process default (``rollout_seeds=auto`` = one sampling stream per step) is a different, unchanged run.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest

from iclr26.common.config import ConfigError
from iclr26.hicra.config import HicraConfig
from iclr26.hicra.training import prompt_seed
from tests.conftest import TORCHRUN, dist_env

# Tolerance of the record's floats, 2 ranks vs 1 rank with rollout_seeds=prompt: the same completions, gradients
# summed in another order; measured <= 1.6e-7 on the smoke (entropies, relative perplexities); a rollout that
# differs moves these by > 1e-3.
TOLERANCE = 1e-5


TWO = [*TORCHRUN, "--nproc_per_node=2"]


def floats(value, path=""):
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in floats(item, f"{path}/{key}").items()}
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in floats(item, f"{path}[{i}]").items()}
    return {path: value} if isinstance(value, (int, float)) and not isinstance(value, bool) else {}


@pytest.mark.slow  # the smoke twice, one launch with two interpreters (~30 s on an idle machine)
def test_smoke_on_two_ranks_equals_one_process_with_per_prompt_seeds(tmp_path):
    args = ["-m", "iclr26", "run", "hicra", "--scale", "smoke", "--quiet"]
    two = subprocess.run(
        [*TWO, *args, "--out", str(tmp_path / "two")], capture_output=True, text=True, timeout=300, env=dist_env(120)
    )
    assert two.returncode == 0, two.stderr
    (record_file,) = (tmp_path / "two" / "hicra").glob("*/result.json")
    record = json.loads(record_file.read_text())
    assert record["world_size"] == 2
    one = subprocess.run(
        [sys.executable, *args, "--out", str(tmp_path / "one"), "--set", "rollout_seeds=prompt"],
        capture_output=True,
        text=True,
        timeout=300,
        env=dist_env(120),
    )
    assert one.returncode == 0, one.stderr
    single = json.loads(next((tmp_path / "one" / "hicra").glob("*/result.json")).read_text())
    got, want = floats(record["metrics"]), floats(single["metrics"])
    assert got.keys() == want.keys() and any("exec_perplexity" in k for k in want)
    for key, value in want.items():
        assert got[key] == pytest.approx(value, abs=TOLERANCE), key


# The SmolLM2 backend's arm loop (hicra.pretrained_run.train_arm, per-prompt seeds) on one and on two ranks. The
# untrained model never solves the task, so the reward is a stand-in with spread (the completion's length in
# characters, even = 1).
SCRIPT = r"""
import sys, dataclasses
import torch
from iclr26.common import distributed as D
from iclr26.common import pretrained
from iclr26.hicra import Problem, mine_strategic_grams, pretrained_run
from iclr26.hicra.config import HicraConfig
from iclr26.hicra.task import AnswerCheck

mode, out = sys.argv[1:3]
world = D.world_from_env()
if world.is_distributed:
    D.init_process_group(world, timeout=120)
pretrained_run.check_answer = lambda p, t, finished=True: AnswerCheck(float(len(t) % 2 == 0), "stand-in")
config = dataclasses.replace(
    HicraConfig.preset("smoke"), backend="smollm2", parallel=mode, rl_steps=2, eval_every=2, prompts_per_step=2,
    group_size=2, max_new_tokens=6, pretrained_rl_lr=1e-2, lora_r=2,
)
lm = pretrained.add_lora(pretrained.load_pretrained(dtype="float32", threads=1), r=2, seed=0)
pretrained.distribute(lm, mode=mode)
grams = mine_strategic_grams(["so the answer is 1 + 2", "so the answer is 3 * 4"], min_doc_frac=0.5)
sft = pretrained_run.PretrainedSFT({}, [], 0.0, 0.0, 0.0, grams, grams, {})
train = [Problem(3, 1, 4), Problem(2, 2, 4), Problem(5, 1, 6)]
curves = pretrained_run.train_arm(config, lm, "entropy", 0, sft, train, train[:2], world=world, per_prompt=True)
if world.is_main:
    torch.save({"curves": curves, "parallel": lm.parallel}, out)
D.destroy_process_group(synchronise=True)
"""


@pytest.mark.slow  # SmolLM2 on three CPU processes (~60 s)
@pytest.mark.parametrize("mode", ["ddp", "fsdp"])
def test_smollm2_arm_on_two_ranks_equals_one_process(mode, tmp_path):
    import torch

    script = tmp_path / "arm.py"
    script.write_text(SCRIPT)
    one = subprocess.run(
        [sys.executable, str(script), mode, str(tmp_path / "one.pt")], capture_output=True, text=True, env=dist_env(120)
    )
    assert one.returncode == 0, one.stderr
    two = subprocess.run(
        [*TWO, str(script), mode, str(tmp_path / "two.pt")], capture_output=True, text=True, env=dist_env(120)
    )
    assert two.returncode == 0, two.stderr
    a, b = torch.load(tmp_path / "one.pt", weights_only=False), torch.load(tmp_path / "two.pt", weights_only=False)
    assert a["parallel"] is None and b["parallel"] == mode
    ca, cb = a["curves"], b["curves"]
    assert ca.n_tokens == cb.n_tokens and ca.eval_step == cb.eval_step == [0, 2]
    for name in ("reward", "exec_entropy", "length", "planning_coverage", "amplified_coverage", "held_out_acc"):
        assert getattr(cb, name) == pytest.approx(getattr(ca, name), abs=1e-4, nan_ok=True), name
    # the first step's rewards have spread, so its GRPO update moved the policy whose surprisal step 2 reports
    assert 0 < ca.reward[0] < 1 and ca.exec_entropy[1] != ca.exec_entropy[0]


def test_prompt_seeds_are_fixed_by_the_step_seed_and_the_global_index():
    seeds = [prompt_seed(123, q) for q in range(4)]
    assert len(set(seeds)) == 4 and seeds == [prompt_seed(123, q) for q in range(4)]
    assert prompt_seed(124, 0) != seeds[0] and all(0 <= s < 2**63 for s in seeds)


def test_config_switches_name_their_field():
    smoke = HicraConfig.preset("smoke")
    with pytest.raises(ConfigError, match="'parallel': fsdp shards the pretrained LM"):
        dataclasses.replace(smoke, parallel="fsdp")
    with pytest.raises(ConfigError, match="'rollout_seeds'"):
        dataclasses.replace(smoke, rollout_seeds="rank")
    assert dataclasses.replace(smoke, backend="smollm2", parallel="fsdp").parallel == "fsdp"
    assert smoke.rollout_seeds == "auto"  # one stream per step in one process, per-prompt seeds under torchrun
