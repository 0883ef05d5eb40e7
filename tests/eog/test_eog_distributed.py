"""EoG under torchrun (gloo, 2 ranks): per-prompt rollout seeds, sharded GRPO stages, one record.

What a 2-rank run equals: a one-process run with ``rollout_seeds=prompt`` (each prompt's ``G`` completions drawn in
a batch of their own from ``derive_seed(step seed, "prompt", q)``), up to float summation order; not the
one-process default (``rollout_seeds=auto`` = one sampling stream per step), whose record is unchanged.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from iclr26.common.config import ConfigError
from iclr26.common.distributed import SINGLE
from iclr26.eog.config import EogConfig
from iclr26.eog.policy import TinyPolicy, WordVocab
from iclr26.eog.rewards import F1_ONLY
from iclr26.eog.training import grpo_stage
from tests.conftest import TORCHRUN, dist_env, torchrun
from tests.eog.test_eog_training import GOLD, WRONG, example

# Smaller than the smoke preset so that two interpreters per launch stay within the suite's budget.
SMALL = ["--set", "n_sft=24", "--set", "n_rl=24", "--set", "n_test=6", "--set", "sft_steps=6"]
# Tolerance of every float of the record, 2 ranks vs 1 rank with rollout_seeds=prompt. The completions are the same
# draws (per-prompt seeds); the gradients differ only in summation order (an all-reduce of two halves), which moved
# nothing in the record at this scale (measured: bit-identical); a changed rollout moves rewards by >= 1/(Q·G).
TOLERANCE = 1e-6


def run_cli(out, *extra: str, nproc: int) -> subprocess.CompletedProcess[str]:
    launch = [sys.executable] if nproc == 1 else [*TORCHRUN, f"--nproc_per_node={nproc}"]
    cmd = [*launch, "-m", "iclr26", "run", "eog", "--scale", "smoke", "--quiet", "--out", str(out), *SMALL, *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=dist_env(), check=False)


def floats(value, path=""):
    """Every number in a record's metrics: {path: value}."""
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in floats(item, f"{path}/{key}").items()}
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in floats(item, f"{path}[{i}]").items()}
    return {path: value} if isinstance(value, (int, float)) and not isinstance(value, bool) else {}


@pytest.mark.slow  # the whole smoke pipeline, twice (~20 s on an idle machine); the trainer test below is unmarked
def test_two_ranks_write_one_record_equal_to_one_process_with_per_prompt_seeds(tmp_path):
    two = run_cli(tmp_path / "two", nproc=2)
    assert two.returncode == 0, two.stderr
    (record_file,) = (tmp_path / "two" / "eog").glob("*/result.json")  # one run folder, written by rank 0
    record = json.loads(record_file.read_text())
    assert record["world_size"] == 2 and record["config"]["rollout_seeds"] == "auto"
    one = run_cli(tmp_path / "one", "--set", "rollout_seeds=prompt", nproc=1)
    assert one.returncode == 0, one.stderr
    (single_file,) = (tmp_path / "one" / "eog").glob("*/result.json")
    single = json.loads(single_file.read_text())
    assert single["world_size"] == 1
    got, want = floats(record["metrics"]), floats(single["metrics"])
    assert got.keys() == want.keys() and sum("per_arm" in k for k in want) >= 10, sorted(want)[:5]
    for key, value in want.items():
        assert got[key] == pytest.approx(value, abs=TOLERANCE), key
    assert record["claim_held"] == single["claim_held"]


def policy(seed=0) -> TinyPolicy:
    from iclr26.eog.data import compact_prompt

    vocab = WordVocab([compact_prompt(example()), GOLD, WRONG])
    return TinyPolicy(vocab, d_model=16, n_layers=1, n_heads=2, d_ff=32, context_len=64, max_new_tokens=10, seed=seed)


def length_reward(samples, batch, group_size, weights, path_override):
    """A stand-in for the EoG reward with spread on an untrained policy: the completion's length in words mod 5."""
    totals = [float(len(t.split()) % 5) for t in samples.texts]
    return totals, totals, [0.0] * len(totals), [1.0] * len(totals)


def trained_stage() -> tuple:
    """3 GRPO steps of Q=4 prompts x G=4 with per-prompt seeds on this process's share of the prompts (rewards from
    :func:`length_reward`, so that groups have spread and the steps move the weights); returns (curves, weights)."""
    import iclr26.eog.training as training
    from iclr26.common.distributed import current_world

    world = current_world()
    p = policy(3)
    p.lr_rl = 3e-2  # large, so that the GRPO steps move the weights visibly
    p.distribute(world, "ddp")
    pool = [example(f"q{i}") for i in range(4)]
    score, training.score_samples = training.score_samples, length_reward
    try:
        curves = grpo_stage(
            p,
            pool,
            steps=3,
            prompts_per_step=4,
            group_size=4,
            weights=F1_ONLY,
            seed=11,
            per_prompt_seeds=True,
            world=world,
        )
    finally:
        training.score_samples = score
    return curves, {k: v.clone() for k, v in p.model.state_dict().items()}


SCRIPT = """
import sys
import torch
from iclr26.common import distributed as D
sys.path[:0] = [sys.argv[2], sys.argv[2] + "/../.."]  # this folder, and the checkout for `tests`
from test_eog_distributed import trained_stage
world = D.world_from_env()
D.init_process_group(world, timeout=60)
curves, state = trained_stage()
if world.is_main:
    torch.save({"curves": curves, "state": state, "world": world.size}, sys.argv[1])
D.destroy_process_group(synchronise=True)
"""


def test_grpo_stage_on_two_ranks_follows_the_one_process_per_prompt_trajectory(tmp_path):
    script = tmp_path / "stage.py"
    script.write_text(SCRIPT)
    proc = torchrun(str(script), str(tmp_path / "two.pt"), str(Path(__file__).parent), timeout=300)
    assert proc.returncode == 0, proc.stderr
    two = torch.load(tmp_path / "two.pt", weights_only=False)
    curves, state = trained_stage()  # one process, the whole batch
    assert two["world"] == 2 and len(curves.reward) == 3
    start = policy(3)
    moved = max(float((state[k] - v).abs().max()) for k, v in start.model.state_dict().items())
    assert moved > 1e-3  # GRPO changed the weights, so equal weights below are a real check
    assert two["curves"].n_tokens == curves.n_tokens  # the same completions, drawn on whichever rank
    for name in ("reward", "f1", "path", "length", "valid"):
        assert getattr(two["curves"], name) == pytest.approx(getattr(curves, name), abs=TOLERANCE), name
    for key, value in state.items():
        torch.testing.assert_close(two["state"][key], value, atol=1e-5, rtol=0)


def test_a_prompts_samples_depend_only_on_its_seed_not_on_its_batch():
    # what lets a rank sample its shard alone: prompt b drawn beside a equals b drawn on its own with its seed
    p = policy()
    questions = [example("q1"), example("q2")]
    both = p.sample_prompts(questions, group_size=3, seeds=[7, 8])
    alone = p.sample_prompts(questions[1:], group_size=3, seeds=[8])
    assert both.texts[3:] == alone.texts and both.handle[1][3:] == alone.handle[1]
    assert both.n_tokens[3:] == alone.n_tokens and len(both.texts) == 6


def test_per_prompt_stage_in_one_process_follows_its_seeds_and_updates():
    a, b = policy(1), policy(1)
    pool = [example(f"q{i}") for i in range(4)]
    kwargs = dict(steps=2, prompts_per_step=2, group_size=3, weights=F1_ONLY, seed=5, per_prompt_seeds=True)
    first, second = grpo_stage(a, pool, **kwargs), grpo_stage(b, pool, **kwargs)
    assert first == second and first.n_tokens > 0 and len(first.reward) == 2  # seeded: reproducible
    for x, y in zip(a.model.parameters(), b.model.parameters(), strict=True):
        assert torch.equal(x, y)
    batch = grpo_stage(policy(1), pool, **{**kwargs, "per_prompt_seeds": False})
    assert batch.length != first.length or batch.reward != first.reward  # another sampling scheme, other draws


def test_config_switches_name_their_field():
    with pytest.raises(ConfigError, match="'parallel': fsdp shards the pretrained LM"):
        dataclasses.replace(EogConfig.preset("smoke"), parallel="fsdp")
    with pytest.raises(ConfigError, match="'rollout_seeds'"):
        dataclasses.replace(EogConfig.preset("smoke"), rollout_seeds="rank")
    assert EogConfig.preset("smoke").rollout_seeds == "auto"  # per-prompt seeds under torchrun only
    with pytest.raises(ValueError, match="the tiny LM runs data parallel with mode='ddp'"):
        policy().distribute(SINGLE, "fsdp")


# The SmolLM2 policy's GRPO stage with FSDP2 (or DDP) on two ranks vs one process (stand-in reward with spread).
SMOLLM2_SCRIPT = """
import sys
import torch
from iclr26.common import distributed as D
from iclr26.common import pretrained
sys.path[:0] = [sys.argv[3], sys.argv[3] + "/../.."]  # this folder, and the checkout for `tests`
import iclr26.eog.training as training
from iclr26.eog.policy import PretrainedPolicy
from iclr26.eog.rewards import F1_ONLY
from test_eog_distributed import example, length_reward

mode, out = sys.argv[1:3]
world = D.world_from_env()
if world.is_distributed:
    D.init_process_group(world, timeout=120)
lm = pretrained.add_lora(pretrained.load_pretrained(dtype="float32", threads=1), r=2, seed=0)
policy = PretrainedPolicy(lm, max_new_tokens=6, lr_rl=1e-2).distribute(world, mode)
training.score_samples = length_reward
curves = training.grpo_stage(
    policy, [example(f"q{i}") for i in range(2)], steps=2, prompts_per_step=2, group_size=2, weights=F1_ONLY,
    seed=3, per_prompt_seeds=True, world=world,
)
state = policy.state()
if world.is_main:
    torch.save({"curves": curves, "state": state, "parallel": lm.parallel}, out)
D.destroy_process_group(synchronise=True)
"""


@pytest.mark.slow  # SmolLM2 on three CPU processes (~60 s)
def test_smollm2_stage_with_fsdp_on_two_ranks_equals_one_process(tmp_path):
    script = tmp_path / "stage.py"
    script.write_text(SMOLLM2_SCRIPT)
    env, here = dist_env(120), str(Path(__file__).parent)
    one = subprocess.run(
        [sys.executable, str(script), "fsdp", str(tmp_path / "one.pt"), here], capture_output=True, text=True, env=env
    )
    assert one.returncode == 0, one.stderr
    two = torchrun(str(script), "fsdp", str(tmp_path / "two.pt"), here, env=env)
    assert two.returncode == 0, two.stderr
    a, b = torch.load(tmp_path / "one.pt", weights_only=False), torch.load(tmp_path / "two.pt", weights_only=False)
    assert a["parallel"] is None and b["parallel"] == "fsdp"
    assert a["curves"].n_tokens == b["curves"].n_tokens
    assert any(float(v.abs().max()) > 0 for k, v in a["state"].items() if "lora_B" in k)  # B starts at 0: moved
    for name in ("reward", "f1", "length", "valid"):
        assert getattr(b["curves"], name) == pytest.approx(getattr(a["curves"], name), abs=1e-6), name
    assert a["state"].keys() == b["state"].keys() and len(a["state"]) > 0
    # Adam divides each coordinate's gradient by its own scale, so a coordinate whose gradient is at rounding level
    # moves by up to lr per step whatever its sign: a few coordinates may differ by O(1e-4) (measured: 4 of 1152
    # by <= 6.9e-5 after 2 steps at lr 1e-2); the bulk must agree to float precision.
    diffs = torch.cat([(b["state"][k] - v).abs().flatten() for k, v in a["state"].items()])  # gathered from shards
    assert float(diffs.max()) < 5e-4 and float(diffs.median()) < 1e-7 and float((diffs > 1e-5).float().mean()) < 0.02
