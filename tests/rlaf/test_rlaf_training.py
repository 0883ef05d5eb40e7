"""GRPO training of the RLAF policy: direction of the update, determinism, real-solver iteration, the CLI run."""

from __future__ import annotations

import math

import pytest
import torch

from iclr26 import cli
from iclr26.rlaf.cnf import CNF
from iclr26.rlaf.config import RLAFConfig
from iclr26.rlaf.generators import random_3sat
from iclr26.rlaf.graph import build_graph
from iclr26.rlaf.grpo_trainer import GRPOSettings, GRPOTrainer, costs_of
from iclr26.rlaf.policy import RLAFPolicy
from iclr26.rlaf.result import SolveResult
from iclr26.rlaf.solvers import SolverPool, SolveTask
from iclr26.rlaf.verdict import paired_gain


def _result(decisions: int, status: str = "SAT") -> SolveResult:
    return SolveResult(
        status=status,
        model=None,
        decisions=decisions,
        conflicts=0,
        propagations=0,
        restarts=0,
        wall_time_s=0.0,
        solver="fake",
    )


class CountingPool:
    """A stand-in solver whose cost is the number of variables the guidance sets true first."""

    def map(self, tasks: list[SolveTask]) -> list[SolveResult]:
        return [_result(int(t.guidance.polarity.sum())) for t in tasks]


def test_costs_fill_budget_outs_with_the_largest_completed_cost():
    # [100, 300, 900 budget-out] -> official 300 (completed runs), earlier rule 900
    results = [_result(100), _result(300), _result(900, "UNKNOWN")]
    assert costs_of(results).tolist() == [100.0, 300.0, 300.0]
    assert costs_of(results, rule="batch_max").tolist() == [100.0, 300.0, 900.0]
    assert costs_of(results, fill=1e4).tolist() == [100.0, 300.0, 1e4]
    # nothing finished: the largest count of all, under either rule
    assert costs_of([_result(4, "UNKNOWN"), _result(6, "UNKNOWN")]).tolist() == [6.0, 6.0]
    with pytest.raises(ValueError, match="fill_rule must be"):
        GRPOSettings(fill_rule="mean")


def test_grpo_moves_the_policy_towards_cheaper_parameterisations():
    # cost = #true polarities → GRPO must lower P(p = 1) = σ(ρ) below its initial ½
    torch.manual_seed(0)
    policy = RLAFPolicy(channels=16, num_layers=2)
    cnfs = [random_3sat(12, seed=s) for s in range(4)]
    trainer = GRPOTrainer(
        policy, GRPOSettings(samples_per_formula=8, steps=5, lr=1e-2, warmup_iterations=0), pool=CountingPool(), seed=0
    )
    first = trainer.iteration(cnfs)
    assert first.ratio_mean == pytest.approx(1.0, abs=0.5) and math.isfinite(first.loss)
    for _ in range(5):
        last = trainer.iteration(cnfs)
    with torch.no_grad():
        p_true = torch.sigmoid(policy(build_graph(cnfs))[:, 0]).mean().item()
    assert p_true < 0.3
    assert last.mean_cost < first.mean_cost


def test_first_step_sits_at_the_sampling_policy():
    # with one step the reported loss is evaluated before any update: π_θ = π_old, so ρ = 1, KL(π_θ‖π_old) = 0,
    # nothing is clipped, and loss = −mean_j Â_j = 0 because the advantages are centred within every group
    torch.manual_seed(2)
    policy = RLAFPolicy(channels=8, num_layers=1)
    with torch.no_grad():  # a policy away from the zero init, so that ρ, μ differ between variables
        policy.head[-1].weight.normal_(0.0, 0.3)
    trainer = GRPOTrainer(
        policy, GRPOSettings(samples_per_formula=6, steps=1, warmup_iterations=0), pool=CountingPool(), seed=0
    )
    stats = trainer.iteration([random_3sat(15, seed=s) for s in range(3)])
    assert stats.ratio_mean == pytest.approx(1.0, abs=1e-6)
    assert stats.kl == 0.0 and stats.clip_fraction == 0.0
    assert abs(stats.loss) < 1e-6
    assert stats.lr == pytest.approx(1e-4)  # warm-up off: the base learning rate from the first iteration


def _train_twice(seed: int) -> tuple[list[float], torch.Tensor]:
    torch.manual_seed(1)
    policy = RLAFPolicy(channels=8, num_layers=1)
    trainer = GRPOTrainer(
        policy,
        GRPOSettings(samples_per_formula=4, steps=2, lr=1e-2, warmup_iterations=1),
        pool=SolverPool(1),
        seed=seed,
    )
    cnfs = [random_3sat(20, seed=s) for s in range(3)]
    costs = [trainer.iteration(cnfs).mean_cost for _ in range(2)]
    return costs, policy.head[-1].weight.detach().clone()


def test_real_solver_iterations_are_deterministic_under_the_seed():
    costs_a, weights_a = _train_twice(3)
    costs_b, weights_b = _train_twice(3)
    assert costs_a == costs_b and torch.equal(weights_a, weights_b)
    assert torch.count_nonzero(weights_a) > 0  # the zero-initialised head has moved
    costs_c, _ = _train_twice(4)
    assert costs_c != costs_a


def test_settings_validation():
    with pytest.raises(ValueError, match="samples_per_formula must be >= 2"):
        GRPOSettings(samples_per_formula=1)
    with pytest.raises(ValueError, match=r"clip_eps must be in \(0, 1\), got 0.0"):
        GRPOSettings(clip_eps=0.0)
    with pytest.raises(ValueError, match="max_conflicts must be >= 1 or None, got 0"):
        GRPOSettings(max_conflicts=0)
    with pytest.raises(ValueError, match="solver must be one of .*got 'march'"):
        GRPOSettings(solver="march")


def test_smoke_run_through_the_cli(smoke):
    record = smoke("rlaf")
    summary = record["metrics"]["ratio_summary"]
    assert set(summary) == {
        f"3sat/{n}/{s}/{m}"
        for n in (20, 30)
        for s in ("cdcl", "ergo", "glucose4")
        for m in ("degree", "supervised", "rlaf", "shuffled")
    }
    assert all(v > 0 for v in summary.values())
    assert set(record["evidence"]["rlaf_over_unguided_cdcl"]) == {"3sat/20", "3sat/30"}
    evidence = record["evidence"]
    assert evidence["ratio_part_held"] == all(
        v <= evidence["threshold"] for v in evidence["rlaf_over_unguided_cdcl"].values()
    )
    paired = evidence["paired_over_formulas_cdcl"]
    assert evidence["degree_part_held"] == all(p["rlaf_vs_degree"]["beats"] for p in paired.values())
    # the smoke policy has not moved (2 iterations) and n = 20 takes under 20 decisions: both gates fail
    assert record["claim_held"] == "inconclusive"
    assert set(record["failed_gates"]) == {"guidance_acts", "instances_not_trivial"}
    assert evidence["control_failed"] == all(
        v > evidence["threshold"] for v in evidence["shuffled_over_unguided_cdcl"].values()
    )
    test = paired["3sat/20"]["rlaf_vs_degree"]
    assert test["formulas"] == 4 and test["beats"] == (test["lower_bound"] > 0)
    assert test["ci95"][0] <= test["mean_log_gain"] <= test["ci95"][1]
    assert test["geomean_factor"] == pytest.approx(math.exp(test["mean_log_gain"]))
    # the verdict's ratios are recomputed from the per-seed mean decisions in the record
    for n in (20, 30):
        cdcl = record["metrics"]["results"]["3sat"][str(n)]["cdcl"]
        ratios = [r / u for r, u in zip(cdcl["rlaf"]["mean"], cdcl["unguided"]["mean"], strict=True)]
        assert cdcl["rlaf"]["ratio"] == pytest.approx(ratios)
        assert record["evidence"]["rlaf_over_unguided_cdcl"][f"3sat/{n}"] == pytest.approx(sum(ratios) / len(ratios))
    assert set(record["plots"]) == {"cost_distributions.png", "training.png", "ratios.png"}
    history = record["metrics"]["training"]["3sat"]["seed0"]
    assert len(history["sampled_cost"]) == 2 and len(history["val_decisions"]) == 3
    # units of work: the data, the unguided solvers per set, then per seed GRPO, the baseline and the evaluations
    sets_solvers = [f"{n}-{s}" for n in (20, 30) for s in ("cdcl", "ergo", "glucose4")]
    assert record["units"] == [
        "data-3sat",
        *(f"baselines-3sat-{x}" for x in sets_solvers),
        "data-hard-3sat",
        "hard-baseline-3sat-40",
        "grpo-3sat-seed0",
        "supervised-3sat-seed0",
        *(f"eval-3sat-seed0-{x}" for x in sets_solvers),
        "hard-3sat-seed0-40",
    ]
    # the harder 3-SAT set: decision ratio in the metrics, wall-clock ratio with the GNN in the timings
    assert list(record["metrics"]["hard_cdcl"]) == ["3sat-40"]  # smoke has one family: no 3-colouring set
    hard = record["metrics"]["hard_cdcl"]["3sat-40"]
    assert hard["formulas"] == 2 and len(hard["rlaf_over_unguided_mean_decisions"]) == 1
    assert hard["mean_over_seeds"] == pytest.approx(hard["rlaf_over_unguided_mean_decisions"][0])
    assert hard["mean_over_seeds"] > 0
    hard_t = record["timings"]["hard"]["3sat-40"]
    q1, q3 = hard_t["wall_ratio_quartiles"]
    assert 0 < q1 <= hard_t["median_wall_ratio_with_inference"] <= q3
    assert "hard" not in str(record["evidence"])  # never in the verdict
    # wall and GNN times are timings only; the verdict's threshold carries its source
    cdcl = record["metrics"]["results"]["3sat"]["20"]["cdcl"]
    assert set(cdcl["rlaf"]) == {"mean", "median", "conflicts", "propagations", "ratio", "unknown"}
    assert set(record["timings"]["results"]["3sat"]["20"]["cdcl"]["rlaf"]) == {"wall_s", "inference_s"}
    wall = record["timings"]["median_wall_ratio_with_inference"]
    assert set(wall) == {f"3sat/{x.replace('-', '/')}/{m}" for x in sets_solvers for m in ("supervised", "rlaf")}
    margin = record["evidence"]["thresholds"]["margin"]
    assert margin["value"] == 0.05 and "not in the paper" in margin["source"]
    assert record["evidence"]["threshold"] == pytest.approx(0.95)
    assert set(evidence["thresholds"]) == {
        "margin",
        "confidence",
        "degree_scale",
        "min_unguided_decisions",
        "min_acting_fraction",
    }


def test_help_config_says_the_reproduction_is_cpu_bound(capsys):
    assert cli.main(["run", "rlaf", "--help-config"]) == 0
    out = capsys.readouterr().out
    assert "runs on the CPU at every scale: the reward is the decision count of the project's CDCL" in out
    assert "data " in out and "SATLIB" in out


def test_cli_rejects_a_test_set_without_the_training_size(tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(["run", "rlaf", "--scale", "smoke", "--set", "sat_test_vars=30,40", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "sat_test_vars" in err and "training size 20" in err
    assert not (out / "rlaf").exists()


def test_empty_formula_graph_is_rejected():
    with pytest.raises(ValueError, match="has no variables"):
        build_graph([CNF(0, ())])


def test_paired_test_over_formulas_by_hand():
    config = RLAFConfig(confidence=0.95)
    # log(1 + decisions): baseline (3, 7) -> (log 4, log 8), method (1, 3) -> (log 2, log 4): gain log 2 on both
    # formulas, zero spread, so the lower bound is log 2 > 0 and the method needs 2x fewer decisions (geomean)
    test = paired_gain([[1, 3]], [[3, 7]], confidence=config.confidence)
    assert test["mean_log_gain"] == pytest.approx(math.log(2)) and test["lower_bound"] == pytest.approx(math.log(2))
    assert test["beats"] and test["geomean_factor"] == pytest.approx(2.0)
    # two seeds of the method are averaged in log space per formula: formula 0 -> (log 2 + log 4) / 2 = 1.5 log 2,
    # formula 1 -> log 4; gains log 4 - 1.5 log 2 = 0.5 log 2 and log 8 - log 4 = log 2 -> mean 0.75 log 2
    test = paired_gain([[1, 3], [3, 3]], [[3, 7]], confidence=config.confidence)
    assert test["mean_log_gain"] == pytest.approx(0.75 * math.log(2))
    # t(0.95, 1) = 6.314, se = (0.5 log 2 / sqrt 2) / sqrt 2 = 0.25 log 2: lower = (0.75 - 1.578) log 2 < 0
    assert test["lower_bound"] == pytest.approx((0.75 - 6.3138 * 0.25) * math.log(2), rel=1e-4)
    assert not test["beats"]
    # a method worse than its baseline never beats it
    assert not paired_gain([[7, 9, 5]], [[3, 4, 2]], confidence=config.confidence)["beats"]
