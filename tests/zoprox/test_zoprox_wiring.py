"""Wiring: in the Gaussian-Lasso study the sampler's arm and its N = 1 control differ in the interaction alone."""

from __future__ import annotations

import torch

from iclr26.zoprox import studies
from iclr26.zoprox.studies import lasso_study
from iclr26.zoprox.targets import gaussian_lasso_mixture


def _study(seed: int):
    return lasso_study(
        gaussian_lasso_mixture(torch.Generator().manual_seed(0)),
        seed=seed,
        n_particles=12,
        step_size=0.1,
        n_mc=8,
        n_diffusion_steps=2,
        n_iters=6,
        rgo_step=1 / 135,
        rgo_weak_convexity=27.0,
        rgo_iters=40,
        rgo_thin=2,
        window=3,
        reference_size=200,
        progress=lambda iterable=None, **_: iterable,
    )


def test_the_interacting_arm_and_its_control_differ_only_in_the_interaction(monkeypatch):
    calls = []
    real_sample = studies.sample

    def record(potential, x0, *args, generator, **kwargs):
        calls.append({"x0": x0.clone(), "args": args, "rng": generator.get_state(), **kwargs})
        return real_sample(potential, x0, *args, generator=generator, **kwargs)

    monkeypatch.setattr(studies, "sample", record)
    study = _study(0)
    arm, control = calls
    assert arm.pop("interacting") is True and control.pop("interacting") is False
    arm.pop("progress"), control.pop("progress")  # a label for the progress bar
    # the same start points, sizes, step, sub-steps, dtype and random stream
    assert torch.equal(arm.pop("x0"), control.pop("x0")) and torch.equal(arm.pop("rng"), control.pop("rng"))
    assert arm == control
    zod, ind = study.curves["zod"], study.curves["zod_independent"]
    # same iterations and the same oracle queries at each KL window (same start, step, M, T and budget) ...
    assert zod.iters == ind.iters and zod.queries == ind.queries
    # ... but other samples: each particle's score estimate uses every particle's draws, or only its own
    assert not torch.equal(study.final_samples["zod"], study.final_samples["zod_independent"])


def test_seeds_of_the_study_are_replicates():
    a, b = _study(0), _study(1000)
    assert a.curves["zod"].queries == b.curves["zod"].queries
    assert not torch.equal(a.final_samples["zod"], b.final_samples["zod"])
    # the same seed gives the same study
    assert torch.equal(_study(0).final_samples["zod"], a.final_samples["zod"])
