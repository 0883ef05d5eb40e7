"""The 19 papers of the ICLR 2026 list, in list order, and where their reproductions live.

A paper is *implemented* when ``iclr26/<module>/experiment.py`` exists and defines ``EXPERIMENT``
(an :class:`iclr26.common.experiment.Experiment`); the catalog finds it without importing it, so that one paper's
optional dependency never breaks ``iclr26 list`` or another paper.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path

from iclr26.common.experiment import Experiment


@dataclass(frozen=True)
class Paper:
    """One entry of the paper list.

    Attributes:
        number: position in ``abstracts.md`` (1-19); 0 for the package's own built-in check.
        module: ``iclr26.<module>``.
        name: short name.
        title: the paper's title.
        claim: the one headline claim the reproduction checks.
        extra: the pip extra holding the paper's heavy dependency (``pip install 'iclr26[extra]'``), if any.
    """

    number: int
    module: str
    name: str
    title: str
    claim: str
    extra: str | None = None


PAPERS: tuple[Paper, ...] = (
    Paper(
        1,
        "lamir",
        "LAMIR",
        "Look-ahead Reasoning with a Learned Model in Imperfect Information Games",
        "With enough capacity the learned abstraction recovers the exact game; with limited capacity, look-ahead "
        "in it still improves the pre-trained agent.",
        extra="games",
    ),
    Paper(
        2,
        "rgvfm",
        "RG-VFM",
        "Riemannian Gaussian Variational Flow Matching",
        "Endpoint prediction (RG-VFM) captures manifold structure better than velocity-based Riemannian FM and "
        "Euclidean baselines: higher S² checkerboard coverage than RFM and than the better of CFM/VFM "
        "(paper: 84.21 vs 66.83 RFM, 79.08 VFM).",
        extra="geometry",
    ),
    Paper(
        3,
        "hicra",
        "HICRA",
        "Emergent Hierarchical Reasoning in LLMs through Reinforcement Learning",
        "Concentrating credit on planning tokens (HICRA) outperforms GRPO.",
    ),
    Paper(
        4,
        "dexploration",
        "DExploration",
        "Let's Explore Step by Step: Generating Provable Formal Statements with Deductive Exploration",
        "Step-by-step deductive exploration raises the success rate of problem synthesis (40.70% -> 54.52%) at "
        "lower token cost (verdict: more distinct valid and more distinct non-trivial statements per 1,000 tokens "
        "than conjecture-then-prove at equal tokens, paired over seeds).",
    ),
    Paper(
        5,
        "zoprox",
        "ZO proximal sampler",
        "Alternating Diffusion for Proximal Sampling with Zeroth Order Queries",
        "On the 5-D Gaussian-Lasso mixture the zeroth-order proximal sampler reaches the target's KL level in far "
        "fewer iterations than the rejection-based proximal sampler (paper: ~100 vs ~950 thinned RGO iterations) "
        "and mixes faster with interacting particles than with independent chains.",
        extra="sampling",
    ),
    Paper(
        6,
        "dna",
        "DNA",
        "Divide and Abstract: Autoformalization via Decomposition and Abstraction Learning",
        "Learned abstractions plus decomposition improve autoformalization accuracy (40.8 -> 64.4).",
    ),
    Paper(
        7,
        "seesaw",
        "Seesaw",
        "Seesaw: Accelerating Training by Balancing Learning Rate and Batch Size Scheduling",
        "Seesaw (LR x 1/sqrt2, batch x 2 at each halving) matches cosine decay at equal tokens with markedly "
        "fewer serial steps (~36% less wall-clock in the paper).",
    ),
    Paper(
        8,
        "unisplat",
        "UniSplat",
        "UniSplat: Unified Spatio-Temporal Fusion via 3D Latent Scaffolds for Dynamic Driving Scene Reconstruction",
        "Spatio-temporal fusion in a 3D latent scaffold improves novel-view synthesis, also outside camera coverage.",
    ),
    Paper(
        9,
        "eog",
        "Explore-on-Graph",
        "Explore-on-Graph: Incentivizing Autonomous Exploration of LLMs on Knowledge Graphs with Path-refined "
        "Reward Modeling",
        "RL with answer and path rewards improves KG question answering over imitation of demonstration paths.",
    ),
    Paper(
        10,
        "page4d",
        "PAGE-4D",
        "PAGE-4D: Disentangled Pose and Geometry Estimation for 4D Perception",
        "A dynamics-aware mask and masked global attention improve pose and depth on dynamic scenes over VGGT.",
    ),
    Paper(
        11,
        "rlaf",
        "RLAF",
        "Learning from Algorithm Feedback: One-Shot SAT Solver Guidance with GNNs",
        "RLAF-trained GNN guidance lowers the base solver's mean cost (decisions) on held-out and larger instances "
        "(verdict: by at least 5% on every family and size and more than a one-line degree rule, while the same "
        "guidance shuffled over the variables does not; the paper's 'more than 2x in some cases' is reported, "
        "not required).",
        extra="sat",
    ),
    Paper(
        12,
        "uvu",
        "UVU",
        "Universal Value-Function Uncertainties",
        "UVU matches a deep ensemble's uncertainty quality (task-rejection AUC) in multi-task offline RL at a "
        "fraction of its compute, and its error approaches the ensemble variance as width grows.",
        extra="rl",
    ),
    Paper(
        13,
        "nextstep",
        "NextStep-1",
        "NextStep-1: Toward Autoregressive Image Generation with Continuous Tokens at Scale",
        "An autoregressive model with a flow-matching head on continuous image tokens generates images well.",
    ),
    Paper(
        14,
        "kern",
        "KERN",
        "Understanding the Mixture-of-Experts with Nadaraya-Watson Kernel",
        "The KERN router (ReLU + l2 normalisation) matches or beats Softmax routing at zero additional cost.",
    ),
    Paper(
        15,
        "biasfree",
        "BiasFreeBench",
        "BiasFreeBench: a Benchmark for Mitigating Bias in LLM Responses",
        "Response-level Bias-Free Score compares prompting- and training-based debiasing consistently.",
    ),
    Paper(
        16,
        "sthhol",
        "ST-HHOL",
        "Spatio-Temporal Hierarchical Hypergraph Online Learning for Crime Prediction",
        "Hierarchical hypergraph convolution with online learning beats offline baselines under concept drift.",
    ),
    Paper(
        17,
        "magref",
        "MAGREF",
        "MAGREF: Masked Guidance for Any-Reference Video Generation",
        "Masked guidance with subject disentanglement keeps multi-subject identity consistent.",
    ),
    Paper(
        18,
        "meom",
        "MEOM",
        "Many Eyes, One Mind: Temporal Multi-Perspective Distillation for SNNs",
        "MEOM distillation beats temporal-wise distillation at full length and at every truncated timestep.",
        extra="data",
    ),
    Paper(
        19,
        "guishift",
        "GUI-Shift",
        "GUI-Shift: K-step GUI Transition as Self-supervised RL for GUI Agents",
        "RL on the self-supervised K-step transition task improves GUI automation accuracy (up to +11.2%).",
    ),
)

SELFCHECK = Paper(
    0,
    "selfcheck",
    "self-check",
    "The package's built-in check (not a paper)",
    "A tiny transformer LM trained for a few steps beats the uniform-byte loss ln 256.",
)

_BY_MODULE = {p.module: p for p in (*PAPERS, SELFCHECK)}


class UnknownModule(KeyError):
    """The module name is not in the catalog."""

    def __str__(self) -> str:
        return self.args[0]


def paper(module: str) -> Paper:
    """The catalog entry of ``module``.

    Raises:
        UnknownModule: listing the known module names.
    """
    try:
        return _BY_MODULE[module]
    except KeyError:
        known = ", ".join(p.module for p in PAPERS)
        raise UnknownModule(f"unknown module {module!r}; known: {known} (and 'selfcheck', 'all')") from None


def is_implemented(module: str) -> bool:
    """Whether ``iclr26.<module>.experiment`` exists, found without importing it or its package (a package's
    ``__init__`` may import torch or a paper's optional dependency, which ``iclr26 list`` does not need)."""
    paper(module)
    try:
        package = importlib.util.find_spec(f"iclr26.{module}")
    except ModuleNotFoundError:
        return False
    folders = list(package.submodule_search_locations or []) if package is not None else []
    return any((Path(f) / "experiment.py").is_file() or (Path(f) / "experiment" / "__init__.py").is_file()
               for f in folders)  # fmt: skip


def implemented() -> list[Paper]:
    """The papers (in list order) whose reproduction is implemented."""
    return [p for p in PAPERS if is_implemented(p.module)]


class MissingExtra(ImportError):
    """The paper's optional dependency is not installed."""


def load_experiment(module: str) -> Experiment:
    """Import ``iclr26.<module>.experiment`` and return its ``EXPERIMENT``.

    Raises:
        UnknownModule: for a name outside the catalog.
        LookupError: if the paper is not implemented yet.
        MissingExtra: if its optional dependency is missing; the message gives the pip command.
    """
    entry = paper(module)
    if not is_implemented(module):
        raise LookupError(f"paper {entry.number} ({entry.name}, module {module!r}) is not implemented yet")
    try:
        mod = importlib.import_module(f"iclr26.{module}.experiment")
    except ModuleNotFoundError as err:
        if err.name and not err.name.startswith("iclr26") and entry.extra:
            raise MissingExtra(
                f"{module} needs the optional dependency {err.name!r}: pip install 'iclr26[{entry.extra}]'"
            ) from err
        raise
    experiment = getattr(mod, "EXPERIMENT", None)
    if not isinstance(experiment, Experiment):
        raise TypeError(f"iclr26.{module}.experiment must define EXPERIMENT = Experiment(config_cls=..., run=...)")
    return experiment
