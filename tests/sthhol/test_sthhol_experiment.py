"""The model's input checks and loss, the historical average, the data key, and a smoke run through the CLI."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

from iclr26 import cli
from iclr26.common.config import ConfigError
from iclr26.sthhol.config import STHHOLConfig
from iclr26.sthhol.experiment import ArmRun, Streams, historical_average, measure
from iclr26.sthhol.model import STHHOL, sthhol_loss


def _model(**kw):
    args = dict(n_regions=3, n_categories=2, n_context=1, window=4, d=4, n_hyperedges=2, llm=None)
    return STHHOL(**{**args, **kw})


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ((torch.ones(2, 3, 2, 5), torch.ones(2, 3, 1, 4), torch.zeros(2).long(), torch.zeros(2).long()), "crime"),
        ((torch.ones(2, 3, 2, 4), torch.ones(2, 3, 2, 4), torch.zeros(2).long(), torch.zeros(2).long()), "context"),
        ((torch.ones(2, 3, 2, 4), torch.ones(2, 3, 1, 4), torch.zeros(3).long(), torch.zeros(2).long()), "dow"),
    ],
)
def test_model_rejects_wrong_shapes(inputs, message):
    with pytest.raises(ValueError, match=message):
        _model()(*inputs)


def test_model_rejects_bad_sizes():
    with pytest.raises(ValueError, match="window"):
        _model(window=0)


def test_loss_hand_value():
    model = _model()
    with torch.no_grad():
        model.level_one.theta_e.fill_(2.0)  # mean(Θ_e²) = 4
        model.level_two.theta_o.fill_(1.0)  # mean(Θ_o²) = 1
    pred, target = torch.zeros(1, 3, 2), torch.full((1, 3, 2), 3.0)
    # 9 + 0.1*4 + 0.5*1 = 9.9
    assert sthhol_loss(model, pred, target, reg_e=0.1, reg_o=0.5).item() == pytest.approx(9.9)
    with pytest.raises(ValueError, match="differ in shape"):
        sthhol_loss(model, pred, target[..., :1], reg_e=0.1, reg_o=0.1)


def test_historical_average_hand_value():
    counts = np.array([[[1.0, 3.0, 5.0, 7.0]]])  # (N=1, C=1, T=4)
    # day 2: mean(1, 3) = 2; day 3: mean(1, 3, 5) = 3
    assert np.allclose(historical_average(counts, 2)[:, 0, 0], [2.0, 3.0])


def test_config_rejects_bad_values():
    with pytest.raises(ConfigError, match="abrupt_day"):
        STHHOLConfig(abrupt_day=300)
    with pytest.raises(ConfigError, match="warmup_frac"):
        STHHOLConfig(warmup_frac=0.6)


def test_data_key_accepts_an_official_file_and_rejects_bad_ones(tmp_path):
    good = tmp_path / "city.pkl"
    good.write_bytes(pickle.dumps(np.ones((2, 2, 50, 4))))
    assert STHHOLConfig.preset("smoke").__class__(**{**STHHOLConfig.preset_values("smoke"), "data": good}).data
    bad = tmp_path / "bad.pkl"
    bad.write_bytes(b"garbage")
    short = tmp_path / "short.pkl"
    short.write_bytes(pickle.dumps(np.ones((2, 2, 6, 4))))
    for path, message in ((bad, "not a pickled"), (short, "too few"), (tmp_path / "missing", "does not exist")):
        with pytest.raises(ConfigError, match=message):
            STHHOLConfig(**{**STHHOLConfig.preset_values("smoke"), "data": path})


def test_bad_data_exits_2_and_writes_nothing(tmp_path, capsys):
    bad = tmp_path / "bad.pkl"
    bad.write_bytes(pickle.dumps(np.full((1, 2, 50, 4), np.nan)))
    out = tmp_path / "out"
    assert cli.main(["run", "sthhol", "--scale", "smoke", "--set", f"data={bad}", "--out", str(out), "--quiet"]) == 2
    assert "data" in capsys.readouterr().err
    assert not (out / "sthhol").exists()


def test_smoke_run(smoke):
    record = smoke("sthhol")
    assert record["units"] == [f"main-{a}-seed0" for a in ("sthhol", "nolevel1", "randllm", "gru")] + [
        f"control-{a}-seed0" for a in ("sthhol", "nolevel1")
    ]
    # one seed gives no lower bound: the drift-room gate cannot pass
    assert record["claim_held"] == "inconclusive" and "drift_leaves_room" in record["failed_gates"]
    evidence = record["evidence"]
    assert set(evidence["thresholds"]) == {"drift_effect_margin", "context_margin", "confidence"}
    assert all(t["source"] for t in evidence["thresholds"].values())
    assert evidence["gates"]["frozen_mlp_intact"]["passed"] is True
    arms = record["metrics"]["arms"]["main"]
    assert {"online", "offline", "nolevel1", "randllm", "gru", "ha"} <= set(arms)
    assert len(arms["online"]["mae_per_category"]) == 2
    assert "None" not in record["measurement"]


def test_smoke_run_on_official_format_data(smoke, tmp_path):
    rng = np.random.default_rng(0)
    folder = tmp_path / "city"
    folder.mkdir()
    for name, days in (("trn.pkl", 30), ("val.pkl", 8), ("tst.pkl", 12)):
        (folder / name).write_bytes(pickle.dumps(rng.poisson(0.7, size=(2, 2, days, 2)).astype(np.float64)))
    record = smoke("sthhol", "--set", f"data={folder}")
    assert record["evidence"]["level_one_testable"] is False
    assert "level one not testable" in record["measurement"]
    assert "no known drift point" in record["measurement"] and "post-drift" not in record["measurement"]
    assert "drift_leaves_room" not in record["evidence"]["gates"]
    assert "nolevel1" not in record["metrics"]["arms"]["main"]
    assert len(record["metrics"]["arms"]["main"]["online"]["daily_mae"]) == 50 - 12  # 50 days, warm-up 12


def _streams(drift_day, *, randllm_frozen_unchanged=True):
    """Six streamed days (warm-up 10 days), one region and category, every truth 0: an MAE is the mean prediction."""

    def run(online, offline=None, frozen=True):
        as_days = lambda v: None if v is None else np.asarray(v, dtype=float).reshape(6, 1, 1)  # noqa: E731
        return ArmRun(as_days(online), as_days(offline), [], frozen)

    zeros = [np.zeros((6, 1, 1))]
    return Streams(
        results={
            "main": {
                "sthhol": [run([1, 1, 1, 0.5, 0.5, 0.5], offline=[1, 1, 1, 2, 2, 2])],
                "nolevel1": [run([2] * 6)],
                "randllm": [run([1] * 6, frozen=randllm_frozen_unchanged)],
                "gru": [run([9] * 6, frozen=None)],
            },
            "control": {"sthhol": [run([3, 3, 3, 1, 1, 1], offline=[3, 3, 3, 4, 4, 4])], "nolevel1": [run([5] * 6)]},
        },
        truths={"main": zeros, "control": zeros},
        ha={"main": zeros, "control": zeros},
        expected={"main": [np.full((6, 1, 1), 0.25)], "control": [None]},
        warm={"main": 10, "control": 10},
        drift_day=drift_day,
    )


def test_measure_judges_the_days_from_the_first_drift_on():
    # the drift at day 13 is streamed day 3 (warm-up 10): days 3..5 are judged, days 0..2 come before it
    m = measure(STHHOLConfig(), _streams(13))
    assert m.drift_known
    assert (m.main_offline, m.main_online) == (pytest.approx([2.0]), pytest.approx([0.5]))
    assert (m.control_offline, m.control_online) == (pytest.approx([4.0]), pytest.approx([1.0]))
    # the warm-up model's MAE above the expected counts' (0.25): 1 - 0.25 before the drift, 2 - 0.25 after it
    assert (m.excess_pre, m.excess_post) == (pytest.approx([0.75]), pytest.approx([1.75]))
    # level one and the PF-LLM ablation over every streamed day; the GRU is not part of the verdict
    assert m.main_full == {"sthhol": pytest.approx([0.75]), "nolevel1": pytest.approx([2.0]),
                           "randllm": pytest.approx([1.0])}  # fmt: skip
    assert m.control_full == {"sthhol": pytest.approx([2.0]), "nolevel1": pytest.approx([5.0])}
    assert m.frozen_mlp_intact  # the GRU has no PF-LLM (None) and does not count against it
    assert not measure(STHHOLConfig(), _streams(13, randllm_frozen_unchanged=False)).frozen_mlp_intact


def test_measure_judges_every_streamed_day_without_a_drift_point():
    m = measure(STHHOLConfig(), _streams(None))
    assert not m.drift_known and m.excess_pre is None and m.excess_post is None
    assert (m.main_offline, m.main_online) == (pytest.approx([1.5]), pytest.approx([0.75]))
    assert (m.control_offline, m.control_online) == (pytest.approx([3.5]), pytest.approx([2.0]))
