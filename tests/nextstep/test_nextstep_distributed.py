"""NextStep under torchrun (gloo, 2 ranks): each arm's training step on the rank's shard of the global batch.

What a 2-rank run equals: the one-process run itself (the default config), up to float summation order: the batch
order and prompt dropout are drawn alike on every rank, and the flow-matching noise is drawn for the whole batch as
one process draws it, each rank taking its rows.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest
import torch

from iclr26.common.distributed import World
from iclr26.nextstep.config import NextStepConfig
from iclr26.nextstep.data import prompt_ids
from iclr26.nextstep.experiment import LossModule, train_step
from iclr26.nextstep.heads import FlowMatchingHead, flow_matching_loss
from iclr26.nextstep.model import ARTransformer, nextstep_loss
from tests.conftest import dist_env, torchrun

# Tolerance of the record's floats, 2 ranks vs 1 process: gradients summed in another order moved the losses and
# the sample metrics by <= 1.2e-7 (measured on the smoke); a batch or noise row given to the wrong rank moves the
# loss by > 1e-3.
TOLERANCE = 1e-5


def setup(seed=0):
    torch.manual_seed(seed)
    K, N, d = 3, 4, 2
    model = ARTransformer(vocab_size=K + 3, token_dim=d, d_model=16, n_layers=1, n_heads=2, context_len=3 + N)
    head = FlowMatchingHead(d, 16, dim=16, layers=1, batch_mul=2)
    tokens = torch.randn(10, N, d)  # (M, N, d)
    idx = torch.tensor([4, 1, 7, 7, 0])  # a global batch of B = 5 (odd: shards of 3 and 2)
    prompts = prompt_ids(torch.tensor([0, 1, 2, 0, 1]), K)
    return model, head, tokens, idx, prompts


def test_given_noise_reproduces_the_drawn_noise_and_checks_its_shape():
    net = FlowMatchingHead(2, 4, dim=8, layers=1, batch_mul=3).net
    x, c = torch.randn(5, 2), torch.randn(5, 4)
    drawn = flow_matching_loss(net, x, c, batch_mul=3, generator=torch.Generator().manual_seed(1))
    from iclr26.nextstep.heads import logit_normal_t

    gen = torch.Generator().manual_seed(1)
    t = logit_normal_t(15, generator=gen)
    eps = torch.randn((15, 2), generator=gen)
    assert torch.equal(flow_matching_loss(net, x, c, batch_mul=3, noise=(t, eps)), drawn)
    with pytest.raises(ValueError, match="noise must be"):
        flow_matching_loss(net, x, c, batch_mul=3, noise=(t[:5], eps))


class Recorder:
    """An optimizer stand-in: zero_grad clears, step records the gradients (what DDP would average)."""

    def __init__(self, module):
        self.module, self.grads = module, None

    def zero_grad(self):
        self.module.zero_grad(set_to_none=True)

    def step(self):
        self.grads = [p.grad.clone() for p in self.module.parameters()]


def test_ranks_shares_sum_to_the_one_process_loss_and_gradient():
    # one process: the loss of the whole batch with noise from the generator
    model, head, tokens, idx, prompts = setup()
    whole = nextstep_loss(model, head, prompts, tokens[idx], generator=torch.Generator().manual_seed(3)).total
    whole.backward()
    want = [p.grad.clone() for p in (*model.parameters(), *head.parameters())]
    # two ranks, each with the same generator state (as after the same draws on every rank), DDP's average by hand
    config = dataclasses.replace(NextStepConfig.preset("smoke"), lm_weight=0.01, im_weight=1.0)
    losses, grads = [], []
    for rank in (0, 1):
        module = LossModule(*setup()[:2], config)
        rec = Recorder(module)
        gen = torch.Generator().manual_seed(3)
        losses.append(
            float(train_step(module, module.head, prompts, tokens, None, idx, gen, World(rank, 2, rank), rec))
        )
        grads.append(rec.grads)
    # each rank returns its share of the global mean; summed over the ranks it is the global loss
    assert sum(losses) == pytest.approx(float(whole.detach()), abs=1e-6)
    for g0, g1, w in zip(*grads, want, strict=True):
        torch.testing.assert_close((g0 + g1) / 2, w, atol=1e-6, rtol=1e-5)


@pytest.mark.slow  # the smoke twice, one launch with two interpreters (~25 s on an idle machine)
def test_smoke_on_two_ranks_equals_the_one_process_run(tmp_path):
    env = dist_env(120)
    args = ["-m", "iclr26", "run", "nextstep", "--scale", "smoke", "--quiet"]
    two = torchrun(*args, "--out", str(tmp_path / "two"), env=env)
    assert two.returncode == 0, two.stderr
    (record_file,) = (tmp_path / "two" / "nextstep").glob("*/result.json")
    record = json.loads(record_file.read_text())
    one = subprocess.run(
        [sys.executable, *args, "--out", str(tmp_path / "one")], capture_output=True, text=True, timeout=300, env=env
    )
    assert one.returncode == 0, one.stderr
    single = json.loads(next((tmp_path / "one" / "nextstep").glob("*/result.json")).read_text())
    assert record["world_size"] == 2 and single["world_size"] == 1
    want = single["metrics"]["arms"]
    for arm, values in want.items():
        got = record["metrics"]["arms"][arm]
        assert got["final_loss"] == pytest.approx(values["final_loss"], abs=TOLERANCE), arm
        for setting in ("no_cfg", "cfg"):
            for metric in ("fd", "diversity", "faithfulness"):
                assert got[setting][metric]["mean"] == pytest.approx(values[setting][metric]["mean"], abs=1e-4)
