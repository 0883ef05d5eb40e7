"""Strategic Grams: mining them from correct solutions, and the planning-token mask they define.

Wang et al., "Emergent Hierarchical Reasoning in LLMs through Reinforcement Learning", ICLR 2026, arXiv 2509.03646,
§2 (Strategic Grams as the functional proxy for planning tokens). A Strategic Gram (SG) is an n-gram of 3–5 words
that steers the reasoning (deduction, branching, backtracking); the tokens of a solution that fall inside an SG
occurrence are its *planning tokens* ``S_i``, the rest are execution tokens.

Mining (:func:`mine_strategic_grams`), deterministic:

1. split every *correct* solution into words (lower-cased, whitespace-separated) and take the word n-grams,
   ``n ∈ [n_min, n_max]``, inside runs of alphabetic words (numbers and symbols are execution content and end a
   run);
2. per n-gram, its document frequency ``df(g)`` (share of solutions containing it) and within-solution frequency
   ``wf(g)`` (mean count in the solutions that contain it);
3. merge paraphrases into clusters: two grams join when one is contained in the other or their word sets have
   Jaccard similarity ``≥ merge_jaccard`` (single linkage); a cluster's document frequency is the share of solutions
   containing any member (the paper's "cluster document frequency");
4. keep the clusters with ``min_doc_frac ≤ df ≤ max_doc_frac`` and mean ``wf ≤ max_within`` (high
   cross-solution, low within-solution frequency), at most ``max_clusters`` of them by ``df``. A cluster in every
   solution (``df = 1``) is kept by default (``max_doc_frac = 1``): it meets the paper's two criteria.

The mask (:func:`planning_mask`): the decoded text of each token (its *piece*) is concatenated; every occurrence of
every kept gram is found with word-boundary matching (``\\bw1\\s+w2 ... wn\\b``, case-insensitive; whitespace
boundaries next to a symbol) and every token
whose characters overlap an occurrence is a planning token. Unlike a sliding window over whole tokens, this marks a
token that a gram covers only in part (a subword piece) and never marks a word that merely contains a gram word.

Deviations: the paper merges paraphrases by semantic clustering (embeddings); we have no sentence encoder offline,
so clusters are lexical (containment or word-set Jaccard). The paper's human validation of the mined grams is
replaced by the task's known planning phrases in the tests.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

__all__ = [
    "GramCluster",
    "StrategicGrams",
    "cluster_counts",
    "decoded_pieces",
    "mine_strategic_grams",
    "placebo_grams",
    "planning_mask",
    "planning_mask_batch",
    "token_coverage",
]

_ALPHA = re.compile(r"^[a-z']+$")


@dataclass(frozen=True)
class GramCluster:
    """A set of paraphrased grams counted as one strategic move.

    Attributes:
        name: the member with the highest document frequency (ties: the longer, then alphabetical).
        members: every gram of the cluster (space-joined words), sorted.
        doc_freq: share of the mined solutions containing at least one member.
        within_freq: mean count of the cluster's occurrences in the solutions that contain it.
    """

    name: str
    members: tuple[str, ...]
    doc_freq: float
    within_freq: float


@dataclass(frozen=True)
class StrategicGrams:
    """The mined Strategic Grams (or a placebo set built the same way).

    Attributes:
        clusters: the kept clusters, by decreasing document frequency.
        n_solutions: how many correct solutions they were mined from.
    """

    clusters: tuple[GramCluster, ...]
    n_solutions: int

    @property
    def grams(self) -> tuple[str, ...]:
        """Every member gram of every cluster, longest first (what the mask matches)."""
        members = {m for c in self.clusters for m in c.members}
        return tuple(sorted(members, key=lambda g: (-len(g.split()), g)))

    def __len__(self) -> int:
        return len(self.grams)


def _words(text: str) -> list[str]:
    return text.lower().split()


def _alpha_ngrams(words: Sequence[str], n_min: int, n_max: int) -> list[str]:
    """Word n-grams inside runs of alphabetic words (step 1)."""
    out, run = [], []
    for w in [*words, ""]:
        if w and _ALPHA.match(w):
            run.append(w)
            continue
        for n in range(n_min, n_max + 1):
            out.extend(" ".join(run[s : s + n]) for s in range(len(run) - n + 1))
        run = []
    return out


def _count_occurrences(words: Sequence[str], gram: str) -> int:
    g = gram.split()
    return sum(1 for s in range(len(words) - len(g) + 1) if list(words[s : s + len(g)]) == g)


def _related(a: str, b: str, merge_jaccard: float) -> bool:
    if f" {a} " in f" {b} " or f" {b} " in f" {a} ":
        return True
    # the paper's semantic merge of paraphrases, approximated by word-set Jaccard (no embedding model offline)
    sa, sb = set(a.split()), set(b.split())
    return len(sa & sb) / len(sa | sb) >= merge_jaccard


def mine_strategic_grams(
    solutions: Sequence[str],
    *,
    n_min: int = 3,
    n_max: int = 5,
    min_doc_frac: float = 0.05,
    max_within: float = 2.0,
    merge_jaccard: float = 0.5,
    max_clusters: int = 20,
    max_doc_frac: float = 1.0,
) -> StrategicGrams:
    """Mine Strategic Grams from correct solutions (module docstring, steps 1–4).

    Args:
        solutions: texts of *correct* solutions (completions only, no prompts).
        n_min: shortest gram in words (paper: 3).
        n_max: longest gram in words (paper: 5).
        min_doc_frac: smallest cluster document frequency kept, in (0, 1].
        max_within: largest mean within-solution count of a kept cluster (``≥ 1``).
        merge_jaccard: word-set Jaccard similarity at which two grams are paraphrases, in (0, 1].
        max_clusters: most clusters kept (by document frequency).
        max_doc_frac: largest cluster document frequency kept, in ``[min_doc_frac, 1]``. The default 1 keeps a
            cluster that occurs in every solution (e.g. a commit move such as "so the answer is"): the paper's
            filter asks for high cross-solution and low within-solution frequency, which such a cluster meets;
            a lower value drops the formulaic clusters every solution shares.

    Returns:
        :class:`StrategicGrams` (possibly empty when nothing passes the filters).

    Raises:
        ValueError: for an empty ``solutions``, a non-string solution, or a parameter out of range.
    """
    if isinstance(solutions, str) or len(solutions) == 0:
        raise ValueError("solutions must be a non-empty list of solution texts")
    if not all(isinstance(s, str) for s in solutions):
        raise ValueError("solutions must hold only str")
    if not 1 <= n_min <= n_max:
        raise ValueError(f"n_min and n_max must satisfy 1 <= n_min <= n_max, got {n_min}, {n_max}")
    if not 0.0 < min_doc_frac <= 1.0:
        raise ValueError(f"min_doc_frac must lie in (0, 1], got {min_doc_frac}")
    if not min_doc_frac <= max_doc_frac <= 1.0:
        raise ValueError(f"max_doc_frac must lie in [min_doc_frac={min_doc_frac}, 1], got {max_doc_frac}")
    if max_within < 1.0:
        raise ValueError(f"max_within must be >= 1, got {max_within}")
    if not 0.0 < merge_jaccard <= 1.0:
        raise ValueError(f"merge_jaccard must lie in (0, 1], got {merge_jaccard}")
    if max_clusters < 1:
        raise ValueError(f"max_clusters must be >= 1, got {max_clusters}")
    docs = [_words(s) for s in solutions]
    n = len(docs)
    # Step 2: document frequency per gram (each solution counted once)
    df = Counter(g for words in docs for g in set(_alpha_ngrams(words, n_min, n_max)))
    # only grams seen in at least min_doc_frac of the solutions can be in a kept cluster: prune before clustering
    # a gram seen in one solution only cannot make a cluster frequent across solutions unless there is only one
    candidates = sorted(g for g, c in df.items() if c >= min(2, n))
    # Step 3: single-linkage clusters of paraphrases (union-find over related pairs)
    parent = list(range(len(candidates)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(candidates)):
        for j in range(i + 1, len(candidates)):
            if _related(candidates[i], candidates[j], merge_jaccard):
                parent[find(i)] = find(j)
    groups: dict[int, list[str]] = {}
    for i, g in enumerate(candidates):
        groups.setdefault(find(i), []).append(g)
    clusters = []
    for members in groups.values():
        containing = [words for words in docs if any(_count_occurrences(words, m) for m in members)]
        cluster_df = len(containing) / n
        if not containing:
            continue
        # occurrences of the cluster in a solution: positions where some member starts, overlaps counted once
        within = float(np.mean([_cluster_occurrences(words, members) for words in containing]))
        # Step 4: high cross-solution and low within-solution frequency (and at most max_doc_frac)
        if min_doc_frac <= cluster_df <= max_doc_frac and within <= max_within:
            name = max(members, key=lambda m: (df[m], len(m.split()), [-ord(c) for c in m]))
            clusters.append(GramCluster(name, tuple(sorted(members)), cluster_df, within))
    clusters.sort(key=lambda c: (-c.doc_freq, c.name))
    return StrategicGrams(tuple(clusters[:max_clusters]), n)


def _cluster_occurrences(words: Sequence[str], members: Sequence[str]) -> int:
    """Non-overlapping occurrences of a cluster: maximal runs of word positions covered by its members."""
    covered = np.zeros(len(words), dtype=bool)
    for m in members:
        g = m.split()
        for s in range(len(words) - len(g) + 1):
            if list(words[s : s + len(g)]) == g:
                covered[s : s + len(g)] = True
    return int(np.sum(covered & ~np.concatenate(([False], covered[:-1]))))


def _pattern(grams: Sequence[str]) -> re.Pattern[str] | None:
    """One regex matching any gram at word boundaries: ``\\b`` next to a word character, whitespace (or the text's
    end) next to a symbol, so that ``"= 10 ."`` matches as well as ``"try another way"`` before a full stop."""
    if not grams:
        return None
    alternatives = []
    # longest first: at one start position the longer of two nested grams is the one matched
    for g in sorted(grams, key=lambda g: -len(g.split())):
        words = g.split()
        left = r"\b" if re.match(r"\w", words[0]) else r"(?<!\S)"
        right = r"\b" if re.search(r"\w$", words[-1]) else r"(?!\S)"
        alternatives.append(left + r"\s+".join(re.escape(w) for w in words) + right)
    return re.compile("|".join(f"(?:{a})" for a in alternatives), re.IGNORECASE)


def planning_mask(pieces: Sequence[str], grams: StrategicGrams | Sequence[str]) -> list[bool]:
    """Which tokens of one sequence lie in a Strategic Gram occurrence (word-boundary matching on decoded pieces).

    Args:
        pieces: the decoded text of each token, in order (e.g. :meth:`Vocab.piece_list` or
            :func:`decoded_pieces`); their concatenation is the sequence's text.
        grams: :class:`StrategicGrams` or plain gram strings (words separated by spaces).

    Returns:
        One bool per token: true for a planning token (a token any of whose characters a gram occurrence covers).

    Raises:
        TypeError: if ``pieces`` is a single string or holds a non-string.
        ValueError: if a gram is empty.
    """
    if isinstance(pieces, str) or not all(isinstance(p, str) for p in pieces):
        raise TypeError("pieces must be a list of str, one decoded piece per token")
    gram_list = grams.grams if isinstance(grams, StrategicGrams) else tuple(grams)
    if any(not g.split() for g in gram_list):
        raise ValueError("grams: every gram must hold at least one word")
    pattern = _pattern(gram_list)
    mask = [False] * len(pieces)
    if pattern is None:
        return mask
    text = "".join(pieces)
    starts = np.cumsum([0] + [len(p) for p in pieces])  # (T + 1,) character offset of each token
    covered = np.zeros(len(text) + 1, dtype=bool)
    # overlapping occurrences: restart the search one character after each match start
    pos = 0
    while (m := pattern.search(text, pos)) is not None:
        covered[m.start() : m.end()] = True
        pos = m.start() + 1
    for t in range(len(pieces)):
        # a token is a planning token (t ∈ S_i) if any of its characters lies inside a Strategic-Gram match
        mask[t] = bool(covered[starts[t] : starts[t + 1]].any())
    return mask


def token_coverage(pieces: Sequence[Sequence[str]], grams: StrategicGrams | Sequence[str]) -> float:
    """Share of all tokens of ``pieces`` (one piece list per sequence) that :func:`planning_mask` marks; 0.0 for no
    tokens. The placebo is matched to the mined grams on this number."""
    total = sum(len(p) for p in pieces)
    return sum(sum(planning_mask(p, grams)) for p in pieces) / max(1, total)


def planning_mask_batch(
    pieces: Sequence[Sequence[str]], grams: StrategicGrams | Sequence[str], *, width: int | None = None
) -> Tensor:
    """:func:`planning_mask` for a batch, as a ``(B, T)`` bool tensor (rows padded with false).

    Args:
        pieces: ``B`` lists of decoded pieces (completion tokens only, in the positions the advantages use).
        grams: as :func:`planning_mask`.
        width: ``T`` (default: the longest row).

    Returns:
        ``(B, T)`` bool; no gradient.

    Raises:
        ValueError: if a row is longer than ``width``.
    """
    rows = [planning_mask(p, grams) for p in pieces]
    width = max((len(r) for r in rows), default=0) if width is None else width
    out = torch.zeros(len(rows), width, dtype=torch.bool)
    for i, r in enumerate(rows):
        if len(r) > width:
            raise ValueError(f"pieces row {i} has {len(r)} tokens, more than width={width}")
        out[i, : len(r)] = torch.tensor(r, dtype=torch.bool)
    return out


def decoded_pieces(decode: Callable[[list[int]], str], ids: Sequence[int]) -> list[str]:
    """The decoded text of each token of ``ids`` for any tokenizer, by incremental decoding.

    ``piece_t = decode(ids[:t+1])[len(decode(ids[:t])):]`` — exact for byte-level BPE on text whose tokens end on
    character boundaries (a token in the middle of a multi-byte character gets the empty piece; the character goes to
    the token that completes it). For a Hugging Face tokenizer pass ``tokenizer.decode``.

    Args:
        decode: ids -> text.
        ids: token ids.

    Returns:
        One piece per token; their concatenation is ``decode(ids)`` when decoding is prefix-stable.
    """
    pieces, previous = [], ""
    for t in range(len(ids)):
        text = decode(list(ids[: t + 1]))
        pieces.append(text[len(previous) :] if text.startswith(previous) else text)
        previous = text
    return pieces


def cluster_counts(texts: Sequence[str], grams: StrategicGrams) -> dict[str, int]:
    """Occurrences of each cluster in ``texts`` (overlapping members counted once): the distribution whose Shannon
    entropy is the paper's semantic entropy (:func:`iclr26.hicra.diagnostics.semantic_entropy`).

    Args:
        texts: generated solutions.
        grams: the mined grams.

    Returns:
        Cluster name -> count (every cluster present, 0 if unseen).
    """
    counts = dict.fromkeys((c.name for c in grams.clusters), 0)
    for text in texts:
        words = _words(text)
        for c in grams.clusters:
            counts[c.name] += _cluster_occurrences(words, c.members)
    return counts


def placebo_grams(
    solutions: Sequence[str],
    grams: StrategicGrams,
    *,
    tokenize: Callable[[str], list[str]],
    seed: int,
    n_draws: int = 64,
) -> StrategicGrams:
    """The placebo control: random n-grams, as many as the mined grams and covering about as many tokens.

    Each draw picks, for every mined gram, a random word n-gram of the same length from a random position of a random
    solution that overlaps no mined-gram occurrence (any words: numbers and symbols included); of ``n_draws`` such
    sets, the one whose planning-mask token coverage on ``solutions`` is closest to the mined grams' is kept. The
    placebo's grams are single-member clusters.

    Args:
        solutions: the solutions the grams were mined from (the coverage reference).
        grams: the mined grams.
        tokenize: text -> decoded pieces (to measure token coverage).
        seed: seed of the draws.
        n_draws: candidate sets drawn.

    Returns:
        :class:`StrategicGrams` with ``len(grams)`` grams (fewer only if the solutions hold too few distinct
        n-grams outside the mined ones).

    Raises:
        ValueError: if ``grams`` is empty or ``n_draws < 1``.
    """
    if len(grams) == 0:
        raise ValueError("grams is empty: there is nothing to match a placebo to")
    if n_draws < 1:
        raise ValueError(f"n_draws must be >= 1, got {n_draws}")
    rng = np.random.default_rng(seed)
    docs = [_words(s) for s in solutions]
    pieces = [tokenize(s) for s in solutions]
    target = _coverage(pieces, grams.grams)
    blocked = [planning_mask([w + " " for w in words], grams) for words in docs]  # word-level mined mask
    lengths = [len(g.split()) for g in grams.grams]
    best: tuple[float, tuple[str, ...]] | None = None
    for _ in range(n_draws):
        chosen: list[str] = []
        for n in lengths:
            for _attempt in range(200):
                d = int(rng.integers(len(docs)))
                if len(docs[d]) < n:
                    continue
                s = int(rng.integers(len(docs[d]) - n + 1))
                gram = " ".join(docs[d][s : s + n])
                if not any(blocked[d][s : s + n]) and gram not in chosen:
                    chosen.append(gram)
                    break
        # placebo (random n-grams) arm: keep the draw whose token coverage matches the mined grams', equal credit budget
        gap = abs(_coverage(pieces, chosen) - target)
        if best is None or gap < best[0]:
            best = (gap, tuple(chosen))
    assert best is not None
    clusters = tuple(GramCluster(g, (g,), _doc_freq(docs, g), 1.0) for g in best[1])
    return StrategicGrams(clusters, len(docs))


def _coverage(pieces: Sequence[Sequence[str]], grams: Sequence[str]) -> float:
    masks = [planning_mask(p, grams) for p in pieces]
    return sum(map(sum, masks)) / max(1, sum(map(len, masks)))


def _doc_freq(docs: Sequence[Sequence[str]], gram: str) -> float:
    return sum(1 for words in docs if _count_occurrences(words, gram)) / max(1, len(docs))


def describe(grams: StrategicGrams) -> list[dict[str, Any]]:
    """The clusters as plain data for a record."""
    return [
        {"name": c.name, "members": list(c.members), "doc_freq": c.doc_freq, "within_freq": c.within_freq}
        for c in grams.clusters
    ]
