"""Tests of the KERN reproduction: the smoke run through the CLI, config validation, and the measurement helpers."""

from __future__ import annotations

import dataclasses
import math
import statistics
from pathlib import Path

import numpy as np
import pytest
import torch

from iclr26 import cli
from iclr26.common.config import ConfigError
from iclr26.common.experiment import RunContext
from iclr26.common.lmtrain import TokenData
from iclr26.kern import Router
from iclr26.kern.analysis import coefficient_of_variation, make_router_bench, time_routers
from iclr26.kern.config import KernConfig
from iclr26.kern.experiment import build_model, train_variant


def test_smoke_run_through_cli(smoke):
    record = smoke("kern")
    metrics = record["metrics"]
    per = metrics["per_router"]
    assert set(per) == {"softmax", "softmax_renorm", "kern"}
    for name, entry in per.items():
        curve = entry["val_loss_curves"][0]
        assert curve[-1] < curve[0], f"{name}: validation loss did not decrease ({curve})"
        assert math.isfinite(entry["final_val_loss_mean"])
        # Every model was trained at every LR of the sweep and is judged at its own best one.
        by_lr = entry["final_val_loss_mean_by_lr"]
        assert set(by_lr) == {"0.003", "0.006"}
        assert entry["best_lr"] == float(min(by_lr, key=by_lr.get))
        assert entry["final_val_loss_mean"] == pytest.approx(min(by_lr.values()), rel=1e-12)
    assert per["kern"]["gamma_final"][0][0] != 1.0  # γ was trained
    assert 0 <= per["kern"]["val_load_cv_mean"]
    assert record["units"] == [
        f"train-{name}-lr={lr}-seed{i}"
        for i in range(2)
        for lr in ("0.003", "0.006")
        for name in ("softmax", "softmax_renorm", "kern")
    ] + ["bench-routers", "scale-check"]
    # Wall-clock numbers live in `timings` only, never in the metrics or the evidence.
    timings = record["timings"]
    assert timings["process_cpu_time_s"] > 0
    bench = timings["router_bench"]
    assert bench["median_ratio_kern_over_softmax"] > 0
    assert set(bench["gate_median_paired_ratio_kern_over_softmax"]) == {"softmax", "softmax_renorm"}
    assert all(t["min_ms"] > 0 for t in bench["gate_fwd_bwd_ms"].values())
    assert all(t["min_ms"] > 0 for t in bench["fwd_bwd_ms"].values())
    assert not any("time" in key for key in (*metrics, *per["kern"], *record["evidence"]))
    # The evidence is recomputed here from the per-seed losses and the counted gate cost it rests on. Smoke:
    # 4 experts, top-2, so (gate_cost's docstring) Softmax 6E - 2 = 22, renormalised Softmax 22 + 2K = 26 and
    # KERN 5E + 1 = 21 FLOPs per token; the cost is judged against the cheaper Softmax (22).
    evidence = record["evidence"]
    stronger = min(("softmax", "softmax_renorm"), key=lambda n: per[n]["final_val_loss_mean"])
    assert evidence["stronger_softmax"] == stronger
    gaps = [k - s for k, s in zip(per["kern"]["final_val_loss"], per[stronger]["final_val_loss"], strict=True)]
    assert evidence["loss_gap_per_seed"] == pytest.approx(gaps, rel=1e-12, abs=1e-15)
    assert evidence["loss_gap"] == pytest.approx(statistics.fmean(gaps), rel=1e-12, abs=1e-15)
    # Two seeds: the paired-t interval d̄ ± t_{0.975, 1} · sd / √2 with t_{0.975, 1} = 12.706.
    half = 12.7062047 * statistics.stdev(gaps) / math.sqrt(2)
    assert evidence["loss_gap_ci"] == pytest.approx([evidence["loss_gap"] - half, evidence["loss_gap"] + half])
    assert (evidence["kern_gate_flops_per_token"], evidence["softmax_gate_flops_per_token"]) == (21, 22)
    assert per["softmax_renorm"]["gate_cost_per_token"]["flops"] == 26
    assert per["kern"]["gate_cost_per_token"]["flops"] == 21
    assert per["kern"]["gate_cost_per_token"]["router_flops"] == 21 + 2 * 32 * 4  # + the logits, 2 D E
    assert evidence["gate_flops_ratio"] == pytest.approx(21 / 22)
    thresholds = evidence["thresholds"]
    assert set(thresholds) == {"loss_tolerance", "confidence", "cost_tolerance"}
    assert (
        thresholds["cost_tolerance"]["value"] == 0.0
        and "zero additional cost" in thresholds["cost_tolerance"]["source"]
    )
    expected = (
        evidence["loss_gap_ci"][1] < thresholds["loss_tolerance"]["value"]
        and evidence["gate_flops_ratio"] <= 1 + thresholds["cost_tolerance"]["value"]
    )
    assert record["evidence"]["gates"]["compared_models_learned"]["passed"]
    assert record["claim_held"] == ("held" if expected else "not held")
    assert "None" not in record["measurement"] and "gate FLOPs/token KERN 21 vs softmax 22" in record["measurement"]
    assert set(record["plots"]) == {"val_loss.png", "expert_load.png", "lr_sweep.png"}


def test_gpu_scale_without_cuda_exits_2_and_writes_nothing(capsys, tmp_path):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    assert cli.main(["run", "kern", "--scale", "gpu", "--out", str(tmp_path / "out")]) == 2
    assert "config field 'device': 'cuda' requested but CUDA is not available" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def _bad_data(tmp_path: Path) -> list[tuple[Path, str]]:
    """User data the config must reject, with the message each gives (smoke: context_len 32, so 34 bytes a split)."""
    random_bytes = tmp_path / "random.txt"
    random_bytes.write_bytes(bytes(range(128, 256)) * 32)  # 4 KiB, not UTF-8
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    tiny = tmp_path / "tiny.txt"
    tiny.write_text("x" * 200)  # 190 training bytes, 10 validation bytes
    no_text = tmp_path / "no_text"
    no_text.mkdir()
    (no_text / "image.png").write_bytes(b"\x89PNG")
    return [
        (tmp_path / "missing.txt", "does not exist"),
        (random_bytes, "is not UTF-8 text (undecodable byte at offset 0)"),
        (empty, "the split left 0 training"),
        (tiny, "leaves 10 bytes in the validation split, fewer than the 34 this config needs"),
        (no_text, "holds no text files"),
    ]


def test_bad_user_data_is_rejected_before_any_folder(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "out"
    for data, message in _bad_data(tmp_path):
        assert cli.main(["run", "kern", "--scale", "smoke", "--out", str(out), "--set", f"data={data}"]) == 2
        err = capsys.readouterr().err
        assert "config field 'data': " in err and message in err, err
    assert not (out / "kern").exists()


def test_unreadable_user_data_is_rejected_before_any_folder(capsys, tmp_path, monkeypatch):
    # Permissions do not stop root, so the read itself is made to fail as it would for an unreadable file.
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path / "cache"))
    locked = tmp_path / "locked.txt"
    locked.write_text("text " * 100)
    real_read = Path.read_bytes

    def read_bytes(self):
        if self == locked:
            raise PermissionError(13, "Permission denied", str(self))
        return real_read(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    out = tmp_path / "out"
    assert cli.main(["run", "kern", "--scale", "smoke", "--out", str(out), "--set", f"data={locked}"]) == 2
    assert "config field 'data': [Errno 13] Permission denied" in capsys.readouterr().err
    assert not (out / "kern").exists()


def test_user_data_that_fits_is_accepted(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path / "cache"))
    text = tmp_path / "text.txt"
    text.write_text("y" * 680)  # 5% validation: 34 bytes, exactly context_len + 2
    assert KernConfig.preset("smoke").context_len == 32
    assert dataclasses.replace(KernConfig.preset("smoke"), data=str(text)).data == str(text)


def test_bad_config_value_names_the_field_through_cli(cli):
    proc = cli("run", "kern", "--scale", "smoke", "--set", "top_k=9")
    assert proc.returncode != 0 and "top_k" in proc.stderr


def test_config_validation_in_process():
    with pytest.raises(ConfigError, match="'routers'.*unknown router 'kernel'"):
        KernConfig(routers=("softmax", "kernel"))
    with pytest.raises(ConfigError, match="'routers'.*must include 'softmax' and 'kern'"):
        KernConfig(routers=("sigmoid", "kern"))
    with pytest.raises(ConfigError, match="'d_ff'"):
        KernConfig(d_ff=255)
    with pytest.raises(ConfigError, match="'scale_experts'"):
        KernConfig(scale_experts=(12, 256))
    with pytest.raises(ConfigError, match=r"'scale_experts'.*smaller M, larger M"):
        KernConfig(scale_experts=(256, 32))


def test_moe_and_dense_models_have_equal_active_parameters_up_to_router():
    cfg = KernConfig.preset("smoke")
    dense, moe = build_model(cfg, "dense"), build_model(cfg, "kern")
    router = cfg.n_layers * ((cfg.d_model + 1) * cfg.num_experts + 1)
    extra_bias = cfg.n_layers * (cfg.top_k - 1) * cfg.d_model
    assert moe.num_params(active=True) == dense.num_params(active=True) + router + extra_bias


def test_coefficient_of_variation_hand_computed():
    # counts (2, 4, 6): mean 4, population std √(8/3), CV = √(8/3) / 4.
    assert coefficient_of_variation(torch.tensor([2, 4, 6])) == pytest.approx(math.sqrt(8 / 3) / 4)
    assert coefficient_of_variation(torch.tensor([5, 5, 5, 5])) == 0.0
    with pytest.raises(ValueError, match="positive sum"):
        coefficient_of_variation(torch.zeros(3))


def test_time_routers_reports_every_router_and_rejects_bad_arguments():
    routers = {name: Router(16, 4, 2, name) for name in ("softmax", "kern")}
    timings = time_routers(routers, torch.randn(32, 16), repeats=2, warmup=1)
    assert set(timings) == {"softmax", "kern"}
    assert all(0 < t.min_ms <= t.median_ms and t.repeats == 2 for t in timings.values())
    with pytest.raises(ValueError, match="repeats >= 1"):
        time_routers(routers, torch.randn(4, 16), repeats=0)


def test_moe_variants_of_a_seed_share_their_initial_weights():
    # train_variant seeds the global RNG, then builds the model: every router must draw the same numbers, so the
    # variants differ only in the routing function (KERN adds γ = 1, which draws nothing).
    cfg = KernConfig.preset("smoke")
    states = {}
    for name in ("softmax", "sigmoid", "kern"):
        torch.manual_seed(7)
        states[name] = build_model(cfg, name).state_dict()
    assert set(states["kern"]) - set(states["softmax"]) == {f"blocks.{i}.ffn.router.gamma" for i in range(cfg.n_layers)}
    for name in ("sigmoid", "kern"):
        for key, value in states["softmax"].items():
            assert torch.equal(states[name][key], value), f"{name}: {key} differs from softmax's"


def test_train_variant_is_deterministic_under_its_seed(tmp_path):
    cfg = dataclasses.replace(KernConfig.preset("smoke"), total_tokens=1024, eval_tokens=256)
    rng = np.random.default_rng(0)
    data = TokenData(rng.integers(0, 256, 20_000, dtype=np.int64), rng.integers(0, 256, 2_000, dtype=np.int64))
    ctx = RunContext(out_dir=tmp_path, seed=0, quiet=True)
    first, second = (train_variant(cfg, "kern", 3, data, ctx) for _ in range(2))
    assert first.history.train_loss == second.history.train_loss
    assert first.history.val_loss == second.history.val_loss
    assert first.val_load == second.val_load and first.gammas == second.gammas
    assert sum(first.val_load[0]) == (cfg.eval_tokens // cfg.context_len) * cfg.context_len * cfg.top_k


def test_router_bench_shares_weights_and_input():
    bench = make_router_bench(
        ("softmax", "kern"), d_model=16, num_experts=4, k=2, n_tokens=8, generator=torch.Generator().manual_seed(0)
    )
    assert bench.x.shape == (8, 16)
    w = bench.routers["softmax"].proj.weight.detach()
    assert torch.equal(bench.routers["kern"].proj.weight, w) and 0.005 < float(w.std()) < 0.05
    assert all(not r.proj.bias.detach().any() for r in bench.routers.values())
    again = make_router_bench(
        ("kern",), d_model=16, num_experts=4, k=2, n_tokens=8, generator=torch.Generator().manual_seed(0)
    )
    assert torch.equal(again.x, bench.x) and torch.equal(again.routers["kern"].proj.weight, w)


def test_time_routers_interleaves_the_routers_round_by_round():
    # Round i calls the routers in the order rotated by i, so a slow spell of the machine hits all of them.
    calls: list[str] = []

    class Recording(Router):
        def forward(self, x):
            calls.append(self.label)
            return super().forward(x)

    routers = {}
    for name in ("softmax", "sigmoid", "kern"):
        routers[name] = Recording(16, 4, 2, name)
        routers[name].label = name
    time_routers(routers, torch.randn(8, 16), repeats=2, warmup=1)
    names = ["softmax", "sigmoid", "kern"]
    expected = [n for i in range(3) for n in names[i:] + names[:i]]
    assert calls == expected
