"""PAGE-4D's fine-tuning step under torchrun: each rank's shard of the global batch, DDP gradient averaging.

The fast test checks the sharded step in one process (without a process group the reduction is the identity, so each
rank's returned loss is its own weighted term); the slow one runs the smoke reproduction under ``torchrun`` with two
gloo ranks and compares it with one process.
"""

from __future__ import annotations

import pytest
import torch

from iclr26.common.distributed import World
from iclr26.page4d.config import Page4DConfig
from iclr26.page4d.data import batch_tensors
from iclr26.page4d.experiment import build_model, scenes
from iclr26.page4d.finetune import GroupSpec, train_step, trainable_groups
from tests.conftest import smoke_two_ranks_and_one

# Tolerance, 2 ranks vs 1 process with the same global batch (float32): DDP averages two half-batch gradients where one
# process takes one mean, which moves a loss by ~1e-7 relative per step, and AdamW carries it on; the smoke measured
# 8e-8 relative on the pre-training loss. A changed batch scene moves the loss by ~1e-2 relative.
REL_TOLERANCE = 1e-4


class _Recorder(torch.optim.AdamW):
    """An AdamW that records the gradients instead of stepping (the step's learning rates are still set on it)."""

    grads: list[torch.Tensor]

    def step(self, closure=None):  # noqa: ANN001, ANN201
        self.grads = [p.grad.clone() if p.grad is not None else torch.zeros_like(p) for g in self.param_groups
                      for p in g["params"]]  # fmt: skip


def test_rank_shards_of_a_batch_give_the_global_loss_and_gradient():
    # 3 scenes on 2 ranks: rank 0 scenes 0-1 (share 2/3), rank 1 scene 2 (share 1/3). The camera and depth losses are
    # means over scenes of one size, so the shares' weighted losses sum to the 3-scene loss, and each rank's
    # backpropagated loss is that term times world_size = 2: half the sum of the two ranks' gradients (DDP's average)
    # is the 3-scene gradient. α > 0 here, so the mask head's gradient is compared too.
    config = Page4DConfig.from_dict(Page4DConfig.preset_values("smoke"))
    torch.manual_seed(0)
    model = build_model(config)
    spec = GroupSpec(lr=1e-3, warmup=0.0, weight_decay=0.01)
    groups = trainable_groups(model, "page4d", blocks=spec, mask_head=spec)
    specs = [s for _, s in groups]
    opt = _Recorder([{"params": ps} for ps, _ in groups])
    batch = batch_tensors(scenes(config, 5, 3, dynamic=True))
    schedule = config.schedule()
    kw = {"step": 2, "total": 3, "schedule": schedule, "max_norm": 1e9}  # no clipping: compare raw gradients
    full = train_step(model, opt, specs, batch, **kw)
    assert full.alpha > 0
    expected = opt.grads
    parts, summed = [], None
    for rank in (0, 1):
        parts.append(train_step(model, opt, specs, batch, world=World(rank=rank, size=2), **kw))
        summed = opt.grads if summed is None else [a + b for a, b in zip(summed, opt.grads, strict=True)]
    for name in ("loss", "camera", "depth"):
        assert sum(getattr(p, name) for p in parts) == pytest.approx(getattr(full, name), rel=1e-6), name
    assert parts[0].loss != pytest.approx(parts[1].loss, rel=1e-3)  # the shards differ, so the sum can fail
    for got, want in zip(summed, expected, strict=True):
        assert torch.allclose(got / 2, want, rtol=1e-4, atol=1e-7)
    assert any(g.abs().sum() > 0 for g in expected[-len(groups[-1][0]) :])  # the mask head has a gradient
    with pytest.raises(ValueError, match="smaller than the 4 ranks"):
        train_step(model, opt, specs, batch, world=World(rank=0, size=4), **kw)


@pytest.mark.slow  # ~60 s on the loaded 2-core machine: the smoke reproduction twice, once under torchrun
def test_smoke_under_torchrun_writes_one_record_with_the_single_process_losses(tmp_path):
    record, single = smoke_two_ranks_and_one("page4d", tmp_path)
    mine, ref = record["metrics"], single["metrics"]
    assert mine["pretrain_final_loss"] == pytest.approx(ref["pretrain_final_loss"], rel=REL_TOLERANCE)
    for arm in ("naive", "full", "page4d"):  # page4d: the mask head in the graph (α > 0)
        assert mine["arms"][arm]["final_loss"] == pytest.approx(ref["arms"][arm]["final_loss"], rel=REL_TOLERANCE)
        assert mine["arms"][arm]["dynamic"]["ate"] == pytest.approx(ref["arms"][arm]["dynamic"]["ate"], rel=1e-3)
