"""The translator backends: the small model (training, cached decoding), prompts, and the OpenAI-compatible HTTP
client against an in-process server that serves the small model."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import torch

from iclr26.common.tinylm import TinyLM, TinyLMConfig
from iclr26.dna.translators import (
    HTTPTranslator,
    PromptBook,
    Request,
    TinyTranslator,
    TranslatorError,
    adamw_step,
    decode,
    parse_user_message,
    serve_translator,
    train_tiny,
    user_message,
)

PAIRS = [
    (Request("a lies on l", "clause", True), "onLine a l"),
    (Request("b lies on m", "clause", False), "onLine b m"),
    (Request("a, b be points", "binders", True), "(a b : Point)"),
]


@pytest.fixture(scope="module")
def tiny():
    state = train_tiny(PAIRS, steps=2, batch_size=2, lr=1e-3, d_model=16, n_layers=1, n_heads=2,
                       generator=torch.Generator().manual_seed(0))  # fmt: skip
    return TinyTranslator(state, max_new_tokens={"clause": 5, "binders": 5, "statement": 5}, seed=3)


def _greedy_reference(model, ids, max_new, eos):
    x = torch.tensor([ids])
    out = []
    for _ in range(max_new):
        t = int(model(x).logits[0, -1].argmax())
        out.append(t)
        if t == eos:
            break
        x = torch.cat([x, torch.tensor([[t]])], dim=1)
    return out


def test_cached_left_padded_decoding_equals_the_models_own_forward():
    torch.manual_seed(0)
    model = TinyLM(TinyLMConfig(vocab_size=23, context_len=40, d_model=16, n_layers=2, n_heads=2, d_ff=32)).eval()
    with torch.no_grad():  # larger weights than the init, so the greedy continuation varies
        for p in model.parameters():
            p.mul_(8.0)
    src = [[3, 4, 5, 6, 7, 8], [9, 10], [11, 12, 13]]
    got = decode(model, src, max_new=10, eos=22)
    want = [_greedy_reference(model, s, 10, 22) for s in src]
    assert got == want
    assert len({tuple(r) for r in want}) > 1 and any(len(set(r)) > 1 for r in want)


def test_adamw_step_matches_the_update_rule():
    # t = 1: m̂ = g, v̂ = g², so θ ← θ(1 − ηλ) − η g / (|g| + ε)
    p = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
    p.grad = torch.tensor([0.5, -4.0])
    moments = [(torch.zeros(2), torch.zeros(2))]
    adamw_step([p], moments, 1, lr=0.1, weight_decay=0.01)
    want = torch.tensor([1.0, -2.0]) * (1 - 0.001) - 0.1 * torch.tensor([1.0, -1.0])
    assert torch.allclose(p.detach(), want, atol=1e-6, rtol=0), (p, want)


def test_training_lowers_the_loss_on_a_tiny_corpus():
    state = train_tiny(PAIRS, steps=60, batch_size=4, lr=1e-2, d_model=16, n_layers=1, n_heads=2,
                       generator=torch.Generator().manual_seed(1))  # fmt: skip
    assert sum(state.losses[-5:]) / 5 < 0.5 * sum(state.losses[:5]) / 5
    t = TinyTranslator(state)
    assert t.translate([PAIRS[0][0]])[0].text == "onLine a l"


def test_user_message_round_trips():
    req = Request("a lies on l", "clause", True, feedback="type error: x", previous="onLine l a", sample=2)
    assert parse_user_message(user_message(req), sample=2) == req
    with pytest.raises(ValueError, match="not a translation request"):
        parse_user_message("hello")


def test_prompt_book_shows_library_docs_only_when_abstractions_are_allowed():
    book = PromptBook(["segment a:Point b:Point l:Line -- ..."], {("clause", True): [("x lies on l", "onLine x l")]})
    with_lib = book.messages(Request("a lies on l", "clause", True))
    without = book.messages(Request("a lies on l", "clause", False))
    assert "segment a:Point" in with_lib[0]["content"] and "segment" not in without[0]["content"]
    assert [m["role"] for m in with_lib] == ["system", "user", "assistant", "user"] and len(without) == 2


def test_http_backend_against_an_in_process_server_serving_the_small_model(tiny):
    reqs = [Request("a lies on l", "clause", True), Request("a, b be points", "binders", False),
            Request("a lies on l", "clause", True, feedback="type error", previous="l", sample=1)]  # fmt: skip
    direct = tiny.translate(reqs[:2]) + tiny.translate(reqs[2:])
    with serve_translator(tiny) as server:
        client = HTTPTranslator(server.url, timeout=10)
        got = client.translate(reqs)
    assert [r.text for r in got] == [r.text for r in direct]
    assert [(r.prompt_tokens, r.completion_tokens) for r in got] == [(r.prompt_tokens, r.completion_tokens)
                                                                     for r in direct]  # fmt: skip


def test_http_backend_reports_a_server_that_is_down():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # free port, nothing listens after the with-block
    client = HTTPTranslator(f"http://127.0.0.1:{port}/v1", timeout=2)
    with pytest.raises(TranslatorError, match=r"cannot reach http://127\.0\.0\.1:\d+/v1/chat/completions"):
        client.translate([Request("a lies on l", "clause", True)])


class _Fixed(BaseHTTPRequestHandler):
    body = b"{not json"
    delay = 0.0
    status = 200

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        time.sleep(self.delay)
        try:
            self.send_response(self.status)
            self.send_header("Content-Length", str(len(self.body)))
            self.end_headers()
            self.wfile.write(self.body)
        except BrokenPipeError:  # the client gave up (the timeout case)
            pass


def _serve(handler):
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


@pytest.mark.parametrize(
    ("attrs", "timeout", "match"),
    [
        ({"body": b"{not json"}, 5, "malformed JSON from"),
        ({"body": json.dumps({"choices": []}).encode()}, 5, r"has no choices\[0\]\.message\.content"),
        ({"body": b'{"error": "overloaded"}', "status": 503}, 5, "answered HTTP 503: .*overloaded"),
        ({"body": b"{}", "delay": 0.8}, 0.3, r"no reply from .* within timeout=0\.3 s"),
    ],
)
def test_http_backend_errors_are_clear(attrs, timeout, match):
    server, url = _serve(type("H", (_Fixed,), attrs))
    try:
        with pytest.raises(TranslatorError, match=match):
            HTTPTranslator(url, timeout=timeout).translate([Request("a lies on l", "clause", True)])
    finally:
        server.shutdown()
        server.server_close()


def test_server_answers_400_to_a_request_it_cannot_read(tiny):
    import urllib.error
    import urllib.request

    with serve_translator(tiny) as server:
        req = urllib.request.Request(server.url + "/chat/completions", data=b'{"messages": []}', method="POST")
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=5)
    assert err.value.code == 400 and b"bad request" in err.value.read()


def test_http_translator_checks_its_arguments():
    with pytest.raises(ValueError, match="base_url must start with http"):
        HTTPTranslator("localhost:8000")
    with pytest.raises(ValueError, match="timeout must be > 0"):
        HTTPTranslator("http://x", timeout=0)


@pytest.mark.slow  # importing transformers alone takes ~10 s on the shared machine
def test_pretrained_backend_counts_tokens_and_keeps_one_line(tmp_path):
    from dna_doubles import tiny_chat_lm

    from iclr26.dna.translators import PretrainedTranslator

    lm = tiny_chat_lm(tmp_path / "lm")
    book = PromptBook(["segment a:Point b:Point l:Line -- a and b are two distinct points of l"],
                      {("clause", True): [("x lies on m", "onLine x m")]})  # fmt: skip
    t = PretrainedTranslator(lm, book, max_new_tokens={"clause": 6, "binders": 6})
    reqs = [Request("a lies on l", "clause", True), Request("a, b be points", "binders", False),
            Request("a lies on l", "clause", True, sample=1)]  # fmt: skip
    got = t.translate(reqs)
    prompts = lm.encode_prompts([book.messages(r) for r in reqs])
    assert [r.prompt_tokens for r in got] == [len(p) for p in prompts]
    assert all(1 <= r.completion_tokens <= 6 and "\n" not in r.text for r in got)
    assert t.translate(reqs[:1])[0] == got[0]  # greedy replies do not depend on the batch
