"""The NextStep-1 reproduction: config and data validation, metrics, verdict logic with its control, CLI smoke."""

from __future__ import annotations

import dataclasses

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from iclr26.cli import main as cli_main
from iclr26.common.config import ConfigError
from iclr26.common.distributed import SINGLE
from iclr26.nextstep.config import NextStepConfig
from iclr26.nextstep.data import load_user_images, prompt_ids, split_set
from iclr26.nextstep.metrics import frechet_distance, within_class_diversity
from iclr26.nextstep.verdict import paired

no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the behaviour of a machine without CUDA")


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.mark.parametrize(
    ("changes", "name"),
    [
        ({"arms": ("reg", "vq")}, "arms"),
        ({"arms": ("fm", "fm")}, "arms"),
        ({"image_side": 6}, "image_side"),
        ({"cfg_scale": 1.0}, "cfg_scale"),
        ({"cond_dropout": 1.0}, "cond_dropout"),
        ({"n_heads": 3}, "n_heads"),
        ({"min_faithfulness": 1.5}, "min_faithfulness"),
        ({"last_step": 0.0}, "last_step"),
        ({"batch_mul": 0}, "batch_mul"),
    ],
)
def test_config_rejects_bad_values_naming_the_field(changes, name):
    with pytest.raises(ConfigError, match=f"'{name}'"):
        NextStepConfig(**changes)


def _write_png_folder(root, sizes=((8, 8), (8, 8))):
    from PIL import Image

    for k, size in enumerate(sizes):
        d = root / f"class{k}"
        d.mkdir(parents=True)
        for i in range(3):
            Image.fromarray(np.full(size, 40 * (k + i), dtype=np.uint8)).save(d / f"{i}.png")


def bad_data(tmp_path):
    """{case: (path, phrase in the error)}."""
    cases = {"missing": (tmp_path / "nope", "does not exist")}
    empty = tmp_path / "empty"
    (empty / "a").mkdir(parents=True)
    cases["empty folder"] = (empty, "holds no images")
    mixed = tmp_path / "mixed"
    _write_png_folder(mixed, sizes=((8, 8), (16, 12)))
    cases["mixed shapes"] = (mixed, "differ in shape")
    nan = tmp_path / "nan.npz"
    imgs = np.random.default_rng(0).random((10, 8, 8))
    imgs[3, 2, 2] = np.nan
    np.savez(nan, images=imgs, labels=np.arange(10) % 2)
    cases["nan pixels"] = (nan, "NaN")
    wrong = tmp_path / "wrong.npz"
    np.savez(wrong, images=np.zeros((10, 8, 6)), labels=np.arange(10) % 2)
    cases["not square"] = (wrong, "shape (M, S, S)")
    one = tmp_path / "one.npz"
    np.savez(one, images=np.zeros((10, 8, 8)), labels=np.zeros(10, dtype=int))
    cases["one class"] = (one, "at least two")
    txt = tmp_path / "file.txt"
    txt.write_text("hello")
    cases["a text file"] = (txt, "is a file")
    broken = tmp_path / "broken"
    (broken / "a").mkdir(parents=True)
    (broken / "a" / "x.png").write_bytes(b"not a png")
    cases["undecodable"] = (broken, "cannot read image")
    return cases


@pytest.mark.parametrize(
    "case",
    ["missing", "empty folder", "mixed shapes", "nan pixels", "not square", "one class", "a text file", "undecodable"],
)
def test_bad_data_exits_2_naming_the_field_and_writes_no_run_folder(case, tmp_path, capsys):
    path, phrase = bad_data(tmp_path)[case]
    out = tmp_path / "out"
    assert cli_main(["run", "nextstep", "--scale", "smoke", "--set", f"data={path}", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "config field 'data'" in err and phrase in err, err
    assert not (out / "nextstep").exists()


def test_user_png_folder_is_read_with_class_names(tmp_path):
    _write_png_folder(tmp_path / "imgs")
    data = load_user_images(tmp_path / "imgs", side=8)
    assert data.images.shape == (6, 1, 8, 8) and data.class_names == ("class0", "class1")
    assert data.labels.tolist() == [0, 0, 0, 1, 1, 1]
    assert float(data.images.max()) <= 1.0
    split = split_set(data, test_fraction=0.3, seed=0)
    assert len(split.test.labels) == 2 and set(split.test.labels.tolist()) == {0, 1}


def test_prompts():
    assert prompt_ids(torch.tensor([3]), 10).tolist() == [[12, 3, 11]]
    assert prompt_ids(torch.tensor([3]), 10, null=True).tolist() == [[12, 10, 11]]


def test_frechet_distance_closed_form():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((20_000, 2))
    # N(0, I) vs N((3, 0), 4 I): ||mu||^2 + tr(I + 4I - 2 * 2I) = 9 + 2 = 11
    b = rng.standard_normal((20_000, 2)) * 2 + np.array([3.0, 0.0])
    assert frechet_distance(a, b) == pytest.approx(11.0, rel=0.03)
    assert frechet_distance(a, a) == pytest.approx(0.0, abs=1e-8)
    with pytest.raises(ValueError, match="one F"):
        frechet_distance(a, b[:, :1])


def test_within_class_diversity():
    images = torch.tensor([[0.0, 0.0], [3.0, 4.0], [1.0, 1.0], [1.0, 1.0]])
    labels = torch.tensor([0, 0, 1, 1])
    assert within_class_diversity(images, labels) == pytest.approx((5.0 + 0.0) / 2)


def test_paired_interval():
    r = paired(np.array([1.0, 2.0, 3.0]), np.zeros(3), level=0.95)
    # mean 2, sd 1, se 1/sqrt(3), t_{0.975, 2} = 4.303
    assert r["mean"] == 2.0 and r["ci_low"] == pytest.approx(2 - 4.303 / 3**0.5, abs=1e-3)
    assert not r["above_zero"] and r["wins"] == 3
    assert not paired(np.array([1.0]), np.zeros(1), level=0.95)["above_zero"]


def test_gpu_preset_asks_for_cuda():
    assert NextStepConfig().device == "cpu"
    assert NextStepConfig.preset("gpu").device == "cuda"


@no_cuda
def test_gpu_scale_exits_2_without_cuda(tmp_path, capsys):
    out = tmp_path / "out"
    assert cli_main(["run", "nextstep", "--scale", "gpu", "--out", str(out), "--quiet"]) == 2
    assert "device" in capsys.readouterr().err
    assert not (out / "nextstep").exists()


def test_smoke_run_through_the_cli(smoke):
    record = smoke("nextstep")
    arms = record["metrics"]["arms"]
    assert set(arms) == {"fm", "reg"}
    assert record["claim_held"] != "held"  # one seed: no paired interval can pass
    assert record["evidence"]["thresholds"]["min_faithfulness"]["source"]
    assert "samples_fm.png" in record["plots"]


def test_training_resumes_from_its_checkpoint_to_the_same_result(tmp_path, monkeypatch):
    """A unit killed mid-training continues from its last checkpoint and ends exactly as an uninterrupted one."""
    from iclr26.nextstep import experiment as ex
    from iclr26.nextstep.experiment import DigitClassifier, Tokenizer, restore, train_judge, train_tokenizer_unit

    config = dataclasses.replace(NextStepConfig.preset("smoke"), steps=6, checkpoint_every=2)
    split = config.load_data()
    device = torch.device("cpu")
    tok_state = train_tokenizer_unit(config, split, "continuous", device)
    judge = train_judge(config, split, device)

    def trained(checkpoint=None):
        tok = restore(Tokenizer(tok_state.spec), tok_state.state, device)
        clf = restore(DigitClassifier(split.train.side, split.train.num_classes), judge.state, device)
        return ex.train_arm(config, "fm", 7, split, tok, clf, device, checkpoint=checkpoint)

    uninterrupted = trained()
    ckpt = tmp_path / "units" / "fm-seed0.ckpt.pt"
    real_loss, calls = ex.nextstep_loss, []

    def dies_in_step_five(*args, **kwargs):
        calls.append(1)
        if len(calls) == 5:
            raise KeyboardInterrupt
        return real_loss(*args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(ex, "nextstep_loss", dies_in_step_five)
        with pytest.raises(KeyboardInterrupt):
            trained(ckpt)
    assert torch.load(ckpt, weights_only=False)["step"] == 4  # the last checkpoint before the kill
    resumed = trained(ckpt)
    assert resumed.final_loss == uninterrupted.final_loss
    assert resumed.cfg == uninterrupted.cfg and resumed.no_cfg == uninterrupted.no_cfg
    assert np.array_equal(resumed.grid, uninterrupted.grid)
    with pytest.raises(ConfigError, match="checkpoint_every"):
        NextStepConfig(checkpoint_every=-1)


@pytest.mark.parametrize(
    ("setting", "name"),
    [
        ("data_seed=-1", "data_seed"),
        ("steps=1e18", "steps"),
        ("lr=1e18", "lr"),
        ("samples_per_class=1e18", "samples_per_class"),
    ],
)
def test_out_of_range_values_are_refused_naming_their_field(setting, name, tmp_path, capsys):
    out = tmp_path / "out"
    assert cli_main(["run", "nextstep", "--scale", "smoke", "--set", setting, "--out", str(out), "--quiet"]) == 2
    assert f"config field '{name}'" in capsys.readouterr().err
    assert not (out / "nextstep").exists()


def test_an_empty_npz_is_refused_before_any_work(tmp_path, capsys):
    empty = tmp_path / "empty.npz"
    empty.write_bytes(b"")
    out = tmp_path / "out"
    assert (
        cli_main(["run", "nextstep", "--scale", "smoke", "--set", f"data={empty}", "--out", str(out), "--quiet"]) == 2
    )
    assert "config field 'data'" in capsys.readouterr().err
    assert not (out / "nextstep").exists()


def test_a_folder_of_mixed_square_sizes_is_resized_to_image_side(tmp_path):
    # the official-style class folders of the user's images, at two sizes: each is resized to the side the run uses
    _write_png_folder(tmp_path / "mixed", sizes=((8, 8), (16, 16)))
    data = NextStepConfig(data=tmp_path / "mixed", test_fraction=0.34).load_data()
    assert data.train.images.shape[1:] == (1, 8, 8) and data.train.num_classes == 2
    with pytest.raises(ValueError, match="differ in shape"):
        load_user_images(tmp_path / "mixed")  # without a side to resize to, one size is needed


def test_work_and_the_gpu_slice():
    gpu = NextStepConfig.preset("gpu")
    sliced = NextStepConfig(**{**NextStepConfig.preset_values("gpu"), **NextStepConfig.GPU_SLICE})
    assert sliced.device == "cuda" and sliced.d_model == gpu.d_model and sliced.batch_size == gpu.batch_size
    assert gpu.work() / sliced.work() > 100  # the slice is a small part of the preset


def test_units_put_models_and_batches_on_the_configured_device():
    from iclr26.nextstep.experiment import fit_arm, restore, train_tokenizer_unit
    from iclr26.nextstep.tokenizer import Tokenizer

    config = dataclasses.replace(NextStepConfig.preset("smoke"), steps=2)
    device = torch.device(config.device)
    split = config.load_data()
    tok = restore(Tokenizer((t := train_tokenizer_unit(config, split, "continuous", device)).spec), t.state, device)
    st = fit_arm(config, "fm", 0, split, tok, device, SINGLE, None)
    for module in (tok, st.model, st.head):
        assert {p.device for p in module.parameters()} == {device}
    assert st.loss_gen.device == device and len(st.losses) == 2
    assert all(isinstance(x, float) for x in st.losses)
