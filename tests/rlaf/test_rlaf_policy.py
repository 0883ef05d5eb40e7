"""The literal–clause graph, the GNN, the policy's distribution, save/load, and the supervised baseline."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from iclr26.rlaf.cnf import CNF
from iclr26.rlaf.generators import random_3sat
from iclr26.rlaf.gnn import mean_aggregate
from iclr26.rlaf.graph import build_graph
from iclr26.rlaf.guided import guided_solve
from iclr26.rlaf.policy import (
    RLAFPolicy,
    policy_kl,
    policy_log_prob,
    policy_mode,
    sample_parameterisations,
    split_guidance,
)
from iclr26.rlaf.solvers import solve
from iclr26.rlaf.supervised import LiteralPredictor, backbone_labels, core_labels, train_supervised


def _random_policy(seed: int = 0, channels: int = 16) -> RLAFPolicy:
    torch.manual_seed(seed)
    policy = RLAFPolicy(channels=channels, num_layers=2)
    with torch.no_grad():  # leave the zero init so that the outputs depend on the formula
        policy.head[-1].weight.normal_(0.0, 0.5)
        policy.head[-1].bias.normal_(0.0, 0.5)
    return policy


def test_graph_of_a_small_batch():
    # formula A: (1 ∨ ¬2) ∧ (2 ∨ 3), 3 variables; formula B: (¬1), 1 variable
    # literal of DIMACS ±v in formula b: 2·(offset_b + v − 1) + [negative]
    graph = build_graph([CNF(3, ((1, -2), (2, 3))), CNF(1, ((-1,),))])
    assert graph.edge_lit.tolist() == [0, 3, 2, 4, 7]
    assert graph.edge_cls.tolist() == [0, 0, 1, 1, 2]
    assert graph.var_batch.tolist() == [0, 0, 0, 1]
    assert graph.num_vars == (3, 1) and graph.num_literals == 8 and graph.num_clauses == 3
    degrees = torch.tensor([1, 0, 1, 1, 1, 0, 0, 1], dtype=torch.float32)
    torch.testing.assert_close(graph.lit_features.squeeze(1), torch.log1p(degrees))
    torch.testing.assert_close(graph.cls_features.squeeze(1), torch.log1p(torch.tensor([2.0, 2.0, 1.0])))
    with pytest.raises(ValueError, match="at least one formula"):
        build_graph([])


def test_mean_aggregate_matches_a_loop():
    gen = torch.Generator().manual_seed(0)
    values = torch.randn(5, 3, generator=gen)
    src = torch.tensor([0, 1, 4, 4, 2])
    dst = torch.tensor([1, 1, 0, 3, 3])
    out = mean_aggregate(values, src, dst, 4)
    expected = torch.zeros(4, 3)
    for node in range(4):
        incoming = [values[s] for s, d in zip(src.tolist(), dst.tolist(), strict=True) if d == node]
        if incoming:
            expected[node] = torch.stack(incoming).mean(0)
    torch.testing.assert_close(out, expected)


def test_batched_output_equals_per_formula_output():
    policy = _random_policy()
    cnfs = [random_3sat(12, seed=1), random_3sat(15, seed=2), random_3sat(10, seed=3)]
    batched = policy(build_graph(cnfs))
    separate = torch.cat([policy(build_graph([c])) for c in cnfs])
    torch.testing.assert_close(batched, separate, atol=1e-5, rtol=1e-5)


def test_renaming_variables_permutes_the_output():
    # the GNN is equivariant: renaming variable v to π(v) moves its output row to π(v)
    policy = _random_policy(1)
    cnf = random_3sat(14, seed=9)
    perm = np.random.default_rng(0).permutation(14)  # new index of old variable v−1
    renamed = CNF(14, tuple(tuple(int(np.sign(x)) * (int(perm[abs(x) - 1]) + 1) for x in c) for c in cnf.clauses))
    y = policy(build_graph([cnf]))
    y_renamed = policy(build_graph([renamed]))
    torch.testing.assert_close(y_renamed[torch.from_numpy(perm)], y, atol=1e-5, rtol=1e-5)


def test_log_prob_and_kl_match_torch_distributions():
    gen = torch.Generator().manual_seed(3)
    y = torch.randn(7, 2, generator=gen, dtype=torch.float64) * 3
    y_ref = torch.randn(7, 2, generator=gen, dtype=torch.float64)
    var_batch = torch.tensor([0, 0, 0, 1, 1, 1, 1])
    sigma = 0.1
    samples = sample_parameterisations(y, 5, sigma=sigma, generator=gen)
    logp = policy_log_prob(y, samples.polarity, samples.weight, var_batch, 2, sigma=sigma)
    rho = y[:, 0].clamp(-8, 8)
    bern = torch.distributions.Bernoulli(logits=rho)
    lognormal = torch.distributions.LogNormal(y[:, 1], sigma)
    per_var = bern.log_prob(samples.polarity.double()) + lognormal.log_prob(samples.weight)  # (S, V)
    torch.testing.assert_close(logp, torch.stack([per_var[:, :3].sum(1), per_var[:, 3:].sum(1)], dim=1))
    kl = policy_kl(y, y_ref, var_batch, 2, sigma=sigma)
    kl_var = torch.distributions.kl_divergence(bern, torch.distributions.Bernoulli(logits=y_ref[:, 0])) + (
        torch.distributions.kl_divergence(
            torch.distributions.Normal(y[:, 1], sigma), torch.distributions.Normal(y_ref[:, 1], sigma)
        )
    )
    torch.testing.assert_close(kl, torch.stack([kl_var[:3].sum(), kl_var[3:].sum()]))
    torch.testing.assert_close(policy_kl(y, y, var_batch, 2, sigma=sigma), torch.zeros(2, dtype=torch.float64))


def test_sampling_statistics_mode_and_clamp():
    # ρ = +20 is clamped to 8: P(p = 1) = σ(8) = 0.99966; μ = log 3: log w ~ N(log 3, 0.1²)
    y = torch.tensor([[20.0, math.log(3.0)]] * 400)
    samples = sample_parameterisations(y, 20, sigma=0.1, generator=torch.Generator().manual_seed(0))
    assert samples.polarity.float().mean().item() > 0.99
    log_w = samples.weight.log()
    assert abs(log_w.mean().item() - math.log(3.0)) < 0.01 and abs(log_w.std().item() - 0.1) < 0.01
    clamped = torch.tensor([[8.0, 0.0]])
    one = torch.ones(1, 1, dtype=torch.bool)
    w = torch.ones(1, 1)
    vb = torch.zeros(1, dtype=torch.long)
    assert policy_log_prob(torch.tensor([[20.0, 0.0]]), one, w, vb, 1, sigma=0.1).item() == pytest.approx(
        policy_log_prob(clamped, one, w, vb, 1, sigma=0.1).item()
    )
    mode = policy_mode(torch.tensor([[0.5, 0.0], [-0.5, 1.0]]), sigma=0.1)
    assert mode.polarity.tolist() == [[True, False]]
    torch.testing.assert_close(mode.weight, torch.tensor([[math.exp(-0.01), math.exp(1.0 - 0.01)]]))
    same = sample_parameterisations(y[:5], 3, sigma=0.1, generator=torch.Generator().manual_seed(4))
    again = sample_parameterisations(y[:5], 3, sigma=0.1, generator=torch.Generator().manual_seed(4))
    assert torch.equal(same.weight, again.weight) and torch.equal(same.polarity, again.polarity)


def test_split_guidance_cuts_per_formula():
    y = torch.zeros(5, 2)
    samples = sample_parameterisations(y, 2, sigma=0.1, generator=torch.Generator().manual_seed(0))
    parts = split_guidance(samples, (2, 3))
    assert [[g.num_vars for g in row] for row in parts] == [[2, 2], [3, 3]]
    np.testing.assert_allclose(parts[1][1].weight, samples.weight[1, 2:].double().numpy())
    with pytest.raises(ValueError, match="num_vars sums to 4"):
        split_guidance(samples, (2, 2))


def test_zero_initialised_policy_is_the_unguided_solver():
    # ρ = μ = 0 everywhere: mode = (all false, w = e^{−0.01}) → exactly the unguided CDCL's search
    torch.manual_seed(0)
    policy = RLAFPolicy(channels=16, num_layers=2)
    cnf = random_3sat(40, seed=12)
    assert torch.count_nonzero(policy(build_graph([cnf]))) == 0
    guided = guided_solve(cnf, policy, solver="cdcl")
    base = solve(cnf, solver="cdcl")
    assert (guided.result.decisions, guided.result.model) == (base.decisions, base.model)
    assert guided.total_time_s >= guided.result.wall_time_s


def test_save_and_load_round_trip(tmp_path):
    policy = _random_policy(5)
    path = tmp_path / "policy.pt"
    policy.save(path)
    loaded = RLAFPolicy.load(path)
    graph = build_graph([random_3sat(20, seed=0)])
    torch.testing.assert_close(loaded(graph), policy(graph))
    cnf = random_3sat(30, seed=1)
    from_path = guided_solve(cnf, path, solver="glucose4")
    assert from_path.result.injection == ("phase",)
    np.testing.assert_array_equal(from_path.guidance.polarity, policy.guidance([cnf])[0].polarity)
    torch.save({"something": 1}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not an RLAF policy file"):
        RLAFPolicy.load(tmp_path / "other.pt")


# ---------------------------------------------------------------- supervised baseline
def test_backbone_labels_of_a_crafted_formula():
    # (1) ∧ (¬4) ∧ (¬2 ∨ 3): 1 and ¬4 hold in every model, 2 and 3 are free in some → backbone {1, ¬4}
    # literal index 2(v−1) + [negative]: 1 → 0, ¬4 → 7
    labels = backbone_labels(CNF(4, ((1,), (-4,), (-2, 3))))
    assert labels.tolist() == [1, 0, 0, 0, 0, 0, 0, 1]
    assert backbone_labels(CNF(1, ((1,), (-1,)))).sum() == 0  # UNSAT: no backbone


def test_core_labels_of_a_crafted_formula():
    # (1) ∧ (¬1) ∧ (2 ∨ 3): the core is {(1), (¬1)} → both literals of variable 1
    assert core_labels(CNF(3, ((1,), (-1,), (2, 3)))).tolist() == [1, 1, 0, 0, 0, 0]
    assert core_labels(CNF(2, ((1, 2),))).sum() == 0  # SAT: no core


@pytest.mark.parametrize(("target", "polarity"), [("backbone", False), ("core", True)])
def test_supervised_predictions_become_weights_and_polarities(target, polarity):
    # a constant logit b on every literal: q = σ(b), w = s·(q + q)/2 = s·σ(b); backbone: p = [q_x > q_¬x] = false
    model = LiteralPredictor(channels=8, num_layers=1, target=target, pred_scale=10.0)
    with torch.no_grad():
        model.head[-1].weight.zero_()
        model.head[-1].bias.fill_(0.7)
    (g,) = model.guidance([random_3sat(10, seed=0)])
    np.testing.assert_allclose(g.weight, np.full(10, 10.0 / (1.0 + math.exp(-0.7))), rtol=1e-6)
    assert g.polarity.tolist() == [polarity] * 10


def test_supervised_training_lowers_the_loss_and_checks_labels():
    cnfs = [random_3sat(15, seed=s) for s in range(6)]
    labels = [backbone_labels(c) for c in cnfs]
    torch.manual_seed(0)
    model = LiteralPredictor(channels=16, num_layers=2)
    history = train_supervised(
        model, cnfs, labels, epochs=15, batch_size=3, lr=3e-3, generator=torch.Generator().manual_seed(0)
    )
    assert history[-1] < history[0]
    with pytest.raises(ValueError, match="batch_size must be >= 1, got 0"):
        train_supervised(model, cnfs, labels, epochs=1, batch_size=0, lr=1e-3, generator=torch.Generator())
    with pytest.raises(ValueError, match="num_layers must be >= 1, got 0"):
        RLAFPolicy(channels=8, num_layers=0)
    with pytest.raises(ValueError, match=r"labels\[0\] must have shape"):
        train_supervised(model, cnfs[:1], [np.zeros(3)], epochs=1, batch_size=1, lr=1e-3, generator=torch.Generator())
