"""Two HICRA steps on SmolLM2-135M-Instruct (LoRA) through iclr26.common.pretrained: the gpu preset's path works."""

from __future__ import annotations

import itertools

import torch


def test_two_hicra_steps_on_smollm2(monkeypatch):
    from iclr26.common import pretrained
    from iclr26.hicra import Problem, mine_strategic_grams, pretrained_run
    from iclr26.hicra.task import AnswerCheck

    lm = pretrained.load_pretrained(dtype="float32", threads=1)  # no skip: CI installs the weights (make test)
    pretrained.add_lora(lm, r=2, seed=0)
    # the untrained instruct model never answers the task: alternate rewards 1, 0 so that the advantages move
    flips = itertools.cycle([1.0, 0.0])
    monkeypatch.setattr(pretrained_run, "check_answer", lambda p, t, finished: AnswerCheck(next(flips), "wrong"))
    grams = mine_strategic_grams(["so the answer is 1 + 2", "so the answer is 3 * 4"], min_doc_frac=0.5)
    opt = torch.optim.AdamW([p for p in lm.model.parameters() if p.requires_grad], lr=1e-3)
    before = {n: p.detach().clone() for n, p in lm.model.named_parameters() if p.requires_grad}
    problems = [Problem(3, 1, 4)]
    for step in range(2):
        rollout = pretrained.sample_rollout(
            lm, [pretrained_run.prompt_text(p) for p in problems], group_size=2, max_new_tokens=8, chat=False, seed=step
        )
        out = pretrained_run.hicra_step(lm, opt, rollout, problems, grams, alpha=0.2)
        assert out.rewards.tolist() == [[1.0, 0.0]]
        assert out.advantages.shape == rollout.mask.shape
        # Â = ±0.5 on every real token (planning tokens would get 0.6 / −0.4)
        real = rollout.mask.cpu()
        assert set(out.advantages[real].abs().round(decimals=4).tolist()) <= {0.5, 0.6, 0.4}
    after = dict(lm.model.named_parameters())
    assert any(not torch.equal(before[n], after[n].detach()) for n in before)
