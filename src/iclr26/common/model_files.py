"""Whether a local path can be a pretrained chat LM, read from its files without loading it.

Configs call :func:`model_problem` before any work, so a wrong ``model=`` is refused in one line instead of failing
inside ``transformers`` after the run folder is written. Only the files are read (no torch, no transformers): a
``.gguf`` file must start with the GGUF magic; a Hugging Face folder must hold a ``config.json`` naming a model
type, weights, a tokenizer and a chat template (the papers that load a user's model prompt it with chats).
"""

from __future__ import annotations

import json
from pathlib import Path

#: The first bytes of every GGUF file (the format's magic number).
GGUF_MAGIC = b"GGUF"
#: Files that hold a Hugging Face model's weights (one of them, or its sharded form, must be in a model folder).
WEIGHT_PATTERNS = ("*.safetensors", "pytorch_model*.bin", "*.safetensors.index.json", "pytorch_model.bin.index.json")
#: Files one of which holds a Hugging Face tokenizer.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")


def model_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot be loaded as a local chat LM (a ``.gguf`` file or a Hugging Face folder); None if it can.

    The GGUF check reads only the magic; loading tells the rest.
    """
    if not str(path).strip():
        return "empty; name a .gguf file or a Hugging Face model folder"
    path = Path(path).expanduser()
    if not path.exists():
        return f"{str(path)!r} does not exist; name a .gguf file or a Hugging Face model folder"
    if path.is_file():
        with path.open("rb") as f:
            head = f.read(len(GGUF_MAGIC))
        if path.suffix.lower() != ".gguf" or head != GGUF_MAGIC:
            return f"{str(path)!r} is not a GGUF model (a .gguf file starting with the GGUF magic) nor a model folder"
        return None
    if not path.is_dir():
        return f"{str(path)!r} is neither a file nor a folder"
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return f"{str(path)!r} has no readable config.json, so it is not a Hugging Face model folder"
    if not isinstance(config, dict) or not ("model_type" in config or "architectures" in config):
        return f"{str(path)!r}: config.json names no model_type or architectures"
    if not any(any(path.glob(p)) for p in WEIGHT_PATTERNS):
        return f"{str(path)!r} is a model folder without weights (*.safetensors or pytorch_model*.bin)"
    if not any((path / f).is_file() for f in TOKENIZER_FILES):
        return f"{str(path)!r} is a model folder without a tokenizer ({', '.join(TOKENIZER_FILES)})"
    if not _has_chat_template(path):
        return (
            f"{str(path)!r}: the tokenizer has no chat template; the prompts are chats, so an instruct model is needed"
        )
    return None


def _has_chat_template(path: Path) -> bool:
    if (path / "chat_template.jinja").is_file() or (path / "chat_template.json").is_file():
        return True
    try:
        tok = json.loads((path / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(tok, dict) and bool(tok.get("chat_template"))


__all__ = ["GGUF_MAGIC", "model_problem"]
