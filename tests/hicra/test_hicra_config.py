"""The config: every number bounded before any work, the gpu preset consistent with either backend, placement."""

from __future__ import annotations

import dataclasses
import typing

import pytest
import torch

from iclr26.common.config import ConfigError
from iclr26.hicra.config import HicraConfig


def numeric_fields(cls):
    """The int and float fields (the master seed is the base config's, bounded by 2**63 - 1)."""
    hints = typing.get_type_hints(cls)
    return [f.name for f in dataclasses.fields(cls) if hints[f.name] in (int, float) and f.name != "seed"]


@pytest.mark.parametrize("name", numeric_fields(HicraConfig))
def test_every_number_is_bounded_with_one_line(name):
    huge = 10**18 if typing.get_type_hints(HicraConfig)[name] is int else 1e18
    with pytest.raises(ConfigError) as err:
        HicraConfig(**{name: huge})
    assert f"'{name}'" in str(err.value) and "\n" not in str(err.value)


def test_the_gpu_preset_with_the_tiny_lm_uses_the_tiny_lms_own_training_settings():
    # the SmolLM2 settings (LoRA learning rates, SFT steps) are fields of their own: --set backend=tinylm on the gpu
    # preset trains the tiny LM as the cpu scale does, at the gpu preset's task and RL sizes
    gpu = dataclasses.replace(HicraConfig.preset("gpu"), backend="tinylm", device="cpu")
    cpu = HicraConfig()
    assert (gpu.sft_steps, gpu.sft_batch, gpu.sft_lr, gpu.rl_lr) == (
        cpu.sft_steps,
        cpu.sft_batch,
        cpu.sft_lr,
        cpu.rl_lr,
    )
    assert gpu.pretrained_sft_lr < gpu.sft_lr and gpu.rl_steps == HicraConfig.preset_values("gpu")["rl_steps"]


def test_gpu_slice_is_a_smaller_run_of_the_same_sizes():
    gpu = HicraConfig.preset("gpu")
    part = dataclasses.replace(gpu, **HicraConfig.GPU_SLICE)
    assert (part.prompts_per_step, part.group_size, part.max_new_tokens) == (
        gpu.prompts_per_step,
        gpu.group_size,
        gpu.max_new_tokens,
    )
    assert 0 < part.work() < gpu.work() / 100


def test_models_and_batches_live_on_the_runs_device(tmp_path):
    from iclr26.common.experiment import RunContext
    from iclr26.hicra.experiment import model_spec, problems, run_arm, run_sft
    from iclr26.hicra.task import Vocab
    from iclr26.hicra.training import build_policy, encode_prompts, generate

    device = torch.device("cpu")  # the runner's ctx.device; on a GPU machine the same code gets cuda:N
    config = dataclasses.replace(HicraConfig.preset("smoke"), rl_steps=1, eval_every=1)
    vocab = Vocab()
    train, held_out = problems(config)
    model = build_policy(model_spec(config), vocab, device)
    assert {p.device for p in model.parameters()} == {device}
    samples = generate(model, encode_prompts(train[:3], vocab), vocab, max_new_tokens=4, temperature=1.0,
                       generator=torch.Generator().manual_seed(0))  # fmt: skip
    assert samples.sequences.device == device and samples.finished.device == device
    sft = run_sft(config, train, held_out, vocab, device)
    assert {v.device.type for v in sft.state.values()} == {"cpu"}  # the unit's result is device-free
    ctx = RunContext(out_dir=tmp_path, seed=0, quiet=True, device=device)
    curves = run_arm(config, sft, "hicra", 0, train, held_out, vocab, ctx)
    assert curves.eval_step == [0, 1]
