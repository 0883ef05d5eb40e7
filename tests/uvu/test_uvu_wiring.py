"""The wiring of the reproduction: what differs between the arms, and where the work runs.

- UVU and its control RND differ in exactly what the paper changes: with γ = 0 UVU's TD loss on the synthetic reward
  is RND's regression onto the target; with γ > 0 it is not.
- The rejection study builds UVU, every ensemble and RND with the same hidden widths, steps, batch and LR.
- Both studies put their networks and batches on ``ctx.device`` (here the ``meta`` device, which a CPU-only machine
  has too, so a study that ignored it would be seen) and hand ``ctx.world`` to every trainer.
"""

from __future__ import annotations

import copy
import dataclasses

import pytest
import torch

from iclr26.common.distributed import World
from iclr26.common.experiment import RunContext
from iclr26.uvu import RND, UVU, FitResult, Transitions, UniversalMLP, studies
from iclr26.uvu.config import UVUConfig


def _batch(n: int = 6) -> Transitions:
    g = torch.Generator().manual_seed(1)
    actions = torch.randint(0, 3, (n,), generator=g)
    return Transitions(
        states=torch.randn(n, 4, generator=g), actions=actions, rewards=torch.randn(n, generator=g),
        next_states=torch.randn(n, 4, generator=g), next_actions=actions.flip(0), dones=torch.zeros(n),
        tasks=torch.randn(n, 2, generator=g),
    )  # fmt: skip


def test_uvu_with_gamma_zero_is_rnd_and_gamma_is_what_differs():
    torch.manual_seed(0)
    u, g = (UniversalMLP(4, 2, num_actions=3, hidden=(8,), num_heads=2) for _ in range(2))
    batch = _batch()
    rnd = RND(copy.deepcopy(u), copy.deepcopy(g))
    myopic = UVU(copy.deepcopy(u), copy.deepcopy(g), gamma=0.0)
    torch.testing.assert_close(myopic.loss(batch), rnd.loss(batch), rtol=1e-6, atol=1e-7)
    propagated = UVU(copy.deepcopy(u), copy.deepcopy(g), gamma=0.9)
    assert not torch.allclose(propagated.loss(batch), rnd.loss(batch))


class _Stop(Exception):
    """Raised by the recording trainer once it has seen what it was handed."""


def _recorder(seen: list[dict]):
    def record(model, data, *args, world, **kwargs):
        seen.append(
            {
                "model": model,
                "params": {p.device.type for p in model.parameters()},
                "data": data.states.device.type,
                "world": world,
                "kwargs": kwargs,
            }
        )
        raise _Stop

    return record


def _ctx(tmp_path) -> RunContext:
    return RunContext(out_dir=tmp_path, seed=0, quiet=True, world=World(), device=torch.device("meta"))


def test_ntk_study_trains_on_the_run_device_with_the_run_world(tmp_path, monkeypatch):
    seen: list[dict] = []
    monkeypatch.setattr(studies, "fit", _recorder(seen))
    ctx = _ctx(tmp_path)
    with pytest.raises(_Stop):
        studies.ntk_study(UVUConfig.preset("smoke"), ctx)
    (call,) = seen
    assert call["params"] == {"meta"} and call["data"] == "meta"
    assert call["world"] is ctx.world


def test_rejection_study_trains_on_the_run_device_with_the_run_world(tmp_path, monkeypatch):
    seen: list[dict] = []
    monkeypatch.setattr(studies, "train_cql_dqn", _recorder(seen))
    ctx = _ctx(tmp_path)
    with pytest.raises(_Stop):
        studies.rejection_study(UVUConfig.preset("smoke"), ctx)
    (call,) = seen
    assert call["params"] == {"meta"} and call["data"] == "meta"
    assert call["world"] is ctx.world


def test_every_uncertainty_method_gets_the_same_architecture_and_budget(tmp_path, monkeypatch):
    """The policy unit runs for real on the CPU; then each method's trainer is recorded instead of run."""
    config = dataclasses.replace(UVUConfig.preset("smoke"), rejection_seeds=2)
    seen: list[dict] = []

    def record(model, data, **kwargs):
        seen.append({"model": model, **kwargs})
        return FitResult(losses=[0.0], wall_time_s=1.0, cpu_time_s=1.0)

    monkeypatch.setattr(studies, "fit", record)
    ctx = RunContext(out_dir=tmp_path, seed=0, quiet=True, world=World())
    studies.rejection_study(config, ctx)
    names = [type(s["model"]).__name__ for s in seen]
    assert names == ["UVU", "ValueEnsemble", "ValueEnsemble", "RND"]
    for s in seen:
        assert (s["steps"], s["lr"], s["batch_size"]) == (config.pe_steps, config.lr, config.batch_size)
        assert s["world"] is ctx.world
    uvu, rnd = seen[0]["model"], seen[-1]["model"]
    assert uvu.online.widths[1:-1] == rnd.predictor.widths[1:-1] == config.pe_hidden
    assert uvu.online.widths[-1] == rnd.predictor.widths[-1] == config.uvu_heads
    # every ensemble: the configured number of members, each UVU's torso with one head (same inputs, same hidden)
    one_head = UniversalMLP(
        uvu.online.state_dim, uvu.online.task_dim, num_actions=uvu.online.num_actions, hidden=config.pe_hidden
    )
    ensembles = [s["model"] for s in seen[1:-1]]
    assert [e.size for e in ensembles] == list(config.ensemble_sizes)
    for e in ensembles:
        assert e.signature() == {**one_head.signature(), "outputs": e.size}
        assert e.member_parameters() == sum(p.numel() for p in one_head.parameters())
