"""DNA (ICLR 2026, OpenReview NjgaeXNit3): Divide and Abstract, autoformalization by decomposition and abstractions.

Phase I (:mod:`iclr26.dna.concepts`, :func:`learn_library`): concepts extracted from the informal corpus, their
dependency graph (:func:`build_cdg`) and a library of formal abstractions learned once. Phase II
(:func:`formalize`): decompose a statement into a clause tree, translate each clause with a :class:`Translator`,
compose, and refine with the symbolic :class:`Validator` (z3), which also decides equivalence to a gold
formalization. The target language is a small Euclid-style DSL (:mod:`iclr26.dna.dsl`, a lark grammar).
"""

from iclr26.dna.concepts import CDG, ConceptAnalysis, CycleError, Library, build_cdg, extract_concepts
from iclr26.dna.dsl import (
    Definition,
    DSLSyntaxError,
    Statement,
    expand,
    parse_definition,
    parse_formula,
    parse_statement,
    render,
    type_errors,
)
from iclr26.dna.pipeline import (
    ARMS,
    ClauseNode,
    ClauseTree,
    Formalization,
    compose,
    decompose,
    decompose_informal,
    formalize,
    learn_library,
)
from iclr26.dna.translators import (
    HTTPTranslator,
    PretrainedTranslator,
    PromptBook,
    Reply,
    Request,
    TinyTranslator,
    Translator,
    TranslatorError,
    serve_translator,
    train_tiny,
)
from iclr26.dna.validator import AXIOMS, Validation, Validator

__all__ = [
    "ARMS",
    "AXIOMS",
    "CDG",
    "ClauseNode",
    "ClauseTree",
    "ConceptAnalysis",
    "CycleError",
    "DSLSyntaxError",
    "Definition",
    "Formalization",
    "HTTPTranslator",
    "Library",
    "PretrainedTranslator",
    "PromptBook",
    "Reply",
    "Request",
    "Statement",
    "TinyTranslator",
    "Translator",
    "TranslatorError",
    "Validation",
    "Validator",
    "build_cdg",
    "compose",
    "decompose",
    "decompose_informal",
    "expand",
    "extract_concepts",
    "formalize",
    "learn_library",
    "parse_definition",
    "parse_formula",
    "parse_statement",
    "render",
    "serve_translator",
    "train_tiny",
    "type_errors",
]
