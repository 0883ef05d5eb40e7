"""The exploring agent: a small GRU language model trained from scratch on trajectories, and its two uses.

- **DExplorer** (:func:`explore`): the model proposes one action at a time (tokens up to ``;``); the environment
  checks it; a rejected action is discarded and the model's state is rolled back, so it samples again from the same
  state. An episode ends on an accepted SUBMIT, an end-of-sequence token, or after ``max_actions`` proposed actions.
  Token cost counts every sampled token, rejected actions included.
- **Conjecture-then-Prove** (:func:`conjecture`): the same architecture trained on the bare statements (Γ ⊢ U) of the
  same corpus writes a whole statement in one shot; :mod:`iclr26.dexploration.prover` then tries to prove it.

Glossary: ``B`` episodes in a batch, ``T`` tokens, ``V`` vocabulary, ``D`` embedding width, ``H`` hidden width,
``L`` GRU layers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from iclr26.dexploration.env import Action, ExplorationEnv, MalformedAction, Statement, parse_action
from iclr26.dexploration.kernel import Kernel
from iclr26.dexploration.logic import VARIABLES, ParseError, parse_fact

PAD, BOS, EOS = "<pad>", "<bos>", "<eos>"
VOCAB: tuple[str, ...] = (
    PAD, BOS, EOS, "INTRO", "HYP", "DEDUCE", "SUBMIT", "GOAL", ";", "+", "-", "*", "<=", "=",
    *"0123456789", *VARIABLES,
)  # fmt: skip
TOKEN_ID = {t: i for i, t in enumerate(VOCAB)}


def encode(tokens: Sequence[str]) -> list[int]:
    """Token ids of ``tokens``.

    Raises:
        KeyError: for a token outside :data:`VOCAB`.
    """
    return [TOKEN_ID[t] for t in tokens]


def explorer_sequence(actions: Sequence[Action]) -> list[str]:
    """The training sequence of a trajectory: ``<bos>`` actions ``<eos>``."""
    return [BOS, *(t for a in actions for t in a.tokens()), EOS]


def conjecture_sequence(actions: Sequence[Action]) -> list[str]:
    """The training sequence of a bare statement: ``<bos>`` INTRO/HYP actions, ``GOAL U ;`` ``<eos>``.

    ``actions`` is a trajectory; its INTRO and HYP actions (in order) and its last DEDUCE (U) are kept.
    """
    intro = [t for a in actions if a.kind in ("intro", "hyp") for t in a.tokens()]
    goal = [a for a in actions if a.kind == "deduce"][-1].fact
    assert goal is not None
    return [BOS, *intro, "GOAL", *goal.tokens(), ";", EOS]


class AgentLM(nn.Module):
    """Embedding → L-layer GRU → linear head over :data:`VOCAB`.

    Shapes: ``forward(idx (B, T)) -> logits (B, T, V)``; ``step(tok (B,), h (L, B, H)) -> (logits (B, V), h)``.
    """

    def __init__(self, *, d_embed: int = 64, d_hidden: int = 192, n_layers: int = 1) -> None:
        super().__init__()
        self.emb = nn.Embedding(len(VOCAB), d_embed)
        self.rnn = nn.GRU(d_embed, d_hidden, num_layers=n_layers, batch_first=True)
        self.head = nn.Linear(d_hidden, len(VOCAB))
        self.n_layers, self.d_hidden = n_layers, d_hidden

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(self.emb(idx))  # (B, T, H)
        return self.head(out)  # (B, T, V)

    def step(self, tok: torch.Tensor, h: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        out, h = self.rnn(self.emb(tok[:, None]), h)  # (B, 1, H), (L, B, H)
        return self.head(out[:, 0]), h


@dataclass(frozen=True)
class TrainResult:
    """A trained agent as plain tensors (a unit's result) and its loss curve.

    Attributes:
        state: the model's state dict (CPU tensors).
        losses: mean training loss per logged step.
        tokens_seen: training tokens (non-pad targets) processed.
    """

    state: dict[str, torch.Tensor]
    losses: list[float]
    tokens_seen: int


def train_agent(
    sequences: Sequence[Sequence[str]],
    *,
    steps: int,
    batch_size: int,
    lr: float,
    d_embed: int,
    d_hidden: int,
    n_layers: int,
    generator: torch.Generator,
) -> TrainResult:
    """Next-token training (AdamW, cosine decay, gradient clipping at 1) on ``sequences``.

    Raises:
        ValueError: for an empty corpus.
    """
    if not sequences:
        raise ValueError("sequences is empty: nothing to train on")
    model = AgentLM(d_embed=d_embed, d_hidden=d_hidden, n_layers=n_layers)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + np.cos(np.pi * min(s / max(steps, 1), 1.0))))
    ids = [torch.tensor(encode(s), dtype=torch.long) for s in sequences]
    losses: list[float] = []
    seen = 0
    for _ in range(steps):
        pick = torch.randint(len(ids), (batch_size,), generator=generator).tolist()
        batch = nn.utils.rnn.pad_sequence([ids[i] for i in pick], batch_first=True, padding_value=TOKEN_ID[PAD])
        logits = model(batch[:, :-1])  # (B, T-1, V)
        target = batch[:, 1:]
        # SFT on the transformed trajectories: next-token cross-entropy over the action tokens (padding ignored)
        loss = F.cross_entropy(logits.reshape(-1, len(VOCAB)), target.reshape(-1), ignore_index=TOKEN_ID[PAD])
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        seen += int((target != TOKEN_ID[PAD]).sum())
        losses.append(loss.item())
    return TrainResult({k: v.detach().clone() for k, v in model.state_dict().items()}, losses, seen)


def load_agent(result: TrainResult, *, d_embed: int, d_hidden: int, n_layers: int) -> AgentLM:
    """The model of a :class:`TrainResult`, in eval mode."""
    model = AgentLM(d_embed=d_embed, d_hidden=d_hidden, n_layers=n_layers)
    model.load_state_dict(result.state)
    return model.eval()


@dataclass
class Episode:
    """One episode of an agent.

    Attributes:
        statement: the submitted (DExplorer) or conjectured and proved (CtP) statement; None if none.
        tokens: tokens sampled (all actions, rejected ones included; for CtP the conjecture).
        actions: actions proposed (accepted and rejected).
        accepted: actions the environment accepted.
        rejections: rejection reason -> count.
        end: why the episode ended: ``submitted``, ``eos``, ``max_actions`` or ``context``.
        conjecture_text: for CtP, the sampled statement's text.
    """

    statement: Statement | None
    tokens: int
    actions: int
    accepted: int = 0
    rejections: Counter = field(default_factory=Counter)
    end: str = ""
    conjecture_text: str = ""


def _sample(logits: torch.Tensor, temperature: float, generator: torch.Generator) -> torch.Tensor:
    probs = torch.softmax(logits / temperature, dim=-1)  # (B, V)
    return torch.multinomial(probs, 1, generator=generator)[:, 0]


@torch.no_grad()
def explore(
    model: AgentLM,
    kernel: Kernel,
    n_episodes: int,
    *,
    max_actions: int,
    max_action_tokens: int = 48,
    max_tokens: int = 400,
    temperature: float = 1.0,
    check: bool = True,
    generator: torch.Generator,
) -> list[Episode]:
    """Run ``n_episodes`` DExplorer episodes in one batch (module docstring).

    Args:
        model: the trained agent.
        kernel: the environment's kernel.
        n_episodes: B.
        max_actions: most proposed actions per episode (the paper: 80 steps).
        max_action_tokens: an action longer than this is cut and rejected (``too_long``).
        max_tokens: an episode's accepted-prefix budget; past it the episode ends (``context``).
        temperature: sampling temperature.
        check: use the kernel (False: the unverified control).
        generator: the sampling randomness.
    """
    envs = [ExplorationEnv(kernel, check=check) for _ in range(n_episodes)]
    episodes = [Episode(None, 0, 0) for _ in range(n_episodes)]
    logits, h = model.step(torch.full((n_episodes,), TOKEN_ID[BOS]), None)  # (B, V), (L, B, H)
    prefix_len = [1] * n_episodes
    active = list(range(n_episodes))
    semi, eos = TOKEN_ID[";"], TOKEN_ID[EOS]
    while active:
        idx = torch.tensor(active)
        cur_logits, cur_h = logits[idx], h[:, idx]
        toks: list[list[int]] = [[] for _ in active]
        running = torch.ones(len(active), dtype=torch.bool)
        for _ in range(max_action_tokens):
            nxt = _sample(cur_logits, temperature, generator)  # (b,)
            for r in running.nonzero()[:, 0].tolist():
                toks[r].append(int(nxt[r]))
            new_logits, new_h = model.step(nxt, cur_h)
            keep = running[:, None]
            cur_logits = torch.where(keep, new_logits, cur_logits)
            cur_h = torch.where(keep[None], new_h, cur_h)
            running = running & (nxt != semi) & (nxt != eos)
            if not running.any():
                break
        still = []
        for r, e in enumerate(active):
            ep, env = episodes[e], envs[e]
            ep.tokens += len(toks[r])
            ep.actions += 1
            if toks[r] and toks[r][-1] == eos:
                ep.end = "eos"
                ep.rejections["eos_before_submit"] += 1
                continue
            if not toks[r] or toks[r][-1] != semi:
                env.rejections["too_long"] += 1
                res = None
            else:
                res = env.step_tokens([VOCAB[t] for t in toks[r]])
            if res is not None and res.accepted:
                # the MDP's state advances only on an accepted action; a rejected one is dropped from the context
                logits[e], h[:, e] = cur_logits[r], cur_h[:, r]
                prefix_len[e] += len(toks[r])
                if res.done:
                    ep.statement, ep.end = res.statement, "submitted"
                    continue
            if ep.actions >= max_actions:
                ep.end = "max_actions"
            elif prefix_len[e] >= max_tokens:
                ep.end = "context"
            else:
                still.append(e)
        active = still
    for ep, env in zip(episodes, envs, strict=True):
        ep.rejections.update(env.rejections)
        ep.accepted = env.accepted
    return episodes


@dataclass(frozen=True)
class Conjecture:
    """A parsed one-shot statement.

    Attributes:
        actions: its INTRO and HYP actions, in order.
        goal_tokens: the tokens of U.
    """

    actions: tuple[Action, ...]
    goal_tokens: tuple[str, ...]


def parse_conjecture(tokens: Sequence[str]) -> Conjecture:
    """Parse ``INTRO/HYP ... GOAL U ;`` (without ``<bos>``/``<eos>``).

    Raises:
        MalformedAction: with reason ``bad_goal``, ``no_goal`` or the reason of a malformed INTRO/HYP.
    """
    parts: list[list[str]] = [[]]
    for t in tokens:
        parts[-1].append(t)
        if t == ";":
            parts.append([])
    if parts[-1]:
        raise MalformedAction("unterminated", "the statement does not end with ';'")
    parts = parts[:-1]
    if not parts or parts[-1][0] != "GOAL":
        raise MalformedAction("no_goal", "a conjecture ends with GOAL U ;")
    actions = []
    for p in parts[:-1]:
        a = parse_action(p)
        if a.kind not in ("intro", "hyp"):
            raise MalformedAction("bad_binder", f"a conjecture's binders are INTRO or HYP, got {p[0]}")
        actions.append(a)
    goal = parts[-1][1:-1]
    try:
        parse_fact(goal)
    except ParseError as err:
        raise MalformedAction("bad_goal", str(err)) from None
    return Conjecture(tuple(actions), tuple(goal))


@torch.no_grad()
def conjecture(
    model: AgentLM, n: int, *, max_tokens: int = 200, temperature: float = 1.0, generator: torch.Generator
) -> list[tuple[list[str], int]]:
    """Sample ``n`` one-shot statements; returns (tokens without ``<eos>``, tokens sampled) per sample."""
    logits, h = model.step(torch.full((n,), TOKEN_ID[BOS]), None)
    out: list[list[int]] = [[] for _ in range(n)]
    running = torch.ones(n, dtype=torch.bool)
    for _ in range(max_tokens):
        nxt = _sample(logits, temperature, generator)
        for r in running.nonzero()[:, 0].tolist():
            out[r].append(int(nxt[r]))
        running = running & (nxt != TOKEN_ID[EOS])
        if not running.any():
            break
        logits, h = model.step(nxt, h)
    return [([VOCAB[t] for t in o if t != TOKEN_ID[EOS]], len(o)) for o in out]
