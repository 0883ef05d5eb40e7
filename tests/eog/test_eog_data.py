"""The RoG-style loader on small files in the official schema, the prompt layout and the SFT traces."""

from __future__ import annotations

import ast
import json

import numpy as np
import pytest

from iclr26.eog.data import KGQAExample, compact_prompt, load_rog_jsonl, make_trace, official_prompt
from iclr26.eog.rewards import F1_PLUS_PATH, eog_reward, extract_triples

LINE = {
    "id": "WebQTrn-1",
    "question": "what currency does the country whose capital is Paris use?",
    "answer": ["Euro"],
    "q_entity": ["Paris"],
    "a_entity": ["Euro"],
    "graph": [["Paris", "capital_of", "France"], ["France", "currency", "Euro"], ["France", "borders", "Spain"]],
    "reasoning_path": [[["Paris", "capital_of", "France"], ["France", "currency", "Euro"]]],
}


def write(tmp_path, lines, name="data.jsonl"):
    path = tmp_path / name
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return path


def test_loader_reads_the_official_schema(tmp_path):
    flat = dict(LINE, id="q2", answer="Euro", q_entity="Paris", reasoning_path=LINE["reasoning_path"][0])
    del flat["a_entity"]
    path = write(tmp_path, [LINE, "", flat])
    a, b = load_rog_jsonl(path)
    assert a.qid == "WebQTrn-1" and a.answers == ("Euro",) and a.q_entity == ("Paris",)
    assert a.graph[2] == ("France", "borders", "Spain")
    assert a.reasoning_path == ((("Paris", "capital_of", "France"), ("France", "currency", "Euro")),)
    assert a.composition == ("capital_of", "currency")
    # a string answer / topic entity becomes a 1-tuple; a flat path is one path; a_entity defaults to the answers
    assert b.answers == ("Euro",) and b.q_entity == ("Paris",) and b.a_entity == ("Euro",)
    assert b.reasoning_path == a.reasoning_path


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"question": "q", "answer": ["a"]', r"line 2: not valid JSON"),
        ({k: v for k, v in LINE.items() if k != "graph"}, r"line 2: missing field 'graph'"),
        (dict(LINE, graph=[["a", "r"]]), r"line 2: field 'graph' holds \"\['a', 'r'\]\""),
        (dict(LINE, answer=[]), r"line 2: field 'answer' is empty"),
        (dict(LINE, question=""), r"line 2: field 'question'"),
        (dict(LINE, q_entity=[1]), r"line 2: field 'q_entity' must be a list of strings"),
        (dict(LINE, reasoning_path=[[["a", "r", "b", "c"]]]), r"line 2: field 'reasoning_path'"),
        (LINE, r"line 2: duplicate id 'WebQTrn-1'"),
        ("[1, 2]", r"line 2: expected a JSON object"),
    ],
)
def test_malformed_lines_name_the_line_and_field(tmp_path, line, message):
    path = write(tmp_path, [LINE, line])
    with pytest.raises(ValueError, match=message):
        load_rog_jsonl(path)


def test_loader_file_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_rog_jsonl(tmp_path / "missing.jsonl")
    with pytest.raises(ValueError, match="no examples"):
        load_rog_jsonl(write(tmp_path, ["", "  "]))
    no_path = dict(LINE)
    del no_path["reasoning_path"]
    assert load_rog_jsonl(write(tmp_path, [no_path]))[0].reasoning_path == ()
    with pytest.raises(ValueError, match="line 1: field 'reasoning_path' is missing or empty"):
        load_rog_jsonl(write(tmp_path, [no_path]), require_path=True)


def example(**changes) -> KGQAExample:
    base = KGQAExample(
        qid="q",
        question="which currency?",
        answers=("Euro",),
        q_entity=("Paris",),
        a_entity=("Euro",),
        graph=tuple(tuple(t) for t in LINE["graph"]),
        reasoning_path=(tuple(tuple(t) for t in LINE["reasoning_path"][0]),),
        composition=("capital_of", "currency"),
    )
    return KGQAExample(**{**base.__dict__, **changes})


def test_official_prompt_layout():
    system, user = official_prompt(example())
    assert system["role"] == "system" and "<think>" in system["content"] and "<answer>" in system["content"]
    text = user["content"]
    assert text.index("Question: which currency?") < text.index("Knowledge Graph:") < text.index("Starting Entity:")
    # the graph is Python's str of the list of [s, r, o] lists, as the official preprocessing writes it
    graph_line = text.split("Knowledge Graph:\n")[1].split("\n")[0]
    assert ast.literal_eval(graph_line) == LINE["graph"]
    assert text.rstrip().endswith("Starting Entity: Paris")
    several = official_prompt(example(q_entity=("Paris", "Rome")))[1]["content"]
    assert "Starting Entity: 1. Paris\n2. Rome" in several
    assert "No graph information" in official_prompt(example(graph=()))[1]["content"]
    assert compact_prompt(example()).startswith("question : which currency? graph : Paris capital_of France ;")


def test_traces_score_as_the_rewards_read_them():
    full = make_trace(example())
    assert full == (
        '<think> ( Paris , capital_of , France ) ( France , currency , Euro ) </think> <answer> [ " Euro " ] </answer>'
    )
    r = eog_reward(full, ["Euro"], [[list(t) for t in LINE["reasoning_path"][0]]], weights=F1_PLUS_PATH)
    assert (r.f1, r.path, r.valid) == (1.0, 1.0, True)
    # loose steps are invisible to the path reward's pattern; the answer is unchanged
    loose = make_trace(example(), np.random.default_rng(0), cite_prob=0.0)
    assert "France currency Euro ." in loose and extract_triples(loose) == []
    # a detour cites an off-path triple of the starting entity first: none exists here, so only gold is cited
    detour = make_trace(
        example(graph=(*example().graph, ("Paris", "twin", "Rome"))), np.random.default_rng(0), detour_prob=1.0
    )
    assert extract_triples(detour)[0] == ("Paris", "twin", "Rome")
    with pytest.raises(ValueError, match="rng is needed"):
        make_trace(example(), cite_prob=0.5)
    with pytest.raises(ValueError, match="no reasoning_path"):
        make_trace(example(reasoning_path=()))
