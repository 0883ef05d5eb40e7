"""The generator's drift at the stated days, the official-format loader, and bad data."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from iclr26.sthhol.data import generate_city, load_official, validate_city_arrays, windows

KW = dict(n_regions=4, n_categories=3, n_days=60, base_rate=1.0, abrupt_day=20, gradual_start=35, gradual_end=45,
          drift_size=0.6, seed=3)  # fmt: skip


def test_drift_appears_exactly_at_the_stated_days():
    # without context effects the drift is the only difference between the two cities' log-rates
    drifted = generate_city(context_effect=0.0, drift=True, **KW)
    still = generate_city(context_effect=0.0, drift=False, **KW)
    diff = drifted.log_rate - still.log_rate  # (N, C, T)
    assert drifted.drift_days == (20, 35) and still.drift_days == ()
    assert np.all(diff[:, :, :20] == 0)
    jump = diff[:, :, 20]
    assert np.allclose(np.abs(jump), 0.6)  # the abrupt jump: ±drift_size on every region and category
    assert np.allclose(diff[:, :, 20:36], jump[:, :, None])  # constant until the gradual drift starts
    ramp = diff[:, :, 35:46] - jump[:, :, None]
    assert np.allclose(np.abs(ramp), 0.6 * np.arange(11) / 10)  # linear from day 35 to day 45
    assert np.allclose(diff[:, :, 45:], diff[:, :, 45:46])  # complete afterwards
    assert np.array_equal(drifted.context, still.context)


def test_context_effects_flip_for_category_zero_at_the_abrupt_day():
    def rate(kappa, drift):
        return generate_city(context_effect=kappa, drift=drift, **KW).log_rate

    effect = rate(0.5, False) - rate(0.0, False)  # κ Σ_m u β S without drift
    # what the context adds beyond the base-rate drift: -2·effect on category 0 from day 20 (β_0 flips), else 0
    extra = (rate(0.5, True) - rate(0.0, True)) - effect
    expected = np.zeros_like(extra)
    expected[:, 0, 20:] = -2 * effect[:, 0, 20:]
    assert np.abs(effect).max() > 0.1
    assert np.allclose(extra, expected, atol=1e-12)


def test_counts_are_sparse_non_negative_integers():
    city = generate_city(context_effect=0.5, drift=True, **KW)
    assert city.counts.min() >= 0 and np.all(city.counts == np.round(city.counts))
    assert city.shape == (4, 3, 4, 60)


@pytest.mark.parametrize(
    ("change", "message"),
    [({"n_regions": 0}, "n_regions"), ({"base_rate": 0.0}, "base_rate"), ({"abrupt_day": 60}, "abrupt_day"),
     ({"gradual_end": 30}, "gradual_start"), ({"drift_size": -1.0}, "drift_size")],
)  # fmt: skip
def test_generator_rejects_bad_arguments(change, message):
    with pytest.raises(ValueError, match=message):
        generate_city(**{**KW, "context_effect": 0.5, "drift": True, **change})


def _write(folder, arrays):
    folder.mkdir(exist_ok=True)
    for name, arr in zip(("trn.pkl", "val.pkl", "tst.pkl"), arrays, strict=True):
        (folder / name).write_bytes(pickle.dumps(arr))
    return folder


def test_official_format_loader_maps_grid_cells_to_regions(tmp_path):
    rng = np.random.default_rng(0)
    parts = [rng.poisson(1.0, size=(2, 3, days, 4)).astype(np.float64) for days in (10, 3, 5)]
    city = load_official(_write(tmp_path / "city", parts))
    full = np.concatenate(parts, axis=2)
    assert city.counts.shape == (6, 4, 18) and city.context.shape == (6, 0, 18)
    # region n = row*cols + col, counts[n, c, t] = array[row, col, t, c] (STHSL DataHandler's reshape)
    assert city.counts[1 * 3 + 2, 3, 12] == full[1, 2, 12, 3]
    assert np.array_equal(city.counts[4, :, :], full[1, 1].T)
    single = load_official(tmp_path / "city" / "trn.pkl")
    assert single.counts.shape == (6, 4, 10)


class _Evil:
    def __reduce__(self):
        return (print, ("should never run",))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"not a pickle at all", "not a pickled NumPy array"),
        (pickle.dumps({"a": 1}), "not a pickled NumPy array|expected a numeric array"),
        (pickle.dumps(np.zeros((2, 2, 3))), "expected a numeric array"),
        (pickle.dumps(_Evil()), "refusing to load"),
        (pickle.dumps(np.full((1, 2, 3, 2), np.nan)), "NaN"),
        (pickle.dumps(-np.ones((1, 2, 3, 2))), "negative"),
    ],
)
def test_malformed_official_files_are_rejected(tmp_path, content, message):
    path = tmp_path / "x.pkl"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        load_official(path)


def test_missing_split_and_mismatched_grids_are_rejected(tmp_path):
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "trn.pkl").write_bytes(pickle.dumps(np.zeros((1, 1, 4, 2))))
    with pytest.raises(FileNotFoundError, match="val.pkl, tst.pkl"):
        load_official(folder)
    _write(folder, [np.zeros((1, 1, 4, 2)), np.zeros((1, 2, 4, 2)), np.zeros((1, 1, 4, 2))])
    with pytest.raises(ValueError, match="differ in grid"):
        load_official(folder)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_official(tmp_path / "nope")


def test_validate_and_windows_reject_bad_arrays():
    good = np.ones((2, 3, 10))
    with pytest.raises(ValueError, match="counts must be"):
        validate_city_arrays(np.ones((2, 3)), np.ones((2, 1, 10)))
    with pytest.raises(ValueError, match="context must be"):
        validate_city_arrays(good, np.ones((3, 1, 10)))
    with pytest.raises(ValueError, match="negative"):
        validate_city_arrays(-good, np.ones((2, 1, 10)))
    with pytest.raises(ValueError, match="NaN"):
        validate_city_arrays(good * np.nan, np.ones((2, 1, 10)))
    city = generate_city(context_effect=0.5, drift=True, **KW)
    with pytest.raises(ValueError, match="window"):
        windows(city, 60)
    w = windows(city, 5)
    assert np.array_equal(w.crime[7].numpy(), city.counts[:, :, 2:7])  # target day 7 sees days 2..6
    assert np.array_equal(w.target[7].numpy(), city.counts[:, :, 7])


def _legacy_pickle(array: np.ndarray, protocol: int, module: str) -> bytes:
    """``array`` pickled as NumPy 1.x wrote it: GLOBAL opcodes (protocols 2 and 3 write the module and name as a
    text line) naming ``module`` for the reconstructor instead of NumPy 2's ``numpy._core.multiarray``."""
    data = pickle.dumps(array, protocol=protocol)
    modern = b"cnumpy._core.multiarray\n_reconstruct\n"
    assert data.count(modern) == 1
    return data.replace(modern, b"c" + module.encode() + b"\n_reconstruct\n")


@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("module", ["numpy.core._multiarray_umath", "numpy.core.multiarray"])
def test_official_tensors_pickled_by_numpy_1_load(tmp_path, protocol, module):
    rng = np.random.default_rng(0)
    splits = {name: rng.poisson(0.7, size=(2, 3, days, 4)).astype(np.float64)
              for name, days in (("trn.pkl", 20), ("val.pkl", 5), ("tst.pkl", 7))}  # fmt: skip
    for name, array in splits.items():
        (tmp_path / name).write_bytes(_legacy_pickle(array, protocol, module))
    city = load_official(tmp_path)
    whole = np.concatenate(list(splits.values()), axis=2)  # (rows, cols, T, C)
    assert city.counts.shape == (6, 4, 32)
    assert np.array_equal(city.counts, whole.reshape(6, 32, 4).transpose(0, 2, 1))


@pytest.mark.parametrize(
    "global_line",
    [b"cos\nsystem\n", b"cnumpy.core._multiarray_umath\n_load_from_filelike\n", b"cnumpy.core.multiarray\nfromfile\n"],
)
def test_legacy_pickles_naming_anything_else_are_still_refused(tmp_path, global_line):
    data = _legacy_pickle(np.zeros((1, 1, 30, 2)), 2, "numpy.core._multiarray_umath")
    bad = tmp_path / "bad.pkl"
    bad.write_bytes(data.replace(b"cnumpy.core._multiarray_umath\n_reconstruct\n", global_line))
    with pytest.raises(ValueError, match="refusing to load"):
        load_official(bad)
