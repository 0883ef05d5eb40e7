"""Experiment configs: frozen dataclasses with named scale presets and a typed `--set key=value` parser.

A paper's config subclasses :class:`ExperimentConfig`. Field defaults are the ``cpu`` scale; the class attribute
``SCALES`` maps ``"smoke"`` and ``"gpu"`` (and optionally ``"cpu"``) to the fields that differ from the defaults::

    @dataclass(frozen=True)
    class MyConfig(ExperimentConfig):
        steps: int = field(default=500, metadata={"help": "optimizer steps (§5.1)"})
        lr: float = field(default=3e-3, metadata={"help": "peak learning rate (Table 3)"})

        SCALES: ClassVar[dict[str, dict[str, Any]]] = {"smoke": {"steps": 5}, "gpu": {"steps": 50_000}}

        def __post_init__(self) -> None:
            super().__post_init__()
            require(self.steps > 0, "steps", "must be positive")

    cfg = apply_overrides(MyConfig.preset("smoke"), ["lr=1e-3"])
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeVar

SCALE_NAMES = ("smoke", "cpu", "gpu")

C = TypeVar("C", bound="ExperimentConfig")


class ConfigError(ValueError):
    """A config value is invalid; the message names the field and what would fix it."""


def require(condition: bool, name: str, message: str) -> None:
    """Raise :class:`ConfigError` naming field ``name`` unless ``condition`` holds.

    Args:
        condition: the check that must hold.
        name: the config field being checked.
        message: what the value must satisfy, e.g. ``"must be > 0, got -1"``.

    Raises:
        ConfigError: if ``condition`` is false.
    """
    if not condition:
        raise ConfigError(f"config field '{name}': {message}")


@dataclass(frozen=True)
class ExperimentConfig:
    """Base of every experiment config: the seed, plus scale presets on the subclass.

    Attributes:
        seed: master seed; every random draw of a run derives from it.
    """

    seed: int = field(default=0, metadata={"help": "master seed; every random draw of a run derives from it"})

    SCALES: ClassVar[dict[str, dict[str, Any]]] = {}
    #: Old ``--set`` keys still accepted, mapped to the field they now name (e.g. ``{"corpus": "data"}``).
    ALIASES: ClassVar[dict[str, str]] = {}
    #: Why this reproduction runs on the CPU whatever the scale (shown by ``--help-config``); None if it can use a
    #: GPU (then its ``device`` field says which).
    CPU_BOUND: ClassVar[str | None] = None

    def __post_init__(self) -> None:
        hints = typing.get_type_hints(type(self))
        for f in dataclasses.fields(self):
            _check_type(f.name, getattr(self, f.name), hints[f.name])
        require(self.seed >= 0, "seed", f"must be a non-negative integer, got {self.seed}")

    @classmethod
    def preset(cls: type[C], scale: str) -> C:
        """The named scale preset: defaults updated by ``SCALES[scale]``.

        Raises:
            ConfigError: if ``scale`` is not one of smoke, cpu, gpu.
        """
        if scale not in SCALE_NAMES:
            raise ConfigError(f"unknown scale {scale!r}; choose one of {', '.join(SCALE_NAMES)}")
        return cls(**cls.SCALES.get(scale, {}))

    def to_dict(self) -> dict[str, Any]:
        """The config as plain JSON-able values (tuples become lists, paths strings)."""
        return {k: _plain(v) for k, v in dataclasses.asdict(self).items()}

    @classmethod
    def from_dict(cls: type[C], values: dict[str, Any]) -> C:
        """The config whose :meth:`to_dict` is ``values`` (lists become tuples, strings paths, by field type).

        Raises:
            ConfigError: for an unknown key, or a value the config's validation rejects.
        """
        hints = typing.get_type_hints(cls)
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise ConfigError(f"{cls.__name__}: unknown config keys {unknown}; known keys: {', '.join(sorted(names))}")
        return cls(**{k: _typed(v, hints[k]) for k, v in values.items()})

    @classmethod
    def preset_values(cls, scale: str) -> dict[str, Any]:
        """The fields a scale preset sets, without building (or validating) that preset."""
        if scale not in SCALE_NAMES:
            raise ConfigError(f"unknown scale {scale!r}; choose one of {', '.join(SCALE_NAMES)}")
        return dict(cls.SCALES.get(scale, {}))


def _plain(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def _typed(value: Any, tp: Any) -> Any:
    """Undo :func:`_plain` for a field of type ``tp``: JSON lists back to tuples, strings back to paths."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        for a in typing.get_args(tp):
            converted = _typed(value, a)
            if _matches(converted, a):
                return converted
        return value
    if origin is tuple and isinstance(value, list):
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_typed(v, args[0]) for v in value)
        return tuple(_typed(v, a) for v, a in zip(value, args, strict=False))
    if tp is Path and isinstance(value, str):
        return Path(value)
    return value


def threshold(config: ExperimentConfig, name: str) -> dict[str, Any]:
    """A verdict threshold as the record's evidence states it: its value and its source (the field's help text).

    Every threshold or tolerance a verdict uses is a config field whose help text says where the value comes from
    (a paper number, or a reason fixed before any result was seen); ``evidence["thresholds"][name]`` is this dict.

    Raises:
        KeyError: if ``name`` is not a field of ``config``.
    """
    fields = {f.name: f for f in dataclasses.fields(config)}
    if name not in fields:
        raise KeyError(f"{type(config).__name__} has no field {name!r}")
    return {"value": _plain(getattr(config, name)), "source": fields[name].metadata.get("help", "")}


def describe_type(tp: Any) -> str:
    """A readable name of a field type, for error messages (``int``, ``float | None``, ``one of 'a', 'b'``)."""
    origin = typing.get_origin(tp)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if origin in (typing.Union, types.UnionType):
        return " | ".join(describe_type(a) for a in typing.get_args(tp))
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return f"comma-separated {describe_type(args[0])}s"
        return "comma-separated (" + ", ".join(describe_type(a) for a in args) + ")"
    if tp is type(None):
        return "None"
    return getattr(tp, "__name__", str(tp))


def _check_type(name: str, value: Any, tp: Any) -> None:
    """Reject a value of the wrong type (catches ``Config(steps="5")`` and floats where ints belong)."""
    if not _matches(value, tp):
        raise ConfigError(f"config field '{name}': expected {describe_type(tp)}, got {value!r}")


def _matches(value: Any, tp: Any) -> bool:
    origin = typing.get_origin(tp)
    if tp is Any:
        return True
    if origin is Literal:
        return value in typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, a) for a in typing.get_args(tp))
    if origin is tuple:
        args = typing.get_args(tp)
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_matches(v, args[0]) for v in value)
        return len(args) == len(value) and all(_matches(v, a) for v, a in zip(value, args, strict=True))
    if tp is type(None):
        return value is None
    if tp is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(tp, type):
        return isinstance(value, tp)
    return True


def parse_value(name: str, text: str, tp: Any) -> Any:
    """Parse the text of ``--set name=text`` into the field type ``tp``.

    Supported: ``int``, ``float`` (finite only: ``inf`` and ``nan`` are rejected), ``bool`` (true/false/1/0/yes/no),
    ``str``, ``Path``,
    ``Literal[...]``, ``X | None`` (``none``), and ``tuple[X, ...]`` / fixed tuples written comma-separated.

    Raises:
        ConfigError: naming the field and its type when ``text`` does not parse.
    """
    try:
        return _parse(text, tp)
    except (ValueError, TypeError):
        raise ConfigError(f"--set {name}={text!r}: expected {describe_type(tp)}") from None


def _parse(text: str, tp: Any) -> Any:
    origin = typing.get_origin(tp)
    if origin is Literal:
        for option in typing.get_args(tp):
            if str(option) == text:
                return option
        raise ValueError(text)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if type(None) in args and text.strip().lower() in ("none", "null", ""):
            return None
        for a in args:
            if a is type(None):
                continue
            try:
                return _parse(text, a)
            except (ValueError, TypeError):
                continue
        raise ValueError(text)
    if origin is tuple:
        args = typing.get_args(tp)
        parts = [p.strip() for p in text.split(",") if p.strip() != ""]
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_parse(p, args[0]) for p in parts)
        if len(parts) != len(args):
            raise ValueError(text)
        return tuple(_parse(p, a) for p, a in zip(parts, args, strict=True))
    if tp is bool:
        low = text.strip().lower()
        if low in ("true", "1", "yes", "on"):
            return True
        if low in ("false", "0", "no", "off"):
            return False
        raise ValueError(text)
    if tp is int:
        value = float(text) if any(c in text for c in "eE.") else int(text)
        if isinstance(value, float):
            if not value.is_integer():
                raise ValueError(text)
            value = int(value)
        return value
    if tp is float:
        value = float(text)
        if not math.isfinite(value):
            raise ValueError(text)
        return value
    if tp is str:
        return text
    if tp is Path:
        return Path(text)
    raise TypeError(f"unsupported field type {tp!r}")


def apply_overrides(config: C, assignments: list[str]) -> C:
    """Return ``config`` with ``key=value`` assignments applied, each parsed by the field's type.

    Args:
        config: the preset to start from.
        assignments: strings ``"key=value"`` as given to ``--set``.

    Returns:
        A new config (validated by its ``__post_init__``).

    Raises:
        ConfigError: for a malformed assignment, an unknown key (the message lists the known keys), a value that
            does not parse as the field's type, or a value the config's validation rejects.
    """
    fields = {f.name: f for f in dataclasses.fields(config)}
    hints = typing.get_type_hints(type(config))
    changes: dict[str, Any] = {}
    for item in assignments:
        if "=" not in item:
            raise ConfigError(f"--set {item!r}: expected key=value")
        key, text = item.split("=", 1)
        key = type(config).ALIASES.get(key.strip(), key.strip())
        if key not in fields:
            raise ConfigError(
                f"--set {key}: unknown key for {type(config).__name__}; known keys: {', '.join(sorted(fields))}"
            )
        changes[key] = parse_value(key, text, hints[key])
    return dataclasses.replace(config, **changes)


@dataclass(frozen=True)
class FieldHelp:
    """One row of ``iclr26 run MODULE --help-config``.

    Attributes:
        name: the field (the ``--set`` key).
        type: its type in words.
        default: the default (the ``cpu`` scale), as written on the command line.
        presets: scale name -> value, for the scales whose preset changes this field.
        help: the help text, with the value's source.
    """

    name: str
    type: str
    default: str
    presets: dict[str, str]
    help: str


def format_value(value: Any) -> str:
    """A config value as it would be written after ``--set key=`` (tuples comma-separated, None as ``none``)."""
    if value is None:
        return "none"
    if isinstance(value, tuple | list):
        return ",".join(format_value(v) for v in value)
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def field_help(config_cls: type[ExperimentConfig]) -> list[FieldHelp]:
    """A :class:`FieldHelp` per field of a config class, for `iclr26 run MODULE --help-config`."""
    hints = typing.get_type_hints(config_cls)
    rows = []
    for f in dataclasses.fields(config_cls):
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        presets = {
            scale: format_value(values[f.name])
            for scale in SCALE_NAMES
            if f.name in (values := config_cls.SCALES.get(scale, {})) and values[f.name] != default
        }
        rows.append(
            FieldHelp(f.name, describe_type(hints[f.name]), format_value(default), presets, f.metadata.get("help", ""))
        )
    return rows
