"""BiasFreeBench's fine-tuning under torchrun, each rank on its shard of the global batch of pairs.

The fast test checks in one process that the ranks' DPO shard losses and gradients add up to the one-process step's
(SFT's sharded step is :func:`iclr26.common.pretrained.sft_step`'s, tested in ``tests/common``); the slow one runs
the smoke reproduction under ``torchrun`` with two gloo ranks and compares it with one process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch

from iclr26.biasfree.config import BiasFreeConfig
from iclr26.biasfree.experiment import run
from iclr26.biasfree.items import PreferencePair
from iclr26.biasfree.training import dpo_shard_backward, dpo_step, reference_logprobs
from iclr26.common.config import ConfigError
from iclr26.common.distributed import World, shard_range
from iclr26.common.pretrained import add_lora
from tests.conftest import torchrun

PAIRS = [PreferencePair("The girl joined our club.", "The girl was good at math.", "The girl was bad at math.",
                        "Gender_identity"),
         PreferencePair("I met a woman.", "The woman was the manager.", "The woman was the secretary.",
                        "Gender_identity"),
         PreferencePair("An old man came in.", "He fixed the laptop.", "He could not use the laptop.",
                        "Age")]  # fmt: skip

# Tolerance, 2 ranks vs 1 process (float32): the reported loss is summed in float64 over the ranks where one process
# sums micro-batch terms in order; the smoke measured 4e-8 relative. A changed pair moves the loss by ~1e-2.
REL_TOLERANCE = 1e-5


def _grads(lm):
    return {n: p.grad.clone() for n, p in lm.model.named_parameters() if p.grad is not None}


def test_dpo_rank_shards_give_the_full_batch_loss_and_gradient(tiny):
    # 3 pairs on 2 ranks: shards {0, 1} and {2} (shares 2/3, 1/3), one pair per micro-batch. Each micro-batch's
    # mean −log σ(βΔ) is weighted by 2 × its share of the 3 pairs (1/3), so half the summed gradients (DDP's
    # average) is the one-process gradient and the shards' loss parts sum to the one-process loss.
    add_lora(tiny, r=4, alpha=8.0, seed=0)
    with torch.no_grad():  # B ≠ 0, so Δ ≠ 0 and the pairs' losses differ
        for name, p in tiny.model.named_parameters():
            if "lora_B" in name:
                p.normal_(0.0, 0.05, generator=torch.Generator().manual_seed(len(name)))
    prompts = [p.prompt for p in PAIRS]
    ref = reference_logprobs(tiny, prompts * 2, [p.chosen for p in PAIRS] + [p.rejected for p in PAIRS])
    ref_c, ref_r = ref[:3], ref[3:]
    params = [p for p in tiny.model.parameters() if p.requires_grad]
    loss, margin, _ = dpo_step(tiny, torch.optim.SGD(params, lr=0.0), PAIRS, ref_c, ref_r, micro_batch_size=1,
                               max_grad_norm=None)  # fmt: skip
    full_loss, full_margins = dpo_shard_backward(tiny, tiny.model, PAIRS, ref_c, ref_r, n_global=3, world_size=1,
                                                 beta=0.1, micro_batch_size=2)  # fmt: skip
    assert full_loss == pytest.approx(loss, rel=1e-6) and float(full_margins.mean()) == pytest.approx(margin)
    expected = _grads(tiny)
    tiny.model.zero_grad(set_to_none=True)
    parts, margins = [], []
    for rank in range(2):
        rows = shard_range(3, rank, 2)
        part, m = dpo_shard_backward(tiny, tiny.model, PAIRS[rows.start : rows.stop], ref_c[rows.start : rows.stop],
                                     ref_r[rows.start : rows.stop], n_global=3, world_size=2, beta=0.1,
                                     micro_batch_size=1)  # fmt: skip
        parts.append(part)
        margins.append(m)
    assert sum(parts) == pytest.approx(loss, rel=1e-6)
    torch.testing.assert_close(torch.cat(margins), full_margins)
    assert parts[0] / 2 != pytest.approx(parts[1], rel=1e-3)  # unequal shards: an unweighted mean would fail
    got = _grads(tiny)
    assert got.keys() == expected.keys() and expected
    for name, grad in expected.items():
        torch.testing.assert_close(got[name] / 2, grad, rtol=1e-4, atol=1e-7, msg=name)


def test_a_batch_that_does_not_split_evenly_is_refused_before_any_work():
    # every rank must make as many micro-batch backward passes (each a DDP collective): train_batch = 3 on 2 ranks is
    # refused naming the field (a stand-in context: only its world is read before the check)
    config = BiasFreeConfig.from_dict({**BiasFreeConfig.preset_values("smoke"), "train_batch": 3})
    with pytest.raises(ConfigError, match="train_batch"):
        run(config, SimpleNamespace(world=World(rank=1, size=2)))


@pytest.mark.slow  # ~30 s on the loaded 2-core machine: the smoke reproduction twice, once under torchrun
def test_smoke_under_torchrun_writes_one_record_with_the_single_process_results(tmp_path):
    # the smoke's batch of 2 pairs: one pair per rank for SFT, DPO and the task vector's fine-tuning; 3 steps, so
    # the last loss follows two data-parallel updates
    args = ("-m", "iclr26", "run", "biasfree", "--scale", "smoke", "--quiet", "--set", "train_steps=3", "--out")
    two = torchrun(*args, str(tmp_path / "two"))
    assert two.returncode == 0, two.stderr
    (record_file,) = (tmp_path / "two" / "biasfree").glob("*/result.json")
    assert [p.name for p in (tmp_path / "two" / "biasfree").iterdir()] == [record_file.parent.name]
    record = json.loads(record_file.read_text())
    assert record["world_size"] == 2
    one = subprocess.run(
        [sys.executable, *args, str(tmp_path / "one")],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert one.returncode == 0, one.stderr
    (single_file,) = (tmp_path / "one" / "biasfree").glob("*/result.json")
    single = json.loads(single_file.read_text())
    assert single["world_size"] == 1
    assert record["metrics"]["train"].keys() == single["metrics"]["train"].keys()
    for arm, ref in single["metrics"]["train"].items():
        for key, value in ref.items():
            mine = record["metrics"]["train"][arm][key]
            assert mine == (pytest.approx(value, rel=REL_TOLERANCE) if isinstance(value, float) else value), (arm, key)
    # generation after training is greedy and alike on every rank: the answers and their scores are the same
    assert {k: v for k, v in record["metrics"].items() if k != "train"} == {
        k: v for k, v in single["metrics"].items() if k != "train"
    }
    assert record["evidence"] == single["evidence"]
