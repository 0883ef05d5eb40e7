"""The verdict through its public function on synthetic per-seed numbers, and the arms' wiring."""

from __future__ import annotations

import pytest

from iclr26.magref.config import MAGREFConfig
from iclr26.magref.experiment import ARM_SPECS, ARMS, train_spec
from iclr26.magref.verdict import Measurements, verdict

CONFIG = MAGREFConfig()
NOISE = [0.0, 0.004, -0.003, 0.002]  # per-seed jitter, so the paired intervals have a spread


def measurements(*, id_gain=0.05, swap_gain=0.2, placebo_gain=0.0, drop=()):
    """Four seeds: magref beats vanilla by ``id_gain`` in ID similarity, disentanglement lowers the swap rate by
    ``swap_gain``, the placebo by ``placebo_gain``."""
    ids = {a: [0.6 + n for n in NOISE] for a in ARMS}
    ids["magref"] = [0.6 + id_gain + 2 * n for n in NOISE]
    swaps = {a: [0.4 + n for n in NOISE] for a in ARMS}
    swaps["magref"] = [0.4 - swap_gain - n for n in NOISE]
    swaps["placebo"] = [0.4 - placebo_gain + 2 * n for n in NOISE]
    for arm in drop:
        del ids[arm], swaps[arm]
    return Measurements(id_sim=ids, swap_rate=swaps, classifier_accuracy=0.95)


def test_held_when_both_parts_pass_and_the_control_fails():
    v = verdict(measurements(), CONFIG)
    assert v.status == "held"
    assert v.evidence["swap_reduction_placebo"]["passes"] is False
    assert v.evidence["thresholds"]["swap_margin"]["source"]


def test_the_control_passing_or_missing_changes_the_verdict():
    assert verdict(measurements(placebo_gain=0.2), CONFIG).status == "not held"
    assert verdict(measurements(drop=("placebo",)), CONFIG).status == "not held"


@pytest.mark.parametrize(
    ("change", "part"), [({"id_gain": -0.05}, "id_magref_vs_vanilla"), ({"swap_gain": 0.0}, "swap_reduction_disent")]
)
def test_each_part_failing_gives_not_held(change, part):
    v = verdict(measurements(**change), CONFIG)
    assert v.status == "not held" and v.evidence[part]["passes"] is False


def test_only_the_disentangling_arms_get_alpha_and_only_the_placebo_permutes():
    specs = {arm: train_spec(CONFIG, arm) for arm in ARMS}
    assert specs["magref"].alpha == CONFIG.alpha > 0 and specs["magref"].layout == "canvas"
    # the vanilla ablation differs from magref in its layout and in having no disentanglement
    assert specs["vanilla"].layout == "temporal" and specs["vanilla"].alpha == 0.0
    assert specs["nodisent"].layout == "canvas" and specs["nodisent"].alpha == 0.0
    assert [a for a in ARMS if specs[a].placebo] == ["placebo"]
    assert [a for a in ARMS if ARM_SPECS[a].base == "t2v"] == ["t2v"]
    same = {"steps", "batch_size", "lr"}  # equal compute for every arm
    assert all({getattr(specs[a], k) for a in ARMS} == {getattr(specs["magref"], k)} for k in same)
