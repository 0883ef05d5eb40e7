"""The config's checks and a smoke run through the CLI with an official prompt file."""

from __future__ import annotations

import json
import math

import pytest
import torch
from PIL import Image

from iclr26 import cli
from iclr26.common.config import ConfigError
from iclr26.magref.config import MAGREFConfig
from iclr26.magref.latent import CausalPatchify
from tests.conftest import all_finite


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
    zero = tmp_path / "zero.txt"
    zero.write_text("k@@a red square\n")
    with pytest.raises(ConfigError, match="'data'.*no reference"):
        MAGREFConfig(data=zero)


@pytest.mark.parametrize(
    ("setting", "name"),
    [("finetune_steps=0", "finetune_steps"), ("base_steps=1e18", "base_steps"), ("alpha=1e18", "alpha"),
     ("n_eval_multi=1e18", "n_eval_multi"), ("lr=1e18", "lr")],
)  # fmt: skip
def test_out_of_range_values_are_refused_before_any_work(setting, name, tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(["run", "magref", "--scale", "smoke", "--set", setting, "--out", str(out), "--quiet"]) == 2
    assert f"config field '{name}'" in capsys.readouterr().err
    assert not (out / "magref").exists()


def test_work_and_the_gpu_slice():
    gpu = MAGREFConfig.preset("gpu")
    sliced = MAGREFConfig(**{**MAGREFConfig.preset_values("gpu"), **MAGREFConfig.GPU_SLICE})
    assert gpu.device == sliced.device == "cuda" and (sliced.dim, sliced.batch_size) == (gpu.dim, gpu.batch_size)
    assert gpu.work() / sliced.work() > 100


def test_models_and_batches_land_on_the_configured_device(tmp_path):
    from iclr26.common.experiment import RunContext
    from iclr26.magref.experiment import build_model, train_base
    from iclr26.magref.training import TrainSpec, train

    config = MAGREFConfig.from_dict({**MAGREFConfig.preset_values("smoke"), "device": "cpu"})
    ctx = RunContext(tmp_path, 0, quiet=True, device=torch.device(config.device))
    base = train_base(config, "i2v", ctx)
    assert {t.device for t in base.state.values()} == {torch.device("cpu")}  # units hold CPU tensors
    model = build_model(config).to(ctx.device)
    seen = []
    hook = model.register_forward_pre_hook(lambda mod, args, kwargs: seen.append(args[0].device), with_kwargs=True)
    spec = TrainSpec("canvas", 1.0, True, 1, 2, 1e-3)
    train(model, spec, CausalPatchify(), config.sprite_world(), torch.Generator(), device=ctx.device)
    hook.remove()
    assert seen == [ctx.device] and {p.device for p in model.parameters()} == {ctx.device}


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
    for arm in ("magref", "vanilla", "nodisent", "placebo"):
        assert math.isfinite(rec["metrics"]["arms"][arm]["id_at_place"])
    assert {"user_clips.png", "metrics_by_arm.png", "examples.png"} <= {p.name for p in run_dir.glob("*.png")}


def test_smoke_run_with_the_official_layout_and_its_quirks(tmp_path, monkeypatch):
    # an official-style assets/multi_id.txt: repository-root-relative paths, a 3-reference line, a prompt with none
    # of the sprite world's words (as 4 of 10 lines of the official single_id.txt)
    root = tmp_path / "MAGREF"
    imgs = root / "assets" / "imgs" / "multi_id"
    for demo in ("demo_1", "demo_2"):
        (imgs / demo).mkdir(parents=True)
        for i, colour in enumerate(((255, 0, 0), (0, 0, 255), (0, 255, 0)), start=1):
            Image.new("RGBA", (5, 7), (*colour, 255)).save(imgs / demo / f"{i}.png")
    refs = {d: "@@".join(f"assets/imgs/multi_id/{d}/{i}.png" for i in (1, 2, 3)) for d in ("demo_1", "demo_2")}
    prompts = root / "assets" / "multi_id.txt"
    prompts.write_text(
        f"demo_1@@A red solid square moves right beside a blue striped disk.@@{refs['demo_1']}\n"
        f"demo_2@@The video captures two individuals taking a selfie together.@@{refs['demo_2']}\n"
    )
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "runs"
    with pytest.warns(UserWarning, match="using the first 2"):
        status = cli.main(
            ["run", "magref", "--scale", "smoke", "--out", str(out), "--quiet", "--set", f"data={prompts}"]
        )
    assert status == 0
    (run_dir,) = (out / "magref").iterdir()
    rec = json.loads((run_dir / "result.json").read_text())
    user = rec["metrics"]["user_data"]
    assert user["keys"] == ["demo_1"] and list(user["skipped"]) == ["demo_2"]
    assert user["references_dropped"] == {"demo_1": 1, "demo_2": 1}
    assert all_finite(rec["metrics"]) and (run_dir / "user_clips.png").stat().st_size > 0
