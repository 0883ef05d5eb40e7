"""The config: every number bounded before any work, the gpu preset consistent with either backend, placement."""

from __future__ import annotations

import dataclasses
import typing

import pytest
import torch

from iclr26.common.config import ConfigError
from iclr26.eog.config import EogConfig


def numeric_fields(cls):
    """The int and float fields (the master seed is the base config's, bounded by 2**63 - 1)."""
    hints = typing.get_type_hints(cls)
    return [f.name for f in dataclasses.fields(cls) if hints[f.name] in (int, float) and f.name != "seed"]


@pytest.mark.parametrize("name", numeric_fields(EogConfig))
def test_every_number_is_bounded_with_one_line(name):
    huge = 10**18 if typing.get_type_hints(EogConfig)[name] is int else 1e18
    with pytest.raises(ConfigError) as err:
        EogConfig(**{name: huge})
    assert f"'{name}'" in str(err.value) and "\n" not in str(err.value)


def test_the_gpu_preset_with_the_tiny_lm_uses_the_tiny_lms_own_sft_settings():
    gpu = dataclasses.replace(EogConfig.preset("gpu"), backend="tinylm", device="cpu")
    cpu = EogConfig()
    assert (gpu.sft_steps, gpu.sft_batch, gpu.sft_lr) == (cpu.sft_steps, cpu.sft_batch, cpu.sft_lr)
    assert gpu.pretrained_sft_steps == EogConfig().pretrained_sft_steps and gpu.stage2_steps == 150


def test_gpu_slice_is_a_smaller_run_of_the_same_sizes():
    gpu = EogConfig.preset("gpu")
    part = dataclasses.replace(gpu, **EogConfig.GPU_SLICE)
    assert (part.prompts_per_step, part.group_size, part.pretrained_max_new_tokens, part.lora_r) == (
        gpu.prompts_per_step,
        gpu.group_size,
        gpu.pretrained_max_new_tokens,
        gpu.lora_r,
    )
    assert 0 < part.work() < gpu.work() / 100


def test_the_tiny_policy_and_its_batches_live_on_the_runs_device(tmp_path):
    from iclr26.common.experiment import RunContext
    from iclr26.eog.experiment import build_task, policy_from
    from iclr26.eog.rewards import F1_ONLY
    from iclr26.eog.training import grpo_stage

    device = torch.device("cpu")  # the runner's ctx.device; on a GPU machine the same code gets cuda:N
    config = dataclasses.replace(EogConfig.preset("smoke"), n_sft=8, n_rl=8, n_test=2)
    task = build_task(config)
    policy = policy_from(config, task, 0, RunContext(out_dir=tmp_path, seed=0, quiet=True, device=device))
    assert policy.device == device and {p.device for p in policy.model.parameters()} == {device}
    samples = policy.sample(task.rl[:2], group_size=2, seed=0)
    assert len(samples.texts) == 4
    curves = grpo_stage(policy, task.rl, steps=1, prompts_per_step=2, group_size=2, weights=F1_ONLY, seed=0)
    assert curves.n_tokens > 0
