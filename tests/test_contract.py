"""The contract every reproduction follows (``iclr26/common/experiment.py``), checked for each one at smoke scale.

- Deterministic: two runs of one config and seed give records equal apart from the timing keys.
- Resumable: a run stopped after its first unit of work (Ctrl-C) exits 130, marks its folder, and ``--resume``
  finishes it with the same record as an uninterrupted run. The first run below goes through the real CLI in a
  subprocess; the interrupted and resumed one in-process, so both the determinism of every unit and the resume
  path are compared against it.
"""

from __future__ import annotations

import json

import pytest

from iclr26 import cli
from iclr26.catalog import implemented
from iclr26.common.experiment import RunContext
from iclr26.common.records import INTERRUPTED_FILE, RESULT_FILE, deterministic_view
from tests.conftest import shared_smoke_record

MODULES = [p.module for p in implemented()] + ["selfcheck"]


def _interrupt_after_first_unit(monkeypatch) -> None:
    """Make the second unit of a run raise KeyboardInterrupt, as Ctrl-C would while it computes."""
    real_unit = RunContext.unit

    def unit(self, key, compute):
        if len(self.units) >= 1:
            raise KeyboardInterrupt
        return real_unit(self, key, compute)

    monkeypatch.setattr(RunContext, "unit", unit)


@pytest.mark.parametrize("module", MODULES)
def test_smoke_run_is_deterministic_and_resumes_to_the_same_record(module, smoke_cache, tmp_path, monkeypatch, capsys):
    fresh, _ = shared_smoke_record(module, smoke_cache)  # through the CLI in a subprocess, shared with module tests
    assert fresh["verdict_meaningful"] is False and fresh["resumed_units"] == []
    assert module == "selfcheck" or len(fresh["units"]) >= 2, "a reproduction needs two units to resume between"

    out = tmp_path / "resumed"
    with monkeypatch.context() as patch:
        _interrupt_after_first_unit(patch)
        assert cli.main(["run", module, "--scale", "smoke", "--out", str(out), "--quiet"]) == (
            130 if len(fresh["units"]) > 1 else 0
        )
    assert "interrupted" in capsys.readouterr().err or len(fresh["units"]) == 1
    (run_dir,) = (out / module).iterdir()
    if len(fresh["units"]) > 1:
        assert (run_dir / INTERRUPTED_FILE).is_file() and not (run_dir / RESULT_FILE).exists()
        assert [p.stem for p in (run_dir / "units").glob("*.pkl")] == fresh["units"][:1]
        assert cli.main(["run", module, "--resume", str(run_dir), "--quiet"]) == 0
        assert not (run_dir / INTERRUPTED_FILE).exists()
    resumed = json.loads((run_dir / RESULT_FILE).read_text())
    if len(fresh["units"]) > 1:
        assert resumed["resumed_units"] == fresh["units"][:1]
    assert deterministic_view(resumed) == deterministic_view(fresh)
    assert not (run_dir / "units").exists()


@pytest.mark.parametrize("module", MODULES)
def test_gpu_preset_without_cuda_fails_before_any_work_or_says_it_is_cpu_bound(module, tmp_path, capsys):
    """On this CPU-only machine a gpu preset that needs CUDA stops at once (exit 2, nothing written); a
    reproduction that runs on the CPU by design says so in --help-config instead."""
    import torch

    from iclr26.catalog import load_experiment

    cls = load_experiment(module).config_cls
    gpu_device = cls.preset_values("gpu").get("device")
    if gpu_device is None:
        assert cls.CPU_BOUND or module == "selfcheck", f"{module}: gpu preset names no device and no CPU_BOUND reason"
        assert cli.main(["run", module, "--help-config"]) == 0
        assert module == "selfcheck" or f"runs on the CPU at every scale: {cls.CPU_BOUND}" in capsys.readouterr().out
        return
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    assert cli.main(["run", module, "--scale", "gpu", "--out", str(tmp_path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "config field 'device'" in err and "CUDA is not available here; use --set device=cpu" in err
    assert not (tmp_path / module).exists()
