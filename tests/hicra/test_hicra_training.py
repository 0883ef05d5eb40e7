"""The tiny-LM engine: cached generation equals the plain forward pass; an RL step of each arm runs."""

from __future__ import annotations

import torch

from iclr26.hicra import Vocab, make_problems, mine_strategic_grams
from iclr26.hicra.training import (
    ARMS,
    ModelSpec,
    RLSettings,
    auc,
    build_policy,
    completion_logits,
    encode_prompts,
    generate,
    train_rl,
)


def test_cached_generation_matches_the_full_forward_pass():
    torch.manual_seed(0)
    vocab = Vocab()
    model = build_policy(ModelSpec(32, 2, 2, 64, 48), vocab)
    prompts = encode_prompts(make_problems(12)[::40], vocab)  # prompts of different lengths
    gen = torch.Generator().manual_seed(0)
    samples = generate(model, prompts, vocab, max_new_tokens=12, temperature=1.0, generator=gen)
    # the log-probs of the sampled tokens from one full (right-padded) forward pass equal a per-row unpadded pass
    _, logp, mask = completion_logits(model, samples)
    for i in range(len(prompts)):
        ids = torch.tensor([samples.sequences[i, : int(samples.prompt_len[i] + samples.completion_len[i])].tolist()])
        out = torch.log_softmax(model(ids[:, :-1]).logits[0], dim=-1)
        p = int(samples.prompt_len[i])
        ref = out[p - 1 :].gather(-1, ids[0, p:, None]).squeeze(-1)
        torch.testing.assert_close(logp[i, mask[i]], ref, atol=1e-5, rtol=1e-5)
    # greedy decoding with the cache equals argmax of the full forward pass, token by token
    greedy = generate(model, prompts[:2], vocab, max_new_tokens=6, temperature=0.0)
    for i in range(2):
        ids = list(prompts[i])
        for _ in range(int(greedy.completion_len[i])):
            ids.append(int(model(torch.tensor([ids])).logits[0, -1].argmax()))
        assert ids[len(prompts[i]) :] == greedy.completion_ids(i)


def test_each_arm_takes_steps_and_changes_the_policy(monkeypatch):
    import iclr26.hicra.training as training
    from iclr26.hicra.task import AnswerCheck

    # an untrained policy solves nothing (all advantages 0): reward odd-length completions instead
    monkeypatch.setattr(training, "check_answer", lambda p, t, finished: AnswerCheck(float(len(t) % 2), "wrong"))
    torch.manual_seed(0)
    vocab = Vocab()
    problems = make_problems(4)
    grams = mine_strategic_grams(["yes , so the answer is 1 + 1", "no , so the answer is 2 * 1"], min_doc_frac=0.5)
    settings = RLSettings(2, 2, 2, 1e-2, 0.2, 0.2, 8, 1)
    for arm in ARMS:
        torch.manual_seed(0)
        model = build_policy(ModelSpec(16, 1, 2, 32, 24), vocab)
        before = [p.detach().clone() for p in model.parameters()]
        curves = train_rl(model, arm, problems, problems, vocab, grams, grams, settings, seed=1)
        assert curves.eval_step == [0, 1, 2] and len(curves.reward) == 2 and curves.n_tokens > 0
        assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_auc_is_the_mean_height():
    # trapezoids over steps 0..10..20 with heights 0, 1, 1: (5 + 10) / 20
    assert auc([0, 10, 20], [0.0, 1.0, 1.0]) == 0.75
