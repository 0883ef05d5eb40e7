"""MAGREF's trainer under torchrun: each rank's shard of the global batch, DDP gradient averaging.

The fast test checks the sharded loss in one process; the slow one runs the smoke reproduction under ``torchrun``
with two gloo ranks and compares it with one process.
"""

from __future__ import annotations

import pytest
import torch

from iclr26.common.distributed import shard_range
from iclr26.magref.config import MAGREFConfig
from iclr26.magref.experiment import build_model
from iclr26.magref.flow import interpolate
from iclr26.magref.latent import CausalPatchify
from iclr26.magref.training import build_batch, draw_items, permute_regions, shard_loss
from tests.conftest import smoke_two_ranks_and_one

# Tolerance, 2 ranks vs 1 process with the same global batch (float32): DDP averages two half-batch gradients where one
# process takes one mean, ~1e-7 relative per step, carried on by AdamW; the smoke (4 steps per model) measured under
# 1e-6 relative on the final losses. A changed batch item moves the loss by ~1e-2 relative.
REL_TOLERANCE = 1e-4


@pytest.mark.parametrize("layout", ["canvas", "temporal"])
def test_rank_shards_of_a_batch_give_the_global_loss_and_gradient(layout):
    # 5 items on 2 ranks: rank 0 items 0-2 (share 3/5), rank 1 items 3-4 (share 2/5). The flow-matching loss is a
    # mean over items of one size, so the shares' weighted shard losses sum to the 5-item loss, and with each rank
    # backpropagating its term times world_size = 2, half the sum of the two gradients (DDP's average) is the
    # 5-item gradient. The placebo permutation and α > 0 exercise the region path.
    config = MAGREFConfig.from_dict(MAGREFConfig.preset_values("smoke"))
    torch.manual_seed(0)
    model = build_model(config)
    gen = torch.Generator().manual_seed(1)
    world, codec, b = config.sprite_world(), CausalPatchify(), 5
    batch = build_batch(draw_items(b, world, gen), layout, codec, world, gen)
    t = torch.rand(b, generator=gen)
    eps = torch.randn(batch.z0.shape, generator=gen)
    zt = interpolate(batch.z0, eps, t)
    reg = permute_regions(batch.regions, gen)
    full = shard_loss(model, batch, zt, t, eps, reg, 1.0, slice(0, b))
    full.backward()
    expected = [p.grad.clone() for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    terms, means = [], []
    for rank in (0, 1):
        shard = shard_range(b, rank, 2)
        share = len(shard) / b
        loss = shard_loss(model, batch, zt, t, eps, reg, 1.0, slice(shard.start, shard.stop))
        (loss * (share * 2)).backward()  # the two ranks' gradients accumulate: their sum is 2 x DDP's average
        terms.append(loss.item() * share)
        means.append(loss.item())
    assert sum(terms) == pytest.approx(full.item(), rel=1e-6)
    assert means[0] != pytest.approx(means[1], rel=1e-5)  # unequal shards: an unweighted mean would fail
    for p, g in zip(model.parameters(), expected, strict=True):
        assert torch.allclose(p.grad / 2, g, rtol=1e-4, atol=1e-7)


@pytest.mark.slow  # ~60 s on the loaded 2-core machine: the smoke reproduction twice, once under torchrun
def test_smoke_under_torchrun_writes_one_record_with_the_single_process_losses(tmp_path):
    record, single = smoke_two_ranks_and_one("magref", tmp_path)
    mine, ref = record["metrics"], single["metrics"]
    assert mine["base_final_loss"] == pytest.approx(ref["base_final_loss"], rel=REL_TOLERANCE)
    for arm in ("magref", "vanilla", "nodisent", "placebo"):
        assert mine["arms"][arm]["final_loss"] == pytest.approx(ref["arms"][arm]["final_loss"], rel=REL_TOLERANCE)
