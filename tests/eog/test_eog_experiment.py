"""The reproduction: config errors, the paired test by hand, the data key's split, smoke runs through the CLI."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from iclr26 import cli
from iclr26.common.config import ConfigError
from iclr26.eog.config import ARMS, EogConfig
from iclr26.eog.experiment import build_task
from iclr26.eog.kg import make_task, split_loaded
from iclr26.eog.verdict import paired


@pytest.mark.parametrize(
    ("key", "value"),
    [("group_size", 1), ("n_seeds", 0), ("confidence", 1.0), ("cite_prob", 1.5), ("f1_tolerance", -0.1)],
)
def test_config_errors_name_the_field(key, value):
    with pytest.raises(ConfigError, match=key):
        EogConfig(**{key: value})


def test_paired_test_by_hand():
    # diffs 0.1, 0.2, 0.3: mean 0.2, sd 0.1, se 0.1/√3; t_0.95(2) = 2.919986 → lower bound 0.2 − 0.16859
    t = paired([0.6, 0.7, 0.8], [0.5, 0.5, 0.5], confidence=0.95, null=0.0)
    assert t["mean"] == pytest.approx(0.2) and t["passes"]
    assert t["lower_bound"] == pytest.approx(0.2 - 2.919986 * 0.1 / math.sqrt(3), rel=1e-5)
    # non-inferiority: a loss of 0.02 ± small spread passes a tolerance of 0.05, fails one of 0.01
    x, y = [0.80, 0.79, 0.81], [0.82, 0.81, 0.83]
    assert paired(x, y, confidence=0.95, null=-0.05)["passes"]
    assert not paired(x, y, confidence=0.95, null=-0.01)["passes"]


def dump_rog(examples, path):
    with path.open("w") as fh:
        for e in examples:
            line = {
                "id": e.qid,
                "question": e.question,
                "answer": list(e.answers),
                "q_entity": list(e.q_entity),
                "a_entity": list(e.a_entity),
                "graph": [list(t) for t in e.graph],
                "reasoning_path": e.path_as_lists(),
            }
            fh.write(json.dumps(line) + "\n")


def test_split_of_user_data_holds_out_whole_compositions(tmp_path):
    task = make_task(0, n_sft=30, n_rl=30, n_test=10)
    examples = task.sft + task.rl + task.test_id + task.test_ood
    split = split_loaded(examples, ood_frac=0.25, seed=0)
    ood = set(split.ood_compositions)
    assert ood and all(e.composition in ood for e in split.test_ood)
    assert not any(e.composition in ood for e in split.sft + split.test_id)
    assert sum(map(len, (split.sft, split.rl, split.test_id, split.test_ood))) == len(examples)


def test_bad_data_file_is_a_config_error_naming_data_and_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"question": "q", "answer": ["a"], "q_entity": ["e"], "graph": [["a", "r"]]}\n')
    with pytest.raises(ConfigError, match=r"'data'.*line 1: field 'graph'"):
        EogConfig(data=path)
    with pytest.raises(ConfigError, match="'data'.*does not exist"):
        EogConfig(data=tmp_path / "missing.jsonl")


def test_smoke_run_through_the_cli(smoke):
    record = smoke("eog")
    assert record["units"] == [
        "sft",
        "imitation-seed0",
        "grpo1-seed0",
        "grpo2-grpo_f1-seed0",
        "grpo2-eog-seed0",
        "grpo2-placebo-seed0",
    ]
    assert set(record["metrics"]["per_arm"]) == set(ARMS)
    budgets = record["metrics"]["budgets"]
    # equal updates after SFT for every trained arm; the three RL arms sampled the same number of sequences
    assert {budgets[a]["updates_after_sft"] for a in ARMS if a != "sft"} == {4}
    assert {"confidence", "min_gain", "f1_tolerance", "min_valid", "min_rl_gain"} <= set(
        record["evidence"]["thresholds"]
    )
    assert set(record["evidence"]["parts"]) == {
        "a_eog_beats_sft_ood",
        "b_eog_beats_imitation_ood",
        "c_path_reward_raises_faithfulness",
        "d_f1_within_tolerance",
        "e_eog_beats_placebo_faithfulness",
    }
    assert set(record["evidence"]["gates"]) == {"sft_outputs_parse", "rl_raises_f1"}
    assert len(record["metrics"]["tests"]["eog_vs_placebo_faithfulness"]["per_seed"]) == 1
    assert sorted(record["plots"]) == ["faithfulness_f1.png", "hits_at_1.png"]


def test_smoke_run_on_user_data(tmp_path):
    task = make_task(1, n_sft=30, n_rl=30, n_test=10)
    data = tmp_path / "rog.jsonl"
    dump_rog(task.sft + task.rl + task.test_id + task.test_ood, data)
    out = tmp_path / "runs"
    # in-process (the CLI subprocess path is covered by the smoke test above)
    assert cli.main(["run", "eog", "--scale", "smoke", "--out", str(out), "--quiet", "--set", f"data={data}"]) == 0
    record = json.loads(next((out / "eog").glob("*/result.json")).read_text())
    assert record["metrics"]["task"]["source"] == "data"
    assert record["metrics"]["task"]["test_ood"] > 0


def test_gpu_preset_is_the_pretrained_backend():
    values = EogConfig.preset_values("gpu")
    assert values["backend"] == "smollm2" and values["device"] == "cuda" and values["n_seeds"] >= 3
    # the gpu preset's task fits its KG (built here without the model)
    config = dataclasses.replace(EogConfig.preset("smoke"), **{k: v for k, v in values.items() if k != "device"})
    task = build_task(config)
    assert (len(task.rl), len(task.test_ood)) == (values["n_rl"], values["n_test"])


def test_stage_three_gives_eog_the_path_reward_and_the_placebo_a_placebo_path(monkeypatch, tmp_path):
    # wiring: the three stage-3 arms differ only in their reward map; EoG's path term scores the gold path
    import iclr26.eog.experiment as experiment
    from iclr26.common.experiment import RunContext
    from iclr26.eog.rewards import F1_ONLY, F1_PLUS_PATH
    from iclr26.eog.training import StageCurves

    seen = {}

    def fake_stage(policy, pool, *, weights, path_override, seed, **kw):
        seen.setdefault("pool", pool)
        seen[len(seen)] = (weights, path_override, seed)
        return StageCurves()

    monkeypatch.setattr(experiment, "grpo_stage", fake_stage)
    config = dataclasses.replace(EogConfig.preset("smoke"), n_sft=8, n_rl=8, n_test=2)
    task = build_task(config)
    ctx = RunContext(out_dir=tmp_path, seed=0, quiet=True)
    state = experiment.policy_from(config, task, 0, ctx).state()
    for arm in ("grpo_f1", "eog", "placebo"):
        experiment.rl_unit(config, task, 0, ctx, state, "stage3", arm)
    (f1_w, f1_path, s1), (eog_w, eog_path, s2), (pl_w, pl_path, s3) = seen[1], seen[2], seen[3]
    assert f1_w == F1_ONLY and f1_path is None
    assert eog_w == F1_PLUS_PATH and eog_w.path > 0 and eog_path is None  # None: the path term scores gold paths
    assert pl_w == F1_PLUS_PATH and pl_path is not None
    for e in task.rl:  # the placebo's paths are off the gold path
        assert not {tuple(t) for t in pl_path[e.qid][0]} & set(e.gold_triples)
    assert s1 == s2 == s3  # paired: the same prompt draws and sampling stream
