"""The tiny-LM policy (cached generation, GRPO and SFT steps) and the pipeline's reward plumbing."""

from __future__ import annotations

import pytest
import torch

from iclr26.eog.data import KGQAExample, make_trace
from iclr26.eog.policy import Samples, TinyPolicy, WordVocab
from iclr26.eog.rewards import F1_ONLY, F1_PLUS_PATH
from iclr26.eog.training import evaluate, grpo_stage, placebo_paths

GRAPH = (("p01", "works_at", "c02"), ("c02", "hq_in", "t03"), ("p01", "born_in", "t04"), ("t04", "twin", "t03"))


def example(qid="q1") -> KGQAExample:
    path = (("p01", "works_at", "c02"), ("c02", "hq_in", "t03"))
    return KGQAExample(
        qid=qid,
        question="what is reached from p01 via works_at then hq_in ?",
        answers=("t03",),
        q_entity=("p01",),
        a_entity=("t03",),
        graph=GRAPH,
        reasoning_path=(path,),
        composition=("works_at", "hq_in"),
    )


GOLD = make_trace(example())
WRONG = '<think> ( p01 , born_in , t04 ) </think> <answer> [ " t04 " ] </answer>'


def tiny(seed=0) -> TinyPolicy:
    from iclr26.eog.data import compact_prompt

    vocab = WordVocab([compact_prompt(example()), GOLD, WRONG])
    return TinyPolicy(vocab, d_model=16, n_layers=1, n_heads=2, d_ff=32, context_len=64, max_new_tokens=10, seed=seed)


def test_vocab_round_trip_and_unknown_piece():
    policy = tiny()
    ids = policy.vocab.encode(GOLD)
    assert policy.vocab.decode([WordVocab.BOS, *ids, WordVocab.EOS]) == GOLD
    with pytest.raises(ValueError, match="'zzz' is not in the vocabulary"):
        policy.vocab.encode("p01 zzz")


def _logp(policy: TinyPolicy, text: str) -> float:
    from iclr26.eog.policy import completion_logprobs, pack_rows

    seq, plen, clen = pack_rows([(policy.prompt_ids(example()), [*policy.vocab.encode(text), WordVocab.EOS])])
    with torch.no_grad():
        logp, mask = completion_logprobs(policy.model, seq, plen, clen)
    return float((logp * mask).sum())


def _samples(policy: TinyPolicy, texts: list[str]) -> Samples:
    prompts = [policy.prompt_ids(example()) for _ in texts]
    completions = [[*policy.vocab.encode(t), WordVocab.EOS] for t in texts]
    return Samples(texts, [len(c) for c in completions], [True] * len(texts), len(texts), (prompts, completions))


def test_grpo_update_moves_probability_to_the_better_completion():
    policy = tiny()
    policy.lr_rl = 1e-2
    before = (_logp(policy, GOLD), _logp(policy, WRONG))
    policy.grpo_update(_samples(policy, [GOLD, WRONG]), torch.tensor([[2.0, 0.0]]))
    after = (_logp(policy, GOLD), _logp(policy, WRONG))
    assert after[0] > before[0] and after[1] < before[1]


def test_grpo_update_with_tied_rewards_changes_nothing():
    policy = tiny()
    state = policy.state()
    assert policy.grpo_update(_samples(policy, [GOLD, WRONG]), torch.tensor([[1.0, 1.0]])) == 0.0
    assert all(torch.equal(state[k], v) for k, v in policy.state().items())


def test_sft_update_lowers_the_loss():
    policy = tiny()
    policy.lr_sft = 1e-2
    losses = [policy.sft_update([example()] * 4, [GOLD] * 4) for _ in range(20)]
    assert losses[-1] < 0.5 * losses[0]


class FakePolicy:
    """Returns fixed completions and records the rewards of each GRPO update."""

    def __init__(self, texts):
        self.texts = texts
        self.rewards = []

    def sample(self, examples, *, group_size, seed):
        texts = [self.texts[g % len(self.texts)] for _ in examples for g in range(group_size)]
        return Samples(texts, [len(t.split()) for t in texts], [True] * len(texts), group_size)

    def grpo_update(self, samples, rewards):
        self.rewards.append(rewards.clone())
        return 0.0

    def greedy(self, examples):
        texts = [self.texts[i % len(self.texts)] for i in range(len(examples))]
        return Samples(texts, [len(t.split()) for t in texts], [True] * len(texts), 1)


def test_grpo_stage_rewards_by_hand():
    fake = FakePolicy([GOLD, WRONG, "no answer at all"])
    pool = [example("a"), example("b")]
    curves = grpo_stage(fake, pool, steps=2, prompts_per_step=2, group_size=3, weights=F1_PLUS_PATH, seed=0)
    # gold trace: F1 1 + path 1 = 2; wrong: F1 0 + path 0 (its triple is off the path); malformed: 0
    assert all(torch.equal(r, torch.tensor([[2.0, 0.0, 0.0]] * 2, dtype=torch.float64)) for r in fake.rewards)
    assert curves.reward == [pytest.approx(2 / 3)] * 2 and curves.valid == [pytest.approx(2 / 3)] * 2
    fake = FakePolicy([GOLD, WRONG])
    grpo_stage(fake, pool, steps=1, prompts_per_step=1, group_size=2, weights=F1_ONLY, seed=0)
    assert fake.rewards[0].tolist() == [[1.0, 0.0]]
    # the placebo control scores the path term against off-path triples: the wrong trace cites one of the two
    placebo = {q: [[["p01", "born_in", "t04"], ["t04", "twin", "t03"]]] for q in ("a", "b")}
    fake = FakePolicy([GOLD, WRONG])
    curves = grpo_stage(
        fake, pool, steps=1, prompts_per_step=1, group_size=2, weights=F1_PLUS_PATH, seed=0, path_override=placebo
    )
    assert fake.rewards[0].tolist() == [[1.0, 0.5]]
    assert curves.path == [0.5]  # the curves still report the gold path reward: (1 + 0) / 2


def test_placebo_paths_are_off_path_and_of_equal_size():
    paths = placebo_paths([example("a")], seed=0)
    (path,) = paths["a"]
    gold = set(example().gold_triples)
    assert len(path) == 2 and not {tuple(t) for t in path} & gold and {tuple(t) for t in path} <= set(GRAPH)


def test_evaluate_by_hand():
    result = evaluate(FakePolicy([GOLD, WRONG, "<think> ( p01 , works_at , c02 ) </think>"]), [example()] * 3)
    assert result.hits_at_1 == [1.0, 0.0, 0.0] and result.f1 == [1.0, 0.0, 0.0]
    # faithfulness: 2/2, 0/2, and 1/2 for the truncated trace (cited triples count without an answer)
    assert result.faithfulness == [1.0, 0.0, 0.5] and result.off_path == [0, 1, 0]
    assert result.valid == [True, True, False]
    assert result.means()["faithfulness"] == pytest.approx(0.5)
