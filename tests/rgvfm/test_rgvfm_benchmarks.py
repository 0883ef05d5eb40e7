"""Benchmarks and metrics: the official checkerboard construction, coverage, MMD, C2ST, vMF, data files."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from iclr26.rgvfm.benchmarks import (
    black_cells,
    checkerboard,
    checkerboard_2d,
    load_sphere_points,
    vmf_sample,
    wrapped_normal_mixture,
)
from iclr26.rgvfm.manifolds import Lorentz, Sphere
from iclr26.rgvfm.metrics import Coverage, cell_mass_tv, checkerboard_coverage, geodesic_mmd2, knn_c2st


def test_black_cells_hand_computed():
    coords = torch.tensor([[-0.75, -0.75], [-0.25, -0.75], [0.75, -0.75], [-0.75, -0.25], [0.75, 0.75], [1.0, 0.0]])
    # (col, row) = (0, 0) white; (1, 0) black #0; (3, 0) black #1; (0, 1) black #2; (3, 3) white; x = 1 is outside
    assert black_cells(coords).tolist() == [-1, 0, 1, 2, -1, -1]


def test_checkerboard_cell_masses_follow_the_official_moving_rule():
    x = checkerboard_2d(80_000, generator=torch.Generator().manual_seed(0))
    assert x.min() >= -1 and x.max() < 1
    cells = black_cells(x)
    assert (cells >= 0).all()
    # white cells move right, else down, else the corner (3, 3) to (0, 3): masses (2, 2, 1, 2, 2, 3, 2, 2)/16
    freq = torch.bincount(cells, minlength=8).double() / x.shape[0]
    expected = torch.tensor([2, 2, 1, 2, 2, 3, 2, 2], dtype=torch.float64) / 16
    assert (freq - expected).abs().max() < 0.005  # binomial s.e. ≤ 0.0016


@pytest.mark.parametrize("manifold", [Sphere(2), Lorentz(2)])
def test_wrapped_checkerboard_lies_within_sqrt2_of_the_base_point(manifold):
    x = checkerboard(manifold, 2000, generator=torch.Generator().manual_seed(0))
    assert manifold.distance_to_manifold(x).max() < 1e-5
    o = manifold.base_point().expand_as(x)
    assert manifold.dist(o, x).max() <= math.sqrt(2) + 1e-5


@pytest.mark.parametrize("manifold", [Sphere(2), Lorentz(2)])
def test_coverage_of_data_is_full_and_of_the_chart_uniform_is_half(manifold):
    g = torch.Generator().manual_seed(1)
    cov = checkerboard_coverage(manifold, checkerboard(manifold, 4000, generator=g))
    assert cov.coverage == 1.0 and cov.modes_covered == 8 and sum(cov.per_cell) == 4000
    uniform = manifold.from_chart(torch.rand(20_000, 2, generator=g) * 2 - 1)
    # half of the board is black; s.e. of the fraction 0.0035
    assert abs(checkerboard_coverage(manifold, uniform).coverage - 0.5) < 0.015
    # all mass in one cell: coverage 100 % but a single mode (why modes_covered is reported too)
    one_cell = manifold.from_chart(torch.full((10, 2), -0.2) + torch.tensor([0.0, -0.5]))
    assert checkerboard_coverage(manifold, one_cell).modes_covered == 1


def test_coverage_rejects_boards_it_cannot_read():
    with pytest.raises(ValueError, match="needs a 2-dimensional manifold, got S3"):
        checkerboard_coverage(Sphere(3), Sphere(3).random_uniform(5))
    with pytest.raises(ValueError, match="x must have last axis of size 3"):
        checkerboard_coverage(Sphere(2), torch.zeros(5, 2))


def test_geodesic_mmd_separates_distributions():
    s = Sphere(2)
    g = torch.Generator().manual_seed(2)
    a = checkerboard(s, 600, generator=g)
    b = checkerboard(s, 600, generator=g)
    far = s.wrapped_normal(600, mean=torch.tensor([1.0, 0.0, 0.0]), scale=0.3, generator=g)
    same, different = geodesic_mmd2(s, a, b), geodesic_mmd2(s, a, far)
    assert abs(same) < 0.005
    assert different > 0.1
    with pytest.raises(ValueError, match="bandwidths must be positive"):
        geodesic_mmd2(s, a, b, bandwidths=(0.0,))


def test_knn_c2st_is_chance_for_equal_and_perfect_for_disjoint_samples():
    h = Lorentz(2)
    g = torch.Generator().manual_seed(3)
    a = h.wrapped_normal(800, scale=0.5, generator=g)
    b = h.wrapped_normal(800, scale=0.5, generator=g)
    far = h.wrapped_normal(800, mean=h.from_chart(torch.tensor([4.0, 0.0])), scale=0.5, generator=g)
    assert abs(knn_c2st(h, a, b, generator=g) - 0.5) < 0.06  # s.e. of the accuracy on 800 test points ≈ 0.018
    assert knn_c2st(h, a, far, generator=g) > 0.99
    with pytest.raises(ValueError, match="k must be a positive odd integer"):
        knn_c2st(h, a, b, k=4)


def test_vmf_mean_cosine_matches_the_closed_form():
    s = Sphere(2)
    mean = s.proj(torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64))
    x = vmf_sample(s, mean, 50_000, kappa=30.0, generator=torch.Generator().manual_seed(4))
    # E<x, μ> = coth κ - 1/κ for the vMF on S²
    expected = 1 / math.tanh(30.0) - 1 / 30.0
    assert abs(float((x @ mean).mean()) - expected) < 1e-3
    assert (s.proj(x.mean(0)) - mean).abs().max() < 5e-3
    with pytest.raises(ValueError, match="south pole"):
        vmf_sample(s, torch.tensor([0.0, 0.0, -1.0]), 3, kappa=5.0)


def test_wrapped_normal_mixture_has_six_modes_at_distance_1p5():
    h = Lorentz(2)
    x = wrapped_normal_mixture(h, 6000, generator=torch.Generator().manual_seed(5))
    radius = h.dist(h.base_point().expand_as(x), x)
    assert abs(float(radius.median()) - 1.5) < 0.1
    angles = torch.atan2(x[:, 2], x[:, 1])
    sector = torch.floor((angles + math.pi / 6) % (2 * math.pi) / (math.pi / 3)).long()
    counts = torch.bincount(sector, minlength=6)
    assert counts.min() > 850  # 1000 expected per mode


def test_load_sphere_points_from_latlon_csv_and_npy(tmp_path):
    rng = np.random.default_rng(0)
    latlon = np.stack([rng.uniform(-80, 80, 30), rng.uniform(-180, 180, 30)], axis=1)
    csv = tmp_path / "events.csv"
    np.savetxt(csv, latlon, delimiter=",", header="lat,lon")
    x = load_sphere_points(csv)
    assert x.shape == (30, 3)
    torch.testing.assert_close(
        torch.rad2deg(torch.asin(x[:, 2])).double(), torch.from_numpy(latlon[:, 0]), atol=1e-3, rtol=0
    )
    # (N, 3) rows 1e-4 off unit norm (within the 1e-3 tolerance) are renormalised
    vecs = rng.normal(size=(25, 3))
    vecs *= (1 + 1e-4) / np.linalg.norm(vecs, axis=1, keepdims=True)
    np.save(tmp_path / "v.npy", vecs)
    torch.testing.assert_close(load_sphere_points(tmp_path / "v.npy").norm(dim=-1), torch.ones(25))


def test_load_sphere_points_errors_name_the_file_and_the_fix(tmp_path):
    with pytest.raises(ValueError, match="missing.csv: no such file; pass the path of an .npy"):
        load_sphere_points(tmp_path / "missing.csv")
    bad = tmp_path / "bad.npy"
    np.save(bad, np.zeros((30, 4)))
    with pytest.raises(ValueError, match=r"bad.npy: expected an \(N, 3\) array of unit vectors .* got shape \(30, 4\)"):
        load_sphere_points(bad)
    lat = tmp_path / "lat.csv"
    np.savetxt(lat, np.full((30, 2), 95.0), delimiter=",")
    with pytest.raises(ValueError, match="lat.csv: in the \\(N, 2\\) layout latitude must lie in"):
        load_sphere_points(lat)
    # 1.002 x a unit vector is beyond the 1e-3 tolerance; the zero vector has no direction
    off = tmp_path / "off.npy"
    np.save(off, np.tile([0.0, 0.0, 1.002], (30, 1)))
    with pytest.raises(ValueError, match=r"30 of 30 rows are not on the unit sphere S² \(row 0 has norm 1.002"):
        load_sphere_points(off)
    zero = tmp_path / "zero.npy"
    np.save(zero, np.vstack([np.tile([0.0, 0.0, 1.0], (29, 1)), np.zeros((1, 3))]))
    with pytest.raises(ValueError, match=r"1 of 30 rows are not on the unit sphere S² \(row 29 has norm 0"):
        load_sphere_points(zero)


def test_chunked_metrics_equal_a_direct_computation():
    s = Sphere(2)
    g = torch.Generator().manual_seed(6)
    x = s.random_uniform(23, generator=g, dtype=torch.float64)
    y = s.wrapped_normal(17, scale=0.5, generator=g, dtype=torch.float64)

    def k(a, b):  # the kernel, one pair at a time
        d = float(torch.arccos((a * b).sum().clamp(-1, 1)))
        return sum(math.exp(-d / ell) for ell in (0.1, 0.3, 1.0)) / 3

    kxx = sum(k(a, b) for i, a in enumerate(x) for j, b in enumerate(x) if i != j) / (23 * 22)
    kyy = sum(k(a, b) for i, a in enumerate(y) for j, b in enumerate(y) if i != j) / (17 * 16)
    kxy = sum(k(a, b) for a in x for b in y) / (23 * 17)
    assert math.isclose(geodesic_mmd2(s, x, y, chunk=5), kxx + kyy - 2 * kxy, rel_tol=1e-6, abs_tol=1e-9)
    assert knn_c2st(s, x, y, k=3, generator=torch.Generator().manual_seed(0), chunk=4) == knn_c2st(
        s, x, y, k=3, generator=torch.Generator().manual_seed(0), chunk=1000
    )


def test_cell_mass_tv_hand_computed():
    ref = Coverage(coverage=1.0, modes_covered=8, per_cell=[2, 2, 1, 2, 2, 3, 2, 2])
    # all mass in cell 5: ½ (Σ_{c≠5} q_c + (1 - 3/16)) = ½ (13/16 + 13/16) = 13/16
    one = Coverage(coverage=1.0, modes_covered=1, per_cell=[0, 0, 0, 0, 0, 7, 0, 0])
    assert math.isclose(cell_mass_tv(one, ref), 13 / 16)
    assert cell_mass_tv(ref, ref) == 0.0
    assert cell_mass_tv(Coverage(coverage=0.0, modes_covered=0, per_cell=[0] * 8), ref) == 1.0


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_coverage_refuses_non_finite_samples(bad):
    """A diverged sampler's NaN/inf rows used to count as 'outside every cell' (coverage 0) or give NaN."""
    x = checkerboard(Sphere(2), 20, generator=torch.Generator().manual_seed(0))
    x[5, 0] = bad
    with pytest.raises(ValueError, match="x must be finite points of S2, got NaN or inf coordinates"):
        checkerboard_coverage(Sphere(2), x)


def test_coverage_refuses_samples_off_the_manifold():
    raw = 1.5 * checkerboard(Lorentz(2), 20, generator=torch.Generator().manual_seed(0))  # unprojected
    with pytest.raises(ValueError, match="x must lie on H2 .* map ambient points onto the manifold with proj"):
        checkerboard_coverage(Lorentz(2), raw)
