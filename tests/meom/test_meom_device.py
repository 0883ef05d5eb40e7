"""The MEOM reproduction's ``device`` option: early failure, ``auto``, and unchanged numbers on the CPU."""

from __future__ import annotations

import dataclasses
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from iclr26 import cli as iclr26_cli
from iclr26.common.config import ConfigError
from iclr26.common.experiment import RunContext
from iclr26.common.seeding import torch_generator
from iclr26.meom import experiment
from iclr26.meom.data import load_corrupted_digits
from iclr26.meom.experiment import MEOMConfig, run
from iclr26.meom.losses import meom_loss, sample_temporal_masks
from iclr26.runner import build_config


@pytest.fixture(autouse=True)
def _close_figures():
    """``run``/``_outcome`` register figures with the context; without the runner nobody saves and closes them."""
    yield
    plt.close("all")


no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the behaviour of a machine without CUDA")


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested metrics (dicts, numpy arrays, scalars) as {dotted.key: python scalar}."""
    if isinstance(value, dict):
        return {k: v for key, sub in value.items() for k, v in _flat(sub, f"{prefix}{key}.").items()}
    if isinstance(value, np.ndarray):
        return _flat(value.tolist(), prefix)
    if isinstance(value, list):
        return {k: v for i, sub in enumerate(value) for k, v in _flat(sub, f"{prefix}{i}.").items()}
    return {prefix.rstrip("."): value.item() if isinstance(value, np.generic) else value}


class _TrainingStarted(Exception):
    pass


def test_gpu_scale_asks_for_cuda_and_the_default_is_cpu():
    assert MEOMConfig().device == "cpu"
    assert MEOMConfig.preset("smoke").device == "cpu"
    assert MEOMConfig.preset("gpu").device == "cuda"


@no_cuda
@pytest.mark.parametrize("device", ["cuda", "cuda:1"])
def test_unavailable_cuda_is_refused_when_the_run_is_configured(device):
    with pytest.raises(ConfigError, match="'device'"):
        build_config("meom", "smoke", None, [f"device={device}"])


@no_cuda
def test_cli_rejects_cuda_without_writing_a_record(cli, tmp_path):
    proc = cli("run", "meom", "--scale", "smoke", "--set", "device=cuda", "--out", str(tmp_path), "--quiet")
    assert proc.returncode != 0
    assert "'device'" in proc.stderr
    assert not list(tmp_path.rglob("result.json"))


@no_cuda
def test_gpu_scale_exits_2_with_a_clear_message_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    assert iclr26_cli.main(["run", "meom", "--scale", "gpu", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "config field 'device'" in err and "'cuda' requested but CUDA is not available" in err
    assert "--set device=cpu" in err
    assert not (out / "meom").exists()


def test_unknown_device_name_is_rejected():
    with pytest.raises(ConfigError, match="'device'"):
        build_config("meom", "smoke", None, ["device=tpu"])


def test_the_run_trains_on_the_device_the_runner_hands_it(tmp_path, monkeypatch):
    seen: list[torch.device] = []

    def record_device(config: MEOMConfig, data: Any, seed: int) -> None:
        seen.append(data.x_train.device)
        raise _TrainingStarted

    monkeypatch.setattr(experiment, "train_teacher", record_device)
    # the config names cuda but the context holds the CPU: a run that resolved its own device would fail here (no
    # CUDA) or train on the GPU (CUDA), so seeing the CPU shows the runner's device was used
    config = dataclasses.replace(MEOMConfig.preset("smoke"), device="cuda")
    with pytest.raises(_TrainingStarted):
        run(config, RunContext(out_dir=tmp_path, seed=0, quiet=True, device=torch.device("cpu")))
    assert seen == [torch.device("cpu")]


@pytest.mark.parametrize("mask_mode", ["fixed", "per_step"])
def test_explicit_cpu_and_auto_give_the_default_metrics(mask_mode, tmp_path):
    base = dataclasses.replace(MEOMConfig.preset("smoke"), mask_mode=mask_mode)
    devices = ["default", "cpu"] + ([] if torch.cuda.is_available() else ["auto"])
    metrics = {}
    for name in devices:
        config = base if name == "default" else dataclasses.replace(base, device=name)
        (tmp_path / name).mkdir()
        out = run(config, RunContext(out_dir=tmp_path / name, seed=0, quiet=True))
        metrics[name] = _flat(out.metrics)  # times are timings, not metrics
    # continuous metrics are among those compared, so a changed training path cannot hide behind equal accuracies
    assert "arms.meom.final_train_loss_mean" in metrics["default"]
    assert "arms.twd.var_logits_mean" in metrics["default"]
    for name in devices[1:]:
        assert metrics[name] == metrics["default"], name


def test_masks_drawn_outside_the_loss_equal_those_it_draws():
    """The per-step masks now come from the experiment (then moved to the device); on the CPU they are the very
    draws ``meom_loss`` makes from the same generator state, so ``mask_mode=per_step`` numbers are unchanged."""
    g = torch_generator(7)
    feats = torch.randn(5, 4, 2, 2, generator=g)
    student = torch.randn(3, 5, 10, generator=g)
    head = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 10))
    y = torch.arange(5)
    inside = meom_loss(student, feats, head, y, keep_prob=0.7, mask_mode="resample", generator=torch_generator(11))
    masks = sample_temporal_masks(3, (4, 2, 2), keep_prob=0.7, generator=torch_generator(11))
    outside = meom_loss(student, feats, head, y, masks=masks)
    assert torch.equal(inside.perspective_logits, outside.perspective_logits)
    assert torch.equal(inside.total, outside.total)


def test_split_to_its_own_device_is_the_same_tensors():
    data = load_corrupted_digits(n_test=797, occlusion=3, noise_std=0.1, data_seed=0)
    moved = data.to("cpu")
    assert moved.x_train is data.x_train and moved.y_test is data.y_test
    assert moved.num_classes == 10
