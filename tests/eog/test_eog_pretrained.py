"""One EoG GRPO step on SmolLM2-135M-Instruct (LoRA) through iclr26.common.pretrained: the gpu preset's path."""

from __future__ import annotations

import torch

from iclr26.eog.data import KGQAExample
from iclr26.eog.policy import PretrainedPolicy
from iclr26.eog.rewards import F1_PLUS_PATH, eog_reward

EXAMPLE = KGQAExample(
    qid="q",
    question="what is reached from p01 via works_at then hq_in ?",
    answers=("t03",),
    q_entity=("p01",),
    a_entity=("t03",),
    graph=(("p01", "works_at", "c02"), ("c02", "hq_in", "t03"), ("p01", "born_in", "t04")),
    reasoning_path=((("p01", "works_at", "c02"), ("c02", "hq_in", "t03")),),
    composition=("works_at", "hq_in"),
)


def test_one_eog_grpo_step_on_smollm2():
    from iclr26.common import pretrained

    lm = pretrained.load_pretrained(threads=1)  # bfloat16; no skip: CI installs the weights (make test)
    pretrained.add_lora(lm, r=2, seed=0)
    policy = PretrainedPolicy(lm, max_new_tokens=8, lr_rl=1e-3)
    samples = policy.sample([EXAMPLE], group_size=2, seed=0)
    # the prompt is the official layout under the chat template
    prompt = lm.tokenizer.decode(samples.handle.prompt_ids[0])
    assert "Knowledge Graph:" in prompt and "Starting Entity: p01" in prompt and "<answer>" in prompt
    scores = [eog_reward(t, EXAMPLE.answers, EXAMPLE.path_as_lists(), weights=F1_PLUS_PATH) for t in samples.texts]
    assert all(0.0 <= s.total <= 2.0 for s in scores)
    before = policy.state()
    # the untrained model rarely answers in 8 tokens: give the group distinct rewards so the step moves
    policy.grpo_update(samples, torch.tensor([[2.0, 0.0]]))
    after = policy.state()
    assert before.keys() == after.keys() and any(not torch.equal(before[k], after[k]) for k in before)
