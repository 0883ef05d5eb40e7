"""Config presets, type checks, and the `--set` parser."""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import pytest

from iclr26.common.config import ConfigError, ExperimentConfig, apply_overrides, field_help, opt, require


@dataclass(frozen=True)
class Demo(ExperimentConfig):
    steps: int = field(default=100, metadata={"help": "optimizer steps"})
    lr: float = 1e-3
    use_bias: bool = True
    mode: Literal["a", "b"] = "a"
    widths: tuple[int, ...] = (8, 16)
    data: str | None = None
    out: Path = Path("x")

    SCALES: ClassVar[dict[str, dict[str, Any]]] = {
        "smoke": {"steps": 3},
        "gpu": {"steps": 10_000, "lr": 3e-4},
    }

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.steps > 0, "steps", f"must be positive, got {self.steps}")


def test_presets_apply_their_overrides_on_the_defaults():
    assert Demo.preset("cpu") == Demo()
    assert Demo.preset("smoke").steps == 3 and Demo.preset("smoke").lr == 1e-3
    assert Demo.preset("gpu").lr == 3e-4
    with pytest.raises(ConfigError, match="unknown scale 'tpu'"):
        Demo.preset("tpu")


def test_overrides_parse_by_field_type():
    cfg = apply_overrides(
        Demo(),
        [
            "steps=7",
            "lr=2.5e-2",
            "use_bias=false",
            "mode=b",
            "widths=1,2,3",
            "data=/tmp/f",
            "out=o",
            "seed=4",
        ],
    )
    assert (cfg.steps, cfg.lr, cfg.use_bias, cfg.mode, cfg.widths) == (7, 0.025, False, "b", (1, 2, 3))
    assert cfg.data == "/tmp/f" and cfg.out == Path("o") and cfg.seed == 4
    assert apply_overrides(Demo(data="x"), ["data=none"]).data is None
    assert apply_overrides(Demo(), ["steps=1e3"]).steps == 1000


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ("stepz=3", "unknown key"),
        ("steps=3.5", "--set steps='3.5': expected int"),
        ("lr=abc", "expected float"),
        ("use_bias=maybe", "expected bool"),
        ("mode=c", "one of 'a', 'b'"),
        ("widths=1,x", "comma-separated ints"),
        ("steps=0", "config field 'steps': must be positive"),
        ("steps", "expected key=value"),
        ("lr=nan", "--set lr='nan': must be a finite number"),
        ("lr=inf", "--set lr='inf': must be a finite number"),
        ("lr=-inf", "must be a finite number"),
        ("lr=1e999", "must be a finite number"),
    ],
)
def test_bad_overrides_name_the_key(assignment, message):
    with pytest.raises(ConfigError, match=message):
        apply_overrides(Demo(), [assignment])


def test_constructor_rejects_wrong_types_and_negative_seed():
    with pytest.raises(ConfigError, match="'steps': expected int"):
        Demo(steps="5")
    with pytest.raises(ConfigError, match="'steps': expected int"):
        Demo(steps=True)
    with pytest.raises(ConfigError, match="'seed'"):
        Demo(seed=-1)


@dataclass(frozen=True)
class Ranged(ExperimentConfig):
    n: int = opt(4, "a count", ge=1, le=100)
    p: float = opt(0.5, "a probability", gt=0, lt=1)
    sizes: tuple[int, ...] = opt((2, 3), "sizes", ge=1)
    free: int = opt(7, "no bounds of its own")


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"n": 0}, "config field 'n': must be >= 1, got 0"),
        ({"n": 101}, "config field 'n': must be <= 100, got 101"),
        ({"p": 0.0}, "config field 'p': must be > 0, got 0.0"),
        ({"p": 1.0}, "config field 'p': must be < 1, got 1.0"),
        ({"p": float("nan")}, "config field 'p': must be a finite number, got nan"),
        ({"sizes": (2, 0)}, "config field 'sizes': must be >= 1, got 0"),
        ({"free": 10**18}, r"config field 'free': must be <= 1e\+12"),
        ({"seed": 2**64}, r"config field 'seed': must be <= 9.22337e\+18"),
    ],
)
def test_ranges_are_checked_for_every_field_and_element(values, message):
    with pytest.raises(ConfigError, match=message):
        Ranged(**values)


def test_ranges_accept_their_bounds_and_show_in_help():
    assert Ranged(n=1).n == 1 and Ranged(n=100).n == 100 and Ranged(free=10**12).free == 10**12
    rows = {row.name: row.range for row in field_help(Ranged)}
    assert rows == {
        "seed": "[0, 9.22337e+18]",
        "n": "[1, 100]",
        "p": "(0, 1)",
        "sizes": "[1, 1e+12]",
        "free": "(-inf, 1e+12]",
    }


def test_to_dict_is_plain_and_help_is_listed():
    d = Demo().to_dict()
    assert d["widths"] == [8, 16] and d["out"] == "x"
    helps = {row.name: row for row in field_help(Demo)}
    assert (helps["steps"].type, helps["steps"].help) == ("int", "optimizer steps")
    assert helps["data"].type == "str | None" and helps["data"].default == "none"
    # defaults as written after --set, and the presets that change a field
    assert helps["steps"].default == "100" and helps["steps"].presets == {"smoke": "3", "gpu": "10000"}
    assert helps["lr"].presets == {"gpu": "0.0003"} and helps["widths"].default == "8,16"
    assert helps["use_bias"].default == "true" and helps["mode"].presets == {}


def test_from_dict_inverts_to_dict():
    cfg = Demo(steps=7, widths=(1, 2), data="d", out=Path("o/p"), mode="b", seed=3)
    again = Demo.from_dict(cfg.to_dict())
    assert again == cfg and isinstance(again.widths, tuple) and isinstance(again.out, Path)
    assert Demo.from_dict(Demo(data=None).to_dict()).data is None
    with pytest.raises(ConfigError, match=r"unknown config keys \['nope'\]"):
        Demo.from_dict({"nope": 1})
    with pytest.raises(ConfigError, match="'steps': must be positive"):
        Demo.from_dict({"steps": 0})


@dataclass(frozen=True)
class Aliased(Demo):
    ALIASES: ClassVar[dict[str, str]] = {"corpus": "data"}


def test_aliases_map_old_keys_to_the_field():
    assert apply_overrides(Aliased(), ["corpus=/x"]).data == "/x"
    with pytest.raises(ConfigError, match="unknown key"):
        apply_overrides(Demo(), ["corpus=/x"])


def test_threshold_reports_value_and_source():
    from iclr26.common.config import threshold

    @dataclass(frozen=True)
    class Verdict(ExperimentConfig):
        tol: float = field(default=0.02, metadata={"help": "tolerance (paper, Table 2)"})

    assert threshold(Verdict(), "tol") == {"value": 0.02, "source": "tolerance (paper, Table 2)"}
    with pytest.raises(KeyError, match="no field 'nope'"):
        threshold(Verdict(), "nope")
