"""The config's checks and a smoke run through the CLI with an official prompt file."""

from __future__ import annotations

import json
import math

import pytest
from PIL import Image

from iclr26 import cli
from iclr26.common.config import ConfigError
from iclr26.magref.config import MAGREFConfig


def test_config_rejects_bad_values():
    with pytest.raises(ConfigError, match="n_frames"):
        MAGREFConfig(n_frames=6)
    with pytest.raises(ConfigError, match="'size'"):
        MAGREFConfig(size=10)
    with pytest.raises(ConfigError, match="'dim'"):
        MAGREFConfig(dim=10, heads=4)
    with pytest.raises(ConfigError, match="n_eval_multi"):
        MAGREFConfig(n_eval_multi=0)


def test_data_key_validates_the_prompt_file(tmp_path):
    with pytest.raises(ConfigError, match="'data'.*not found|'data'.*No such file"):
        MAGREFConfig(data=tmp_path / "missing.txt")
    Image.new("RGB", (4, 4), (255, 0, 0)).save(tmp_path / "a.png")
    three = tmp_path / "three.txt"
    three.write_text("k@@a red square@@a.png@@a.png@@a.png\n")
    with pytest.raises(ConfigError, match="'data'.*at most 2"):
        MAGREFConfig(data=three)
    zero = tmp_path / "zero.txt"
    zero.write_text("k@@a red square\n")
    with pytest.raises(ConfigError, match="'data'.*no reference"):
        MAGREFConfig(data=zero)


def test_smoke_run_with_user_prompts(tmp_path):
    Image.new("RGB", (6, 6), (255, 0, 0)).save(tmp_path / "r.png")
    Image.new("RGB", (3, 6), (0, 0, 255)).save(tmp_path / "b.png")
    prompts = tmp_path / "prompts.txt"
    prompts.write_text(
        "demo_1@@a red solid square from topleft moving right@@r.png\n"
        "demo_2@@a red square and a blue striped disk moving up@@r.png@@b.png\n"
    )
    out = tmp_path / "runs"
    assert (
        cli.main(["run", "magref", "--scale", "smoke", "--out", str(out), "--quiet", "--set", f"data={prompts}"]) == 0
    )
    (run_dir,) = (out / "magref").iterdir()
    rec = json.loads((run_dir / "result.json").read_text())
    user = rec["metrics"]["user_data"]
    assert user["keys"] == ["demo_1", "demo_2"] and user["known_words_per_prompt"][0] == 5
    for arm in ("magref", "vanilla", "nodisent", "t2v", "placebo"):
        assert math.isfinite(rec["metrics"]["arms"][arm]["id_sim"])
    assert {"user_clips.png", "metrics_by_arm.png", "examples.png"} <= {p.name for p in run_dir.glob("*.png")}
