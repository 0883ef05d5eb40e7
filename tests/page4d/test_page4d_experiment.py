"""The config checks, the data key, and smoke runs through the CLI."""

from __future__ import annotations

import numpy as np
import pytest

from iclr26 import cli
from iclr26.common.config import ConfigError
from iclr26.page4d.config import Page4DConfig
from iclr26.page4d.data import load_sequences
from iclr26.page4d.scene import generate_scene


def test_config_rejects_bad_values():
    with pytest.raises(ConfigError, match="n_frames"):
        Page4DConfig(n_frames=1)
    with pytest.raises(ConfigError, match="img_size"):
        Page4DConfig(img_size=30)
    with pytest.raises(ConfigError, match="middle_start"):
        Page4DConfig(middle_start=0)
    with pytest.raises(ConfigError, match="mask_hold_frac"):
        Page4DConfig(mask_hold_frac=0.9, mask_end_frac=0.5)
    sched = Page4DConfig(mask_hold_frac=0.6, mask_end_frac=1.0, finetune_steps=100).schedule()
    assert sched(59) == 64.0 and sched(80) == pytest.approx(32.0) and sched(100) == 0.0
    assert Page4DConfig().schedule()(10**6) == 64.0  # default: the mask stays on (inference-time masking)


def _user_data(folder, n=4, frames=3, size=32):
    folder.mkdir()
    rng = np.random.default_rng(0)
    for i in range(n):
        sc = generate_scene(rng, n_frames=frames, height=size, width=size, n_moving=1)
        np.savez(folder / f"seq{i}.npz", images=sc.images.transpose(0, 2, 3, 1), depths=sc.depth,
                 extrinsics=sc.extrinsics, intrinsics=sc.intrinsics, dynamic_mask=sc.dynamic_mask)  # fmt: skip
    return folder


def test_data_key_validates_the_files(tmp_path):
    folder = _user_data(tmp_path / "seqs")
    smoke = Page4DConfig.preset_values("smoke")
    assert Page4DConfig(**{**smoke, "data": folder}).data == folder
    with pytest.raises(ConfigError, match="frames"):
        Page4DConfig(**{**smoke, "n_frames": 4, "data": folder})
    with pytest.raises(ConfigError, match="does not exist"):
        Page4DConfig(**{**smoke, "data": tmp_path / "missing"})


def test_bad_data_exits_2_and_writes_nothing(tmp_path, capsys):
    folder = tmp_path / "bad"
    folder.mkdir()
    np.savez(folder / "x.npz", images=np.full((3, 32, 32, 3), np.nan, np.float32))
    out = tmp_path / "out"
    assert cli.main(["run", "page4d", "--scale", "smoke", "--set", f"data={folder}", "--out", str(out), "--quiet"]) == 2
    assert "data" in capsys.readouterr().err
    assert not (out / "page4d").exists()


def test_smoke_run(smoke):
    record = smoke("page4d")
    assert record["units"][0] == "pretrain" and len(record["units"]) == 1 + 2 * 4
    evidence = record["evidence"]
    assert set(evidence["thresholds"]) == {"ate_margin", "depth_tolerance", "confidence", "pose_gate_margin",
                                           "line_gate_ratio"}  # fmt: skip
    assert all(t["source"] for t in evidence["thresholds"].values())
    assert evidence["gates"]["recipe_kept_frozen_blocks"]["passed"] is True
    assert evidence["gates"]["recipe_trained_its_blocks"]["passed"] is True
    assert {"static_model_learned_pose", "metric_tells_a_line_from_the_path"} <= set(evidence["gates"])
    arms = record["metrics"]["arms"]
    assert set(arms) == {"frozen", "naive", "full", "page4d"}
    names = {"ate", "rpe_trans", "rpe_rot", "absrel_static", "absrel_dynamic", "mask_iou", "ate_shuffled", "n_dynamic"}
    assert names <= set(arms["page4d"]["dynamic"])
    assert 0.0 <= arms["page4d"]["dynamic"]["mask_iou"] <= 1.0
    assert "control_static_ate_vs_naive" in evidence


@pytest.mark.slow
def test_smoke_run_on_user_data(smoke, tmp_path):
    folder = _user_data(tmp_path / "seqs")
    record = smoke("page4d", "--set", f"data={folder}", finite=False)
    assert record["metrics"]["arms"]["page4d"]["dynamic"]["ate"] >= 0


@pytest.mark.parametrize(
    ("setting", "field"),
    [("img_size=0", "img_size"), ("img_size=100000", "img_size"), ("pretrain_steps=1e18", "pretrain_steps"),
     ("n_seeds=0", "n_seeds"), ("lr=1e9", "lr"), ("pretrain_scenes=1e12", "pretrain_scenes")],
)  # fmt: skip
def test_out_of_range_values_are_refused_before_any_work(setting, field, tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(["run", "page4d", "--scale", "smoke", "--set", setting, "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert f"'{field}'" in err and len(err.splitlines()) == 1
    assert not (out / "page4d").exists()


@pytest.mark.parametrize("content", [b"", b"PK\x03\x04 truncated", "no-arrays"])
def test_an_empty_or_broken_npz_is_refused_before_any_work(content, tmp_path, capsys):
    path = tmp_path / "seq.npz"
    if content == "no-arrays":
        np.savez(path)
    else:
        path.write_bytes(content)
    out = tmp_path / "out"
    assert cli.main(["run", "page4d", "--scale", "smoke", "--set", f"data={path}", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "'data'" in err and "seq.npz" in err and len(err.splitlines()) == 1
    assert not (out / "page4d").exists()


def _official_layout(folder, n=4, frames=3, size=32):
    """Sequences as a VGGT/PAGE-4D training batch stores them: uint8 (S, H, W, 3) images, float32 depths with
    invalid (0) pixels, (S, 3, 4) or homogeneous (S, 4, 4) camera-from-world extrinsics, a 0/255 motion mask."""
    folder.mkdir()
    rng = np.random.default_rng(0)
    for i in range(n):
        sc = generate_scene(rng, n_frames=frames, height=size, width=size, n_moving=1)
        depths = sc.depth.copy()
        depths[:, :2, :2] = 0.0  # a corner without depth, as sensors leave holes
        ext = sc.extrinsics.astype(np.float32)
        if i % 2:
            ext = np.concatenate([ext, np.tile([[[0, 0, 0, 1]]], (frames, 1, 1)).astype(np.float32)], axis=1)
        np.savez(folder / f"seq{i:03d}.npz", images=(sc.images.transpose(0, 2, 3, 1) * 255).astype(np.uint8),
                 depths=depths.astype(np.float32), extrinsics=ext, intrinsics=sc.intrinsics.astype(np.float32),
                 dynamic_mask=(sc.dynamic_mask * 255).astype(np.uint8))  # fmt: skip
    return folder


def test_sequences_in_the_official_layout_load(tmp_path):
    folder = _official_layout(tmp_path / "official")
    config = Page4DConfig(**{**Page4DConfig.preset_values("smoke"), "data": folder})
    seqs = load_sequences(config.data, n_frames=3, img_size=(32, 32))
    assert len(seqs) == 4 and all(s.images.shape == (3, 3, 32, 32) and s.images.max() <= 1.0 for s in seqs)
    assert all(np.allclose(s.extrinsics[0], np.eye(3, 4), atol=1e-6) for s in seqs)  # relative to frame 0
    assert all(s.dynamic_mask.dtype == bool and s.dynamic_mask.any() for s in seqs)
    assert all((s.depth > 0).all() for s in seqs)  # holes filled so that every pixel validates
