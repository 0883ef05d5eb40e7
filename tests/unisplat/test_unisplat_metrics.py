"""PSNR and SSIM against hand-computed values."""

from __future__ import annotations

import pytest
import torch

from iclr26.unisplat.metrics import psnr, ssim


def test_psnr_by_hand():
    # MSE = 0.1² = 0.01 → PSNR = −10 log10(0.01) = 20 dB
    assert psnr(torch.zeros(3, 4, 4), torch.full((3, 4, 4), 0.1)) == pytest.approx(20.0)
    mask = torch.zeros(4, 4, dtype=torch.bool)
    mask[0, 0] = True
    target = torch.zeros(3, 4, 4)
    target[:, 0, 0] = 0.01  # only the masked pixel counts: MSE 1e-4 → 40 dB
    target[:, 1, 1] = 0.5
    assert psnr(torch.zeros(3, 4, 4), target, mask) == pytest.approx(40.0)
    with pytest.raises(ValueError, match="mask"):
        psnr(torch.zeros(3, 4, 4), target, torch.zeros(4, 4, dtype=torch.bool))


def test_ssim_by_hand():
    x = torch.rand(3, 16, 16, generator=torch.Generator().manual_seed(0))
    assert ssim(x, x) == pytest.approx(1.0)
    # constant images a and b: σ terms vanish, SSIM = (2ab + C1) / (a² + b² + C1)
    a, b, c1 = 0.3, 0.6, 0.01**2
    assert ssim(torch.full((1, 12, 12), a), torch.full((1, 12, 12), b)) == pytest.approx(
        (2 * a * b + c1) / (a * a + b * b + c1), rel=1e-6
    )
    with pytest.raises(ValueError, match="at least 11x11"):
        ssim(torch.zeros(1, 8, 8), torch.zeros(1, 8, 8))
