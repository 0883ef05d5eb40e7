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


def _fixed_batch(vocab):
    """Two prompts x two completions each: one correct and one wrong answer per group (advantages ±0.5)."""
    from iclr26.hicra import Problem
    from iclr26.hicra.training import Samples

    problems = [Problem(3, 1, 4), Problem(3, 1, 4), Problem(5, 2, 10), Problem(5, 2, 10)]
    texts = [
        "try 3 * 1 = 3 . no , let us try another way . try 3 + 1 = 4 . yes , so the answer is 3 + 1",
        "try 3 - 1 = 2 . no , so the answer is 3 - 1",
        "try 5 * 2 = 10 . yes , therefore the answer is 5 * 2",
        "try 5 + 2 = 7 . no , backtrack and try again . try 5 - 2 = 3 . no , so the answer is 5 - 2",
    ]
    rows = [
        ([Vocab.BOS, *vocab.encode(p.prompt)], [*vocab.encode(t), Vocab.EOS])
        for p, t in zip(problems, texts, strict=True)
    ]
    width = max(len(p) + len(c) for p, c in rows)
    seq = torch.full((4, width), Vocab.PAD, dtype=torch.long)
    for i, (p, c) in enumerate(rows):
        seq[i, : len(p) + len(c)] = torch.tensor(p + c)
    samples = Samples(
        seq,
        torch.tensor([len(p) for p, _ in rows]),
        torch.tensor([len(c) for _, c in rows]),
        torch.ones(4, dtype=torch.bool),
        texts,
    )
    return problems, samples


def test_alpha_reaches_each_arm_only_on_its_own_tokens(monkeypatch):
    # wiring: one step of each arm on the same batch; the token advantages handed to the GRPO loss equal the plain
    # GRPO ones except on the arm's tokens, where they gain α·|Â| (hicra: the mined planning tokens only)
    import iclr26.hicra.training as training
    from iclr26.hicra import planning_mask_batch
    from iclr26.hicra.training import rl_step

    vocab = Vocab()
    problems, samples = _fixed_batch(vocab)
    grams = mine_strategic_grams(samples.texts, min_doc_frac=0.5, max_within=3.0)
    placebo = mine_strategic_grams(["backtrack and try again"] * 2, min_doc_frac=0.5)  # in one completion only
    alpha = 0.3
    settings = RLSettings(1, 2, 2, 1e-3, alpha, 0.2, 40, 1)
    seen = {}
    real_loss = training.grpo_loss

    def spy(logp, logp_old, advantages, **kw):
        seen[arm] = advantages.detach().clone()
        return real_loss(logp, logp_old, advantages, **kw)

    monkeypatch.setattr(training, "grpo_loss", spy)
    for arm in ARMS:
        torch.manual_seed(0)
        model = build_policy(ModelSpec(16, 1, 2, 32, 64), vocab)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        rl_step(model, opt, arm, problems, samples, vocab, grams, placebo, settings)
    pieces = [vocab.piece_list(samples.completion_ids(i)) for i in range(4)]
    mask = torch.arange(seen["grpo"].shape[1])[None, :] < samples.completion_len[:, None]
    planning = planning_mask_batch(pieces, grams, width=mask.shape[1]) & mask
    random = planning_mask_batch(pieces, placebo, width=mask.shape[1]) & mask
    base = torch.tensor([0.5, -0.5, 0.5, -0.5])[:, None].expand_as(mask).masked_fill(~mask, 0.0)  # Â = R − mean
    assert torch.equal(seen["grpo"], base)
    assert planning.any() and (mask & ~planning).any()
    torch.testing.assert_close(seen["hicra"], torch.where(planning, base + alpha * base.abs(), base))
    assert random.any() and not (random & planning).any()
    torch.testing.assert_close(seen["placebo"], torch.where(random, base + alpha * base.abs(), base))
    changed = seen["entropy"] != base
    assert changed.sum() == planning.sum() and not torch.equal(changed, planning)  # same budget, other tokens


def test_the_configs_alpha_is_the_step_settings_alpha():
    from iclr26.hicra.config import HicraConfig
    from iclr26.hicra.experiment import rl_settings

    assert rl_settings(HicraConfig(alpha=0.37)).alpha == 0.37
