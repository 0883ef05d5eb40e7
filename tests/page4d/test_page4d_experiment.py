"""The config checks, the data key, and smoke runs through the CLI."""

from __future__ import annotations

import numpy as np
import pytest

from iclr26 import cli
from iclr26.common.config import ConfigError
from iclr26.page4d.config import Page4DConfig
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
    assert set(evidence["thresholds"]) == {"ate_margin", "depth_tolerance", "confidence"}
    assert all(t["source"] for t in evidence["thresholds"].values())
    assert evidence["frozen_blocks_bit_identical"] is True
    assert evidence["trained_blocks_changed"] is True
    arms = record["metrics"]["arms"]
    assert set(arms) == {"frozen", "naive", "full", "page4d"}
    names = {"ate", "rpe_trans", "rpe_rot", "absrel_static", "absrel_dynamic", "mask_iou"}
    assert names <= set(arms["page4d"]["dynamic"])
    assert 0.0 <= arms["page4d"]["dynamic"]["mask_iou"] <= 1.0
    assert "control_static_ate_vs_naive" in evidence


@pytest.mark.slow
def test_smoke_run_on_user_data(smoke, tmp_path):
    folder = _user_data(tmp_path / "seqs")
    record = smoke("page4d", "--set", f"data={folder}", finite=False)
    assert record["metrics"]["arms"]["page4d"]["dynamic"]["ate"] >= 0
