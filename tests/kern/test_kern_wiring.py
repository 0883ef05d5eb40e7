"""The reproduction's wiring: each arm differs from the others in its router alone; models and batches on the
configured device; user data in the layout a user has; bounded config fields; component errors that name the
argument; the batched expert dispatch against the per-expert one."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from iclr26 import cli
from iclr26.common.config import ConfigError, apply_overrides
from iclr26.common.corpus import load_corpus
from iclr26.common.distributed import World
from iclr26.common.experiment import RunContext
from iclr26.common.lmtrain import TokenData, TrainHistory
from iclr26.kern import ROUTERS, MoEFeedForward, Router
from iclr26.kern import experiment as kern_experiment
from iclr26.kern.config import KernConfig
from iclr26.kern.experiment import build_model, moe_blocks, train_variant


@pytest.mark.parametrize("name", ["kern", "softmax", "softmax_renorm", "sigmoid", "tanh"])
def test_each_arm_differs_from_the_others_in_its_router_only(name):
    cfg = KernConfig.preset("smoke")
    blocks = moe_blocks(build_model(cfg, name))
    reference = moe_blocks(build_model(cfg, "softmax"))
    assert len(blocks) == cfg.n_layers
    for block, ref in zip(blocks, reference, strict=True):
        assert block.router.spec == ROUTERS[name]  # the paper's change: the routing function
        assert block.router.spec.learnable_gamma == (name == "kern")
        for attr in ("num_experts", "k", "d_expert", "aux_loss_coef", "capacity_factor", "dispatch"):
            assert getattr(block, attr) == getattr(ref, attr), attr
    assert moe_blocks(build_model(cfg, "dense")) == []


def test_kern_is_the_l2_relu_router_and_softmax_the_exp_l1_one():
    # KERN: γ · ReLU(s / ‖s‖₂); the Softmax baseline: exp(s) / Σ exp(s). Logits s = (3, 4, -1): ‖s‖₂ = √26.
    s = torch.tensor([[3.0, 4.0, -1.0]], dtype=torch.float64)
    kern, softmax = Router(2, 3, 3, "kern").double(), Router(2, 3, 3, "softmax").double()
    for router in (kern, softmax):
        router.proj.weight.data = torch.tensor([[3.0, 0.0], [4.0, 0.0], [-1.0, 0.0]], dtype=torch.float64)
        router.proj.bias.data.zero_()
    x = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    assert kern(x).gates.squeeze(0).tolist() == pytest.approx([3 / math.sqrt(26), 4 / math.sqrt(26), 0.0])
    assert softmax(x).gates.squeeze(0).tolist() == pytest.approx(torch.softmax(s, -1).squeeze(0).tolist())


def test_models_and_batches_land_on_the_configured_device(monkeypatch, tmp_path):
    seen = {}

    def fake_train_lm(model, data, schedule, config, *, progress=None, world=None, **_):
        seen["params"] = {p.device for p in model.parameters()} | {b.device for b in model.buffers()}
        seen["world"], seen["autocast"] = world, config.autocast
        history = TrainHistory(step=[0], tokens=[config.total_tokens], train_loss=[1.0])
        history.eval_tokens, history.val_loss = [0, config.total_tokens], [5.5, 1.0]
        return history

    monkeypatch.setattr(kern_experiment, "train_lm", fake_train_lm)
    world = World(rank=0, size=1, local_rank=0)
    ctx = RunContext(out_dir=tmp_path, seed=0, quiet=True, world=world, device=torch.device("cpu"))
    rng = np.random.default_rng(0)
    data = TokenData(rng.integers(0, 256, 5000, dtype=np.int64), rng.integers(0, 256, 2000, dtype=np.int64))
    run = train_variant(KernConfig.preset("smoke"), "kern", 1, data, ctx, 3e-3)
    assert seen["params"] == {ctx.device} and seen["world"] is world and seen["autocast"]
    assert run.history.final_val_loss == 1.0


def test_a_folder_of_text_files_trains(tmp_path, monkeypatch):
    # The layout a user has: a folder of text files (a hash of each path puts about 5% in validation).
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "books"
    folder.mkdir()
    for i in range(60):
        (folder / f"chapter{i:02d}.txt").write_text(f"Chapter {i}. It was a dark and stormy night.\n" * 20)
    cfg = apply_overrides(KernConfig.preset("smoke"), [f"data={folder}", "total_tokens=512", "eval_tokens=256"])
    corpus = load_corpus(cfg.data)
    assert corpus.n_files == 60 and len(corpus.val) >= cfg.context_len + 2
    ctx = RunContext(out_dir=tmp_path / "run", seed=0, quiet=True)
    run = train_variant(cfg, "kern", 0, TokenData.from_corpus(corpus), ctx, 3e-3)
    assert math.isfinite(run.history.final_val_loss) and run.history.tokens_seen == 512


def test_an_empty_data_file_names_a_fix_the_config_has(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path / "cache"))
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    assert cli.main(["run", "kern", "--scale", "smoke", "--out", str(tmp_path / "o"), "--set", f"data={empty}"]) == 2
    err = capsys.readouterr().err
    assert "config field 'data'" in err and "pass a longer file" in err and "val_fraction" not in err


@pytest.mark.parametrize(
    "field", ["total_tokens", "n_seeds", "d_model", "num_experts", "bench_tokens", "eval_tokens", "n_evals"]
)
def test_every_size_field_has_an_upper_bound(field):
    with pytest.raises(ConfigError, match=f"'{field}'.*must be <="):
        apply_overrides(KernConfig.preset("smoke"), [f"{field}=1e18"])


def test_float_fields_have_upper_bounds():
    for field in ("aux_loss_coef", "weight_decay", "loss_tolerance", "cost_tolerance", "capacity_factor"):
        with pytest.raises(ConfigError, match=f"'{field}'"):
            apply_overrides(KernConfig.preset("smoke"), [f"{field}=1e300"])
    with pytest.raises(ConfigError, match="'peak_lrs'"):
        apply_overrides(KernConfig.preset("smoke"), ["peak_lrs=3e-3,5"])


@pytest.mark.parametrize(
    ("args", "name"), [((2.5, 8, 2), "d_model"), ((16, "8", 2), "num_experts"), ((16, 8, True), "k")]
)
def test_router_sizes_that_are_not_ints_name_the_argument(args, name):
    with pytest.raises(TypeError, match=f"^{name} must be an int"):
        Router(*args)


def test_moe_sizes_that_are_not_ints_name_the_argument():
    with pytest.raises(TypeError, match="^d_expert must be an int"):
        MoEFeedForward(8, num_experts=4, k=2, d_expert=8.0)
    with pytest.raises(TypeError, match="^d_model must be an int"):
        MoEFeedForward(8.0, num_experts=4, k=2, d_expert=8)


@pytest.mark.parametrize("capacity_factor", [None, 0.75])
def test_grouped_gemm_dispatch_equals_the_per_expert_dispatch(capacity_factor):
    # The same sums in another order: float32 products of D = 24 terms and H = 12 terms differ by a few ulp of
    # values of order 1e-2 (init std 0.02 ... outputs ~ D · 0.02² · |x|), far below 1e-6; a wrong expert or a lost
    # weight changes an output row by its whole size. On the CPU torch runs grouped_mm forward only (no backward).
    torch.manual_seed(0)
    kw = dict(num_experts=6, k=2, d_expert=12, router="kern", capacity_factor=capacity_factor, init_std=0.2)
    grouped = MoEFeedForward(24, dispatch="grouped", **kw)
    batched = MoEFeedForward(24, dispatch="grouped_mm", **kw)
    batched.load_state_dict(grouped.state_dict())
    x = torch.randn(3, 10, 24)
    with torch.no_grad():
        a, b = grouped(x), batched(x)
    assert a.y.abs().max() > 0.05
    torch.testing.assert_close(b.y, a.y, rtol=0, atol=1e-6)
    assert torch.equal(batched.load_counts, grouped.load_counts) and torch.equal(batched.dropped, grouped.dropped)
    if capacity_factor is not None:
        assert int(grouped.dropped) > 0  # the limit acted, and both dispatches dropped the same assignments


def test_gpu_preset_and_its_slice_are_sized_for_the_device_check():
    gpu = KernConfig.preset("gpu")
    sliced = dataclasses.replace(gpu, **KernConfig.GPU_SLICE)
    assert sliced.d_model == gpu.d_model and sliced.num_experts == gpu.num_experts and sliced.batch_size == 64
    assert gpu.work() / sliced.work() > 100  # the slice is a small part of the preset
