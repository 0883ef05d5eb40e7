"""The device check: every GPU-capable reproduction's smoke on CUDA, a timed slice of its gpu preset, and the
distributed and pretrained-LM paths on the GPU; one table with the projected wall time of each full gpu preset.

For every implemented module whose config has a ``device`` field and is not CPU-bound:

1. the smoke (``iclr26 run M --scale smoke --set device=cuda``), several at a time (they only check the code runs);
2. a slice of the gpu preset, alone on the GPU: the preset with the config's ``GPU_SLICE`` overrides, timed, with
   the GPU's utilisation and memory sampled every 0.2 s by ``nvidia-smi``. The projected wall time of the whole preset
   is ``slice time x work(preset) / work(slice)`` (``ExperimentConfig.work``), where the slice time counts from the
   first sample with the model on the GPU to the end (start-up and imports are left out: a long run pays them once).

Then the NCCL path (``torchrun`` with two ranks on the one GPU, where NCCL allows it, else one rank) and the
pretrained-LM path in bf16 (``benchmarks/pretrained_cuda_check.py``). Every step's failure is recorded and the check
goes on. It writes ``OUT/gpu_presets.json`` and ``OUT/gpu_presets.md`` (the table committed as
``benchmarks/gpu_presets.md``); ``iclr26 run M --help-config`` reads the projection of a module's preset from the
committed JSON.

Usage (on a machine with CUDA; ``--device cpu`` runs the same steps on the CPU as a dry run of the script)::

    PYTHONPATH=src python benchmarks/gpu_presets.py --out /tmp/gpu-check
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from iclr26.catalog import implemented, load_experiment  # noqa: E402
from iclr26.common.config import ExperimentConfig, apply_overrides, format_value  # noqa: E402

#: The committed result, read by ``--help-config``.
COMMITTED = ROOT / "benchmarks" / "gpu_presets.json"


@dataclass
class Sampler:
    """``nvidia-smi`` utilisation (%) and memory (MiB) of GPU 0 every ``period`` seconds, in a thread."""

    period: float = 0.2
    samples: list[tuple[float, float, float]] = field(default_factory=list)  # (time, util %, memory MiB)
    _stop: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> Sampler:
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        query = ["nvidia-smi", "--query-gpu=utilization.gpu,memory.used", "--format=csv,noheader,nounits", "-i", "0"]
        while not self._stop.is_set():
            try:
                text = subprocess.run(query, capture_output=True, text=True, timeout=5, check=True).stdout
                util, mem = (float(x) for x in text.strip().splitlines()[0].split(","))
                self.samples.append((time.monotonic(), util, mem))
            except (OSError, subprocess.SubprocessError, ValueError):
                pass
            self._stop.wait(self.period)


def _iclr26(args: list[str], timeout: float, env: dict[str, str]) -> tuple[int, str, float]:
    """Run ``python -m iclr26 ARGS``; (exit status, last lines of its output, seconds)."""
    t0 = time.monotonic()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "iclr26", *args], capture_output=True, text=True, timeout=timeout, env=env
        )
        code, text = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as err:
        code, text = 124, f"timed out after {timeout:g} s\n{(err.stdout or b'')[-2000:]!r}"
    return code, "\n".join(text.strip().splitlines()[-6:]), time.monotonic() - t0


def gpu_modules() -> list[str]:
    """Implemented modules whose config has a ``device`` field and that are not CPU-bound."""
    names = []
    for p in implemented():
        try:
            cls = load_experiment(p.module).config_cls
        except Exception:  # noqa: BLE001 - a module whose extra is missing here cannot be checked
            continue
        if not cls.CPU_BOUND and "device" in cls.__dataclass_fields__:
            names.append(p.module)
    return names


def slice_overrides(cls: type[ExperimentConfig], device: str) -> list[str]:
    return [f"{k}={format_value(v)}" for k, v in {**cls.GPU_SLICE, "device": device}.items()]


def work_ratio(cls: type[ExperimentConfig], device: str) -> tuple[float | None, float | None]:
    """(work of the gpu preset, work of its slice), each None where the config does not count its work."""
    preset = cls(**{**cls.preset_values("gpu"), "device": "cpu"})  # built here, where CUDA may be absent
    sliced = apply_overrides(preset, slice_overrides(cls, "cpu"))
    return preset.work(), sliced.work()


def smoke_all(modules: list[str], device: str, jobs: int, env: dict[str, str]) -> dict[str, dict]:
    def one(module: str) -> tuple[str, dict]:
        with tempfile.TemporaryDirectory() as out:
            code, tail, secs = _iclr26(
                ["run", module, "--scale", "smoke", "--set", f"device={device}", "--out", out, "--quiet"], 300, env
            )
        return module, {"ok": code == 0, "seconds": round(secs, 1), **({} if code == 0 else {"tail": tail})}

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return dict(pool.map(one, modules))


def time_slice(module: str, device: str, timeout: float, env: dict[str, str]) -> dict:
    cls = load_experiment(module).config_cls
    row: dict = {"module": module}
    try:
        work_gpu, work_slice = work_ratio(cls, device)
    except Exception as err:  # noqa: BLE001 - recorded, the check goes on
        return {**row, "ok": False, "error": f"config: {type(err).__name__}: {err}"}
    row.update(work_gpu=work_gpu, work_slice=work_slice, overrides=cls.GPU_SLICE)
    args = ["run", module, "--scale", "gpu", "--quiet"]
    for item in slice_overrides(cls, device):
        args += ["--set", item]
    with tempfile.TemporaryDirectory() as out, Sampler() as sampler:
        code, tail, secs = _iclr26([*args, "--out", out], timeout, env)
        record = next(Path(out).glob("*/*/result.json"), None)
        recorded = json.loads(record.read_text()) if record else {}
    row.update(ok=code == 0, exit=code, process_s=round(secs, 1))
    if code != 0:
        row["tail"] = tail
    samples = sampler.samples
    if samples:
        base = min(m for _, _, m in samples[:3])
        active = [s for s in samples if s[2] > base + 256]  # the model and its batches are on the GPU
        if active:
            t_first, t_last = active[0][0], samples[-1][0]
            row["active_s"] = round(t_last - t_first, 1)
            row["gpu_util_mean_pct"] = round(statistics.fmean(u for _, u, _ in active), 1)
            row["gpu_mem_peak_mib"] = round(max(m for _, _, m in samples) - base)
    if not samples and device == "cpu":  # a dry run of the script: no GPU to sample, the process time stands in
        row["active_s"] = row["process_s"]
    if code == 0 and work_gpu and work_slice and row.get("active_s"):
        row["work_per_s"] = round(work_slice / row["active_s"], 3)
        row["projected_h"] = round(row["active_s"] * work_gpu / work_slice / 3600, 2)
    row["record_wall_s"] = recorded.get("wall_time_s")
    return row


def nccl_check(device: str, env: dict[str, str], timeout: float) -> dict:
    """kern's smoke under torchrun with two ranks sharing the GPU, else one rank, against the one-process run."""
    result: dict = {}
    for nproc in (2, 1):
        with tempfile.TemporaryDirectory() as out:
            cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}"]
            cmd += ["-m", "iclr26", "run", "kern", "--scale", "smoke", "--set", f"device={device}"]
            cmd += ["--out", out, "--quiet"]
            t0 = time.monotonic()
            try:
                proc = subprocess.run(
                    cmd, capture_output=True, text=True, timeout=timeout, env={**env, "ICLR26_SHARE_GPU": "1"}
                )
                code, tail = proc.returncode, "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-8:])
            except subprocess.TimeoutExpired:
                code, tail = 124, f"timed out after {timeout:g} s"
            record = next(Path(out).glob("kern/*/result.json"), None)
            result[f"ranks_{nproc}"] = {
                "ok": code == 0,
                "seconds": round(time.monotonic() - t0, 1),
                "world_size": json.loads(record.read_text())["world_size"] if record else None,
                "metrics": json.loads(record.read_text())["metrics"] if record else None,
                **({} if code == 0 else {"tail": tail}),
            }
        if code == 0:
            break
    with tempfile.TemporaryDirectory() as out:
        code, tail, _ = _iclr26(
            ["run", "kern", "--scale", "smoke", "--set", f"device={device}", "--out", out, "--quiet"], timeout, env
        )
        record = next(Path(out).glob("kern/*/result.json"), None)
        single = json.loads(record.read_text())["metrics"] if record else None
    result["one_process_ok"] = code == 0
    ran = next((v for v in result.values() if isinstance(v, dict) and v.get("ok")), None)
    if ran and single:
        result["max_rel_diff"] = _max_rel_diff(ran["metrics"], single)
    for v in result.values():
        if isinstance(v, dict):
            v.pop("metrics", None)
    return result


def _max_rel_diff(a, b) -> float:  # noqa: ANN001
    if isinstance(a, dict) and isinstance(b, dict):
        return max([_max_rel_diff(a[k], b[k]) for k in a.keys() & b.keys()] or [0.0])
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return max([_max_rel_diff(x, y) for x, y in zip(a, b, strict=True)] or [0.0])
    if isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool):
        return abs(a - b) / max(abs(a), abs(b), 1e-12)
    return 0.0


def pretrained_check(device: str, env: dict[str, str], timeout: float) -> dict:
    script = ROOT / "benchmarks" / "pretrained_cuda_check.py"
    if not script.is_file():
        return {"ok": False, "error": "benchmarks/pretrained_cuda_check.py is missing"}
    try:
        proc = subprocess.run(
            [sys.executable, str(script), "--device", device], capture_output=True, text=True, timeout=timeout, env=env
        )
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"timed out after {timeout:g} s"}
    lines = [line for line in proc.stdout.strip().splitlines() if line.startswith("{")]
    out = json.loads(lines[-1]) if lines else {}
    return {"ok": proc.returncode == 0, **out, **({} if proc.returncode == 0 else {"tail": proc.stderr[-1500:]})}


def device_name(device: str) -> str:
    import torch

    return torch.cuda.get_device_name(0) if device.startswith("cuda") and torch.cuda.is_available() else "cpu"


def table(report: dict) -> str:
    lines = [
        f"# Device check of the gpu presets ({report['date']}, {report['device_name']})",
        "",
        "Written by `benchmarks/gpu_presets.py`. Slice: the gpu preset with the config's `GPU_SLICE` overrides, "
        "alone on the GPU; utilisation and memory sampled by nvidia-smi every 0.2 s while the model is on the GPU; "
        "projected: the whole preset's wall time from the slice's (`work()` ratio).",
        "",
        "| module | smoke on GPU | slice s | work/s | mean GPU util % | peak GPU MiB | projected gpu preset h | note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in report["slices"]:
        m = row["module"]
        smoke = report["smoke"].get(m, {})
        note = row.get("error") or ("" if row.get("ok") else (row.get("tail") or "").splitlines()[-1:][0:1])
        note = note if isinstance(note, str) else " ".join(note)
        lines.append(
            f"| `{m}` | {'ok' if smoke.get('ok') else 'FAILED'} ({smoke.get('seconds', '—')} s) "
            f"| {row.get('active_s', '—')} | {row.get('work_per_s', '—')} | {row.get('gpu_util_mean_pct', '—')} "
            f"| {row.get('gpu_mem_peak_mib', '—')} | {row.get('projected_h', '—')} | {note.replace('|', '/')[:120]} |"
        )
    lines += ["", "NCCL / torchrun: `" + json.dumps(report.get("nccl", {})) + "`", ""]
    lines += ["Pretrained LM (SmolLM2 shape, bf16): `" + json.dumps(report.get("pretrained", {})) + "`", ""]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for gpu_presets.json and gpu_presets.md")
    parser.add_argument("--device", default="cuda", help="cuda (the check) or cpu (a dry run of the script)")
    parser.add_argument("--modules", default="", help="comma-separated (default: every GPU-capable module)")
    parser.add_argument("--smoke-jobs", type=int, default=4, help="smokes run at a time")
    parser.add_argument("--slice-timeout", type=float, default=120.0, help="seconds a slice may take")
    parser.add_argument("--skip", default="", help="comma-separated steps to skip: smoke, slices, nccl, pretrained")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    modules = args.modules.split(",") if args.modules else gpu_modules()
    skip = set(filter(None, args.skip.split(",")))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "ICLR26_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    report: dict = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "device_name": device_name(args.device),
        "modules": modules,
        "smoke": {},
        "slices": [],
    }

    def save() -> None:
        (args.out / "gpu_presets.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
        (args.out / "gpu_presets.md").write_text(table(report))

    t0 = time.monotonic()
    if "smoke" not in skip:
        report["smoke"] = smoke_all(modules, args.device, args.smoke_jobs, env)
        print(f"[{time.monotonic() - t0:.0f}s] smoke: {report['smoke']}", flush=True)
        save()
    if "slices" not in skip:
        for module in modules:
            row = time_slice(module, args.device, args.slice_timeout, env)
            report["slices"].append(row)
            print(f"[{time.monotonic() - t0:.0f}s] slice: {json.dumps(row, default=str)}", flush=True)
            save()
    if "nccl" not in skip:
        report["nccl"] = nccl_check(args.device, env, 180)
        print(f"[{time.monotonic() - t0:.0f}s] nccl: {report['nccl']}", flush=True)
        save()
    if "pretrained" not in skip:
        report["pretrained"] = pretrained_check(args.device, env, 240)
        print(f"[{time.monotonic() - t0:.0f}s] pretrained: {report['pretrained']}", flush=True)
    save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
