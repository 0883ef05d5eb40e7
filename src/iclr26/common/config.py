"""Experiment configs: frozen dataclasses with named scale presets and a typed `--set key=value` parser.

A paper's config subclasses :class:`ExperimentConfig`. Field defaults are the ``cpu`` scale; the class attribute
``SCALES`` maps ``"smoke"`` and ``"gpu"`` (and optionally ``"cpu"``) to the fields that differ from the defaults.
Fields are declared with :func:`opt`, which carries the help text (with the value's source) and the field's range;
the base class checks every range, so a subclass's ``__post_init__`` holds only the checks that relate fields::

    @dataclass(frozen=True)
    class MyConfig(ExperimentConfig):
        steps: int = opt(500, "optimizer steps (§5.1)", ge=1, le=10**7)
        lr: float = opt(3e-3, "peak learning rate (Table 3)", gt=0, le=1)

        SCALES: ClassVar[dict[str, dict[str, Any]]] = {"smoke": {"steps": 5}, "gpu": {"steps": 50_000}}

    cfg = apply_overrides(MyConfig.preset("smoke"), ["lr=1e-3"])

Every field is also checked for its type, every float (and every float in a tuple) for being finite, and every
integer without an upper bound of its own against :data:`DEFAULT_INT_MAX`, so that no value reaches the run that it
cannot honour.
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
#: The largest integer a field without an ``le``/``lt`` bound of its own accepts (sizes, steps, counts): past it a run
#: could not finish or allocate anyway, and a bound keeps the value from reaching code that would overflow on it.
DEFAULT_INT_MAX = 10**12
#: The largest master seed (``2**63 - 1``: torch's and NumPy's generators take any seed up to it).
SEED_MAX = 2**63 - 1

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
class Range:
    """The bounds of a numeric config field (each None when absent); a tuple field's bounds apply to every element.

    Attributes:
        ge, gt, le, lt: the value must be ``>= ge``, ``> gt``, ``<= le``, ``< lt``.
    """

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None

    def violation(self, value: float) -> str | None:
        """Why ``value`` lies outside the range (None if it lies inside)."""
        for bound, ok, word in (
            (self.ge, lambda b: value >= b, ">="),
            (self.gt, lambda b: value > b, ">"),
            (self.le, lambda b: value <= b, "<="),
            (self.lt, lambda b: value < b, "<"),
        ):
            if bound is not None and not ok(bound):
                return f"must be {word} {bound:g}, got {value!r}"
        return None

    def describe(self) -> str:
        """The range in words for ``--help-config``, e.g. ``[1, 1e+06]`` or ``(0, 1)``; empty when unbounded."""
        low = f"[{self.ge:g}" if self.ge is not None else (f"({self.gt:g}" if self.gt is not None else "")
        high = f"{self.le:g}]" if self.le is not None else (f"{self.lt:g})" if self.lt is not None else "")
        if not low and not high:
            return ""
        return f"{low or '(-inf'}, {high or 'inf)'}"

    @property
    def bounded_above(self) -> bool:
        return self.le is not None or self.lt is not None


def opt(
    default: Any,
    help: str,  # noqa: A002 - the name dataclass metadata and argparse use
    *,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    lt: float | None = None,
) -> Any:
    """A config field: its default, its help text (with the source of the value) and its range.

    Args:
        default: the ``cpu`` scale's value (a tuple for a list-valued field).
        help: what the field means and where its value comes from ("Table 3", "§5.1", "not in the paper; ...").
        ge, gt, le, lt: bounds checked by :class:`ExperimentConfig` on every value (every element of a tuple),
            with an error naming the field.

    Returns:
        A ``dataclasses.field`` with the help and range in its metadata.
    """
    metadata: dict[str, Any] = {"help": help}
    if any(b is not None for b in (ge, gt, le, lt)):
        metadata["range"] = Range(ge=ge, gt=gt, le=le, lt=lt)
    return field(default=default, metadata=metadata)


def field_range(f: dataclasses.Field) -> Range | None:  # type: ignore[type-arg]
    """The :class:`Range` a field was declared with (:func:`opt`), or None."""
    return f.metadata.get("range")


@dataclass(frozen=True)
class ExperimentConfig:
    """Base of every experiment config: the seed, plus scale presets on the subclass.

    Attributes:
        seed: master seed; every random draw of a run derives from it.
    """

    seed: int = opt(0, "master seed; every random draw of a run derives from it", ge=0, le=SEED_MAX)

    SCALES: ClassVar[dict[str, dict[str, Any]]] = {}
    #: Old ``--set`` keys still accepted, mapped to the field they now name (e.g. ``{"corpus": "data"}``).
    ALIASES: ClassVar[dict[str, str]] = {}
    #: Why this reproduction runs on the CPU whatever the scale (shown by ``--help-config``); None if it can use a
    #: GPU (then its ``device`` field says which).
    CPU_BOUND: ClassVar[str | None] = None
    #: Overrides of the ``gpu`` preset that make a slice of it taking well under a minute on one GPU (fewer steps,
    #: seeds, arms; the same model sizes and batches), run by the device check (``benchmarks/gpu_presets.py``).
    GPU_SLICE: ClassVar[dict[str, Any]] = {}

    def __post_init__(self) -> None:
        hints = typing.get_type_hints(type(self))
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            _check_type(f.name, value, hints[f.name])
            _check_numbers(f.name, value, field_range(f))

    def work(self) -> float | None:
        """A count proportional to this config's compute (e.g. optimizer steps x arms x seeds), or None.

        The device check times the ``GPU_SLICE`` of the gpu preset and projects the full preset's wall time as
        ``slice time x work(preset) / work(slice)``; a config whose modules define no ``work`` is not projected.
        """
        return None

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


def _check_numbers(name: str, value: Any, bounds: Range | None) -> None:
    """Every number in ``value`` (a tuple's elements too) finite, inside ``bounds``, and an integer without an upper
    bound of its own at most :data:`DEFAULT_INT_MAX`."""
    for x in value if isinstance(value, tuple) else (value,):
        if isinstance(x, bool) or not isinstance(x, int | float):
            continue
        if isinstance(x, float) and not math.isfinite(x):
            raise ConfigError(f"config field '{name}': must be a finite number, got {x!r}")
        why = bounds.violation(x) if bounds is not None else None
        if why is None and isinstance(x, int) and not (bounds is not None and bounds.bounded_above):
            why = f"must be <= {DEFAULT_INT_MAX:g} (no run can honour more), got {x!r}" if x > DEFAULT_INT_MAX else None
        if why is not None:
            raise ConfigError(f"config field '{name}': {why}")


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
    except NonFinite:
        raise ConfigError(f"--set {name}={text!r}: must be a finite number") from None
    except EmptyValue:
        raise ConfigError(f"--set {name}={text!r}: empty value; give a value, or 'none' for the default") from None
    except (ValueError, TypeError):
        raise ConfigError(f"--set {name}={text!r}: expected {describe_type(tp)}") from None


class NonFinite(ValueError):
    """A float field was given ``inf`` or ``nan``."""


class EmptyValue(ValueError):
    """An optional field was given an empty value (``--set data=``): ``none`` says "the default" explicitly."""


def _parse(text: str, tp: Any) -> Any:
    origin = typing.get_origin(tp)
    if origin is Literal:
        for option in typing.get_args(tp):
            if str(option) == text:
                return option
        raise ValueError(text)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if type(None) in args and text.strip().lower() in ("none", "null"):
            return None
        if type(None) in args and not text.strip():
            raise EmptyValue(text)
        for a in args:
            if a is type(None):
                continue
            try:
                return _parse(text, a)
            except NonFinite:
                raise
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
            raise NonFinite(text)
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
        range: the accepted range in words (empty for a field without one).
    """

    name: str
    type: str
    default: str
    presets: dict[str, str]
    help: str
    range: str = ""


def format_value(value: Any) -> str:
    """A config value as it would be written after ``--set key=`` (tuples comma-separated, None as ``none``)."""
    if value is None:
        return "none"
    if isinstance(value, tuple | list):
        return ",".join(format_value(v) for v in value)
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _is_int_type(tp: Any) -> bool:
    """Whether a field of type ``tp`` holds integers (``int``, ``int | None``, ``tuple[int, ...]``)."""
    if tp is int:
        return True
    return typing.get_origin(tp) in (typing.Union, types.UnionType, tuple) and any(
        _is_int_type(a) for a in typing.get_args(tp) if a is not Ellipsis
    )


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
        bounds = field_range(f)
        tp = hints[f.name]
        if _is_int_type(tp) and not (bounds is not None and bounds.bounded_above):
            bounds = dataclasses.replace(bounds or Range(), le=DEFAULT_INT_MAX)
        rows.append(
            FieldHelp(
                f.name,
                describe_type(tp),
                format_value(default),
                presets,
                f.metadata.get("help", ""),
                bounds.describe() if bounds is not None else "",
            )
        )
    return rows
