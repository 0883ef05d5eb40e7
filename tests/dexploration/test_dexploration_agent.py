"""The agent: sequences, training, and episodes that reject malformed actions without crashing."""

from __future__ import annotations

import pytest
import torch

from iclr26.dexploration.agent import (
    AgentLM,
    conjecture,
    conjecture_sequence,
    encode,
    explore,
    explorer_sequence,
    parse_conjecture,
    train_agent,
)
from iclr26.dexploration.env import MalformedAction
from iclr26.dexploration.kernel import Z3Kernel
from iclr26.dexploration.transform import exploratory_transformation
from tests.dexploration.test_dexploration_transform import PROOF


def test_sequences_of_one_proof():
    actions = exploratory_transformation(PROOF)
    seq = explorer_sequence(actions)
    assert seq[:4] == ["<bos>", "INTRO", "x", ";"] and seq[-3:] == ["SUBMIT", ";", "<eos>"]
    conj = conjecture_sequence(actions)
    # binders in trajectory order, then the goal
    assert " ".join(conj) == ("<bos> INTRO x ; HYP x <= 2 ; INTRO y ; HYP - y <= - 1 ; "
                              "GOAL x * y + x - 3 * y <= 1 ; <eos>")  # fmt: skip
    assert len(encode(seq)) == len(seq)
    with pytest.raises(KeyError):
        encode(["NOPE"])


def test_training_lowers_the_loss():
    seqs = [explorer_sequence(exploratory_transformation(PROOF))] * 4
    res = train_agent(seqs, steps=40, batch_size=4, lr=1e-2, d_embed=8, d_hidden=16, n_layers=1,
                      generator=torch.Generator().manual_seed(0))  # fmt: skip
    assert res.losses[-1] < 0.7 * res.losses[0]  # falls by more than 30% (ln 31 = 3.4 at the start)
    with pytest.raises(ValueError, match="empty"):
        train_agent([], steps=1, batch_size=1, lr=1e-3, d_embed=4, d_hidden=4, n_layers=1,
                    generator=torch.Generator())  # fmt: skip


def test_untrained_agent_episodes_count_every_rejection_and_never_crash():
    torch.manual_seed(0)
    model = AgentLM(d_embed=8, d_hidden=16).eval()
    eps = explore(model, Z3Kernel(), 6, max_actions=5, max_action_tokens=6,
                  generator=torch.Generator().manual_seed(1))  # fmt: skip
    assert len(eps) == 6
    for e in eps:
        assert e.actions <= 5 and e.end in ("submitted", "eos", "max_actions", "context")
        # every proposed action was either accepted or rejected with a counted reason
        assert e.accepted + sum(e.rejections.values()) == e.actions
        assert e.tokens >= e.actions
    assert sum(sum(e.rejections.values()) for e in eps) > 0


def test_trained_agent_reproduces_its_trajectory_and_the_kernel_accepts_it():
    seqs = [explorer_sequence(exploratory_transformation(PROOF))] * 4
    res = train_agent(seqs, steps=150, batch_size=4, lr=1e-2, d_embed=16, d_hidden=32, n_layers=1,
                      generator=torch.Generator().manual_seed(0))  # fmt: skip
    model = AgentLM(d_embed=16, d_hidden=32).eval()
    model.load_state_dict(res.state)
    (ep,) = explore(model, Z3Kernel(), 1, max_actions=20, temperature=0.05, generator=torch.Generator().manual_seed(2))
    assert ep.end == "submitted" and ep.statement is not None
    assert ep.statement.conclusion == PROOF.goal


@pytest.mark.parametrize(
    ("text", "reason"),
    [("INTRO x ; HYP x <= 2 ;", "no_goal"), ("INTRO x ; GOAL x <= ;", "bad_goal"),
     ("INTRO x ; GOAL x <= 1", "unterminated"), ("DEDUCE x <= 1 ; GOAL x <= 1 ;", "bad_binder")],
)  # fmt: skip
def test_malformed_conjectures_name_the_reason(text, reason):
    with pytest.raises(MalformedAction, match=reason):
        parse_conjecture(text.split())


def test_conjecture_sampling_returns_token_counts():
    model = AgentLM(d_embed=8, d_hidden=16).eval()
    out = conjecture(model, 3, max_tokens=10, generator=torch.Generator().manual_seed(0))
    assert len(out) == 3 and all(0 < n <= 10 and len(t) <= n for t, n in out)
