"""The model behind DNA: a :class:`Translator` interface and its three backends.

Divide and Abstract (DNA), ICLR 2026, OpenReview NjgaeXNit3. The framework is model-independent: every step that
the paper gives to an LLM (statement or clause translation, repair with validator feedback) is one call of
:meth:`Translator.translate` on a :class:`Request`; one request is one model call, and the reply counts the tokens
read and written (the reproduction's counted costs). Backends:

- :class:`TinyTranslator`: a small decoder-only transformer (:class:`~iclr26.common.tinylm.TinyLM`) trained here from
  scratch on a parallel corpus (:func:`train_tiny`), word-level, the request's kind and mode as prefix tokens. It
  cannot read feedback text; a repair request is a new sample (``sample > 0``: temperature sampling).
- :class:`PretrainedTranslator`: SmolLM2-135M-Instruct few-shot through :mod:`iclr26.common.pretrained` (chat
  prompt: the DSL's documentation, the library's documentation when abstractions are allowed, few-shot examples,
  then the request with the previous attempt and the validator's messages).
- :class:`HTTPTranslator`: an OpenAI-compatible ``/v1/chat/completions`` endpoint (a served model), standard library
  only (``urllib``); :func:`serve_translator` serves any translator on that protocol (``http.server``), which is how
  the tests run the client against the small model.

Glossary: ``B`` requests in a batch, ``T`` tokens, ``V`` vocabulary.
"""

from __future__ import annotations

import json
import math
import re
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

import torch

__all__ = [
    "HTTPTranslator",
    "PretrainedTranslator",
    "PromptBook",
    "Reply",
    "Request",
    "TinyTranslator",
    "Translator",
    "TranslatorError",
    "TranslatorServer",
    "serve_translator",
    "train_tiny",
]

KINDS = ("statement", "clause", "binders")


class TranslatorError(RuntimeError):
    """A backend could not produce a reply (server down, timeout, malformed reply); the message says which."""


@dataclass(frozen=True)
class Request:
    """One model call.

    Attributes:
        text: the informal input (a statement, a clause, or a quantifier clause).
        kind: ``"statement"``, ``"clause"`` or ``"binders"``.
        library: abstractions of the library may be used (their documentation is in the prompt).
        feedback: the validator's messages on the previous attempt (refinement), or ``""``.
        previous: the previous attempt, or ``""``.
        sample: 0 for the greedy reply; ``k > 0`` for the ``k``-th sampled one.
    """

    text: str
    kind: str
    library: bool
    feedback: str = ""
    previous: str = ""
    sample: int = 0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if self.sample < 0:
            raise ValueError(f"sample must be >= 0, got {self.sample}")


@dataclass(frozen=True)
class Reply:
    """A model's reply: the formal text and the tokens the call read and wrote."""

    text: str
    prompt_tokens: int
    completion_tokens: int


class Translator(Protocol):
    """Anything that turns requests into replies, one model call per request, in order."""

    def translate(self, requests: Sequence[Request]) -> list[Reply]:
        """One reply per request."""
        ...


# ------------------------------------------------------------------------------------------------ prompts
DSL_DOC = (
    "EuclidDSL. Sorts: Point, Line, Circle. Predicates: onLine p l; between a b c (b strictly between a and c); "
    "onCircle p k; inside p k; centre o k; sameSide a b l. Equality a = b, a != b. Connectives: ~ (not), /\\ (and), "
    "\\/ (or). Statement: forall (a b : Point) (l : Line), premises -> conclusion. Binders: (a b : Point) (l : Line)."
)
_KIND_WORDS = {"statement": "statement", "clause": "clause", "binders": "variable declaration"}
_USER = re.compile(r"^Translate this (?P<kind>statement|clause|variable declaration) into EuclidDSL"
                   r"(?P<lib> using the library)?\.\n(?P<text>[^\n]*)(?:\nPrevious attempt: (?P<prev>[^\n]*))?"
                   r"(?:\nValidator: (?P<fb>[^\n]*))?\s*$")  # fmt: skip


@dataclass
class PromptBook:
    """What a chat prompt shows: the DSL documentation, the library's documentation and few-shot examples.

    Attributes:
        library_docs: one line per abstraction (:meth:`~iclr26.dna.concepts.Library.docs`).
        examples: ``(kind, library)`` -> ``(informal, formal)`` examples.
    """

    library_docs: list[str] = field(default_factory=list)
    examples: dict[tuple[str, bool], list[tuple[str, str]]] = field(default_factory=dict)

    def messages(self, req: Request) -> list[dict[str, str]]:
        """The chat messages of ``req``: system (docs), few-shot turns, then the request."""
        system = DSL_DOC
        if req.library and self.library_docs:
            system += "\nLibrary (use these abstractions):\n" + "\n".join(self.library_docs)
        system += "\nAnswer with the formal text only, on one line."
        msgs = [{"role": "system", "content": system}]
        for informal, formal in self.examples.get((req.kind, req.library), []):
            msgs.append({"role": "user", "content": user_message(Request(informal, req.kind, req.library))})
            msgs.append({"role": "assistant", "content": formal})
        msgs.append({"role": "user", "content": user_message(req)})
        return msgs


def user_message(req: Request) -> str:
    """The request as the user turn (:func:`parse_user_message` reads it back)."""
    lib = " using the library" if req.library else ""
    out = f"Translate this {_KIND_WORDS[req.kind]} into EuclidDSL{lib}.\n{req.text}"
    if req.previous:
        out += f"\nPrevious attempt: {req.previous}"
    if req.feedback:
        out += f"\nValidator: {req.feedback}"
    return out


def parse_user_message(content: str, *, sample: int = 0) -> Request:
    """The :class:`Request` a user turn of :func:`user_message` encodes.

    Raises:
        ValueError: if the content is not in that format.
    """
    m = _USER.match(content)
    if m is None:
        raise ValueError("the last user message is not a translation request ('Translate this clause into "
                         "EuclidDSL.\\n<text>')")  # fmt: skip
    kind = {v: k for k, v in _KIND_WORDS.items()}[m["kind"]]
    return Request(m["text"], kind, bool(m["lib"]), feedback=m["fb"] or "", previous=m["prev"] or "", sample=sample)


# ------------------------------------------------------------------------------------------------ small model
_TOKEN = re.compile(r"/\\|\\/|->|!=|:=|[(),.;:=~]|\w+")
SPECIALS = ("<pad>", "<unk>", "<sep>", "<eos>", "<statement>", "<clause>", "<binders>", "<lib>", "<prim>")


def tokenize(text: str) -> list[str]:
    """Word-level tokens: DSL operators, punctuation, words."""
    return _TOKEN.findall(text)


def source_tokens(req: Request) -> list[str]:
    """The small model's input: kind and mode tokens, the text, the separator."""
    return [f"<{req.kind}>", "<lib>" if req.library else "<prim>", *tokenize(req.text), "<sep>"]


@dataclass(frozen=True)
class TinyState:
    """A trained small translator as plain data (a unit's result): vocabulary, architecture, weights, losses."""

    vocab: tuple[str, ...]
    arch: dict[str, int]
    weights: dict[str, torch.Tensor]
    losses: list[float]


def train_tiny(
    pairs: Sequence[tuple[Request, str]],
    *,
    steps: int,
    batch_size: int,
    lr: float,
    d_model: int,
    n_layers: int,
    n_heads: int,
    generator: torch.Generator,
    extra_vocab: Sequence[str] = (),
    context_len: int | None = None,
) -> TinyState:
    """Train a :class:`~iclr26.common.tinylm.TinyLM` from scratch on ``(request, target)`` pairs.

    The loss is next-token cross-entropy on the target tokens and the end token only (the source is context).
    AdamW (:func:`adamw_step`) with a cosine schedule; a batch is ``batch_size`` neighbours in length order around
    an anchor drawn with ``generator`` (little padding); right padding (causal attention never sees it).

    Args:
        pairs: the parallel corpus.
        steps: optimizer steps.
        batch_size: sequences per step.
        lr: peak learning rate.
        d_model: width.
        n_layers: blocks.
        n_heads: attention heads.
        generator: the draws of the batches (the weights come from torch's global generator).
        extra_vocab: tokens to include even if the corpus lacks them (names the model may need to copy).
        context_len: the model's context (RoPE: no parameters depend on it); default the longest pair + 8. Longer
            than the training pairs lets the model be asked for longer outputs than it was trained on.

    Returns:
        :class:`TinyState`.
    """
    from iclr26.common.tinylm import TinyLM, TinyLMConfig

    if not pairs:
        raise ValueError("pairs must not be empty")
    seqs = [(source_tokens(r), [*tokenize(t), "<eos>"]) for r, t in pairs]
    words = sorted({w for s, t in seqs for w in (*s, *t)} | set(extra_vocab) - set(SPECIALS))
    vocab = (*SPECIALS, *words)
    index = {w: i for i, w in enumerate(vocab)}
    context = max(len(s) + len(t) for s, t in seqs)
    arch = {"vocab_size": len(vocab), "context_len": max(context + 8, context_len or 0), "d_model": d_model,
            "n_layers": n_layers, "n_heads": n_heads, "d_ff": 4 * d_model}  # fmt: skip
    model = TinyLM(TinyLMConfig(**arch))
    params = [p for p in model.parameters() if p.requires_grad]
    moments = [(torch.zeros_like(p), torch.zeros_like(p)) for p in params]
    encoded = [([index[w] for w in s], [index[w] for w in t]) for s, t in seqs]
    by_length = sorted(range(len(encoded)), key=lambda i: (len(encoded[i][0]) + len(encoded[i][1]), i))
    losses = []
    for step in range(steps):
        # cosine decay from lr to lr/10 after a 5% warm-up
        warm = max(1, steps // 20)
        frac = (step + 1) / warm if step < warm else 0.1 + 0.45 * (1 + math.cos(math.pi * (step - warm) / steps))
        step_lr = lr * min(1.0, frac)
        # a window of batch_size neighbours in length order around a random anchor: little padding, random batches
        anchor = int(torch.randint(len(by_length), (1,), generator=generator))
        lo = max(0, min(anchor - batch_size // 2, len(by_length) - batch_size))
        rows = [encoded[i] for i in by_length[lo : lo + batch_size]]
        T = max(len(s) + len(t) for s, t in rows)
        x = torch.zeros((len(rows), T), dtype=torch.long)  # (B, T), <pad> = 0
        y = torch.full((len(rows), T), -100, dtype=torch.long)  # (B, T), -100 = ignored
        for b, (s, t) in enumerate(rows):
            full = s + t
            x[b, : len(full)] = torch.tensor(full)
            y[b, len(s) - 1 : len(full) - 1] = torch.tensor(t)  # position of <sep> predicts the first target token
        logits = model(x).logits  # (B, T, V)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1),
                                                 ignore_index=-100)  # fmt: skip
        for p in params:
            p.grad = None
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        adamw_step(params, moments, step + 1, lr=step_lr)
        losses.append(float(loss.detach()))
    weights = {k: v.detach().clone() for k, v in model.state_dict().items()}
    return TinyState(vocab, arch, weights, losses)


@torch.no_grad()
def adamw_step(params: list, moments: list, t: int, *, lr: float, betas: tuple[float, float] = (0.9, 0.98),
               eps: float = 1e-8, weight_decay: float = 0.01) -> None:  # fmt: skip
    """One AdamW step (Loshchilov & Hutter 2019, Alg. 2), written out: ``torch.optim``'s first construction imports
    ``torch._dynamo`` (~7 s here), longer than the whole smoke run may take."""
    b1, b2 = betas
    for p, (m, v) in zip(params, moments, strict=True):
        if p.grad is None:
            continue
        g = p.grad
        m.mul_(b1).add_(g, alpha=1 - b1)  # m_t = β1 m + (1 − β1) g
        v.mul_(b2).addcmul_(g, g, value=1 - b2)  # v_t = β2 v + (1 − β2) g²
        m_hat = m / (1 - b1**t)
        v_hat = v / (1 - b2**t)
        p.mul_(1 - lr * weight_decay)  # decoupled weight decay
        p.addcdiv_(m_hat, v_hat.sqrt().add_(eps), value=-lr)  # θ −= η m̂ / (√v̂ + ε)


class TinyTranslator:
    """The small model trained here, as a :class:`Translator`.

    Args:
        state: the trained :class:`TinyState`.
        temperature: sampling temperature of requests with ``sample > 0``.
        max_new_tokens: ``kind`` -> most generated tokens.
        seed: base seed of the sampling draws (a sampled reply depends on it, the request batch and ``sample``).
        batch_size: requests decoded together.
    """

    def __init__(self, state: TinyState, *, temperature: float = 0.8, max_new_tokens: dict[str, int] | None = None,
                 seed: int = 0, batch_size: int = 256) -> None:  # fmt: skip
        from iclr26.common.tinylm import TinyLM, TinyLMConfig

        self.state = state
        self.vocab = state.vocab
        self.index = {w: i for i, w in enumerate(state.vocab)}
        self.model = TinyLM(TinyLMConfig(**state.arch))
        self.model.load_state_dict(state.weights)
        self.model.eval()
        self.temperature = temperature
        self.max_new_tokens = {"statement": 160, "clause": 60, "binders": 24, **(max_new_tokens or {})}
        self.seed = seed
        self.batch_size = batch_size

    def translate(self, requests: Sequence[Request]) -> list[Reply]:
        """Greedy (``sample == 0``) or sampled replies, batched by (kind, greedy or sampled) with left padding."""
        from iclr26.common.seeding import derive_seed

        out: list[Reply | None] = [None] * len(requests)
        groups: dict[tuple[str, bool], list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault((r.kind, r.sample > 0), []).append(i)
        for (kind, sampled), idx in sorted(groups.items()):
            for lo in range(0, len(idx), self.batch_size):
                chunk = idx[lo : lo + self.batch_size]
                src = [[self.index.get(w, 1) for w in source_tokens(requests[i])] for i in chunk]
                first = requests[chunk[0]]
                gen = torch.Generator().manual_seed(derive_seed(self.seed, kind, first.sample, first.text, len(chunk)))
                rows = decode(self.model, src, max_new=self.max_new_tokens[kind], eos=self.index["<eos>"],
                              temperature=self.temperature if sampled else 0.0, generator=gen)  # fmt: skip
                for i, s_ids, new in zip(chunk, src, rows, strict=True):
                    out[i] = Reply(" ".join(self.vocab[t] for t in new if t != self.index["<eos>"]), len(s_ids),
                                   len(new))  # fmt: skip
        return out  # type: ignore[return-value]


def decode(
    model: Any,
    src: Sequence[Sequence[int]],
    *,
    max_new: int,
    eos: int,
    temperature: float = 0.0,
    generator: torch.Generator | None = None,
    pad: int = 0,
) -> list[list[int]]:
    """Batched autoregressive decoding of a RoPE :class:`~iclr26.common.tinylm.TinyLM` with a key/value cache
    (:meth:`~iclr26.common.tinylm.TinyLM.generate`), the cap cut to what the context leaves.

    Args:
        model: the TinyLM (``positional="rope"``).
        src: token ids per row.
        max_new: most new tokens per row (fewer if the context fills up).
        eos: the end token; a row stops after it (it is included in the row's output).
        temperature: 0 for greedy, else sampling from ``softmax(logits / temperature)``.
        generator: the sampling draws.
        pad: the padding id.

    Returns:
        The new ids of each row.
    """
    longest = max(len(r) for r in src)
    max_new = max(0, min(max_new, model.config.context_len - longest))
    return model.generate(
        src, max_new_tokens=max_new, eos_id=eos, pad_id=pad, temperature=temperature, generator=generator
    ).rows()


# ------------------------------------------------------------------------------------------------ pretrained LM
class PretrainedTranslator:
    """A pretrained chat LM few-shot (SmolLM2-135M-Instruct by default) through :mod:`iclr26.common.pretrained`.

    Args:
        lm: a :class:`~iclr26.common.pretrained.PretrainedLM`.
        book: the prompt's documentation and examples.
        temperature: sampling temperature of requests with ``sample > 0`` (the paper: 0.2 for non-reasoning
            models [unverified]).
        max_new_tokens: ``kind`` -> most generated tokens.
        batch_size: prompts per ``generate`` call.
    """

    def __init__(self, lm: Any, book: PromptBook, *, temperature: float = 0.2,
                 max_new_tokens: dict[str, int] | None = None, batch_size: int = 8) -> None:  # fmt: skip
        self.lm = lm
        self.book = book
        self.temperature = temperature
        self.max_new_tokens = {"statement": 120, "clause": 48, "binders": 24, **(max_new_tokens or {})}
        self.batch_size = batch_size

    def translate(self, requests: Sequence[Request]) -> list[Reply]:
        """Replies generated per (kind, sample) group, greedy for ``sample == 0``, first line of the reply kept."""
        out: list[Reply | None] = [None] * len(requests)
        groups: dict[tuple[str, int], list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault((r.kind, r.sample), []).append(i)
        for (kind, sample), idx in sorted(groups.items()):
            gen = self.lm.generate([self.book.messages(requests[i]) for i in idx],
                                   max_new_tokens=self.max_new_tokens[kind],
                                   temperature=0.0 if sample == 0 else self.temperature, seed=sample, stop=["\n"],
                                   batch_size=self.batch_size)  # fmt: skip
            for k, i in enumerate(idx):
                out[i] = Reply(gen.texts[k].strip(), len(gen.prompt_ids[k]), len(gen.completion_ids[k]))
        return out  # type: ignore[return-value]


# ------------------------------------------------------------------------------------------------ HTTP
class HTTPTranslator:
    """A served model behind an OpenAI-compatible ``POST {base_url}/chat/completions`` (standard library only).

    Args:
        base_url: e.g. ``http://127.0.0.1:8000/v1``.
        model: the ``model`` field of the requests.
        book: the prompt's documentation and examples.
        timeout: seconds to wait for each reply.
        temperature: sampling temperature of requests with ``sample > 0`` (``seed`` = the sample index).
        api_key: sent as ``Authorization: Bearer ...`` when given.
        max_tokens: ``kind`` -> ``max_tokens`` of the request.
    """

    def __init__(self, base_url: str, *, model: str = "default", book: PromptBook | None = None,
                 timeout: float = 60.0, temperature: float = 0.2, api_key: str | None = None,
                 max_tokens: dict[str, int] | None = None) -> None:  # fmt: skip
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
        if timeout <= 0:
            raise ValueError(f"timeout must be > 0, got {timeout}")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.book = book or PromptBook()
        self.timeout = timeout
        self.temperature = temperature
        self.api_key = api_key
        self.max_tokens = {"statement": 160, "clause": 60, "binders": 24, **(max_tokens or {})}

    def translate(self, requests: Sequence[Request]) -> list[Reply]:
        """One HTTP call per request, in order.

        Raises:
            TranslatorError: server unreachable, timeout, HTTP error status, malformed JSON, or no reply text.
        """
        return [self._call(r) for r in requests]

    def _call(self, req: Request) -> Reply:
        body = {"model": self.model, "messages": self.book.messages(req), "max_tokens": self.max_tokens[req.kind],
                "temperature": 0.0 if req.sample == 0 else self.temperature, "seed": req.sample,
                "stop": ["\n"]}  # fmt: skip
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        http_req = urllib.request.Request(self.url, data=json.dumps(body).encode(), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(http_req, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as err:
            detail = err.read()[:200].decode("utf-8", "replace")
            raise TranslatorError(f"{self.url} answered HTTP {err.code}: {detail}") from None
        except urllib.error.URLError as err:
            if isinstance(err.reason, TimeoutError | socket.timeout):
                raise TranslatorError(f"no reply from {self.url} within timeout={self.timeout} s") from None
            raise TranslatorError(f"cannot reach {self.url}: {err.reason}; is the server running?") from None
        except TimeoutError:
            raise TranslatorError(f"no reply from {self.url} within timeout={self.timeout} s") from None
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise TranslatorError(f"malformed JSON from {self.url}: {err}; got {raw[:80]!r}") from None
        try:
            text = data["choices"][0]["message"]["content"]
            if not isinstance(text, str):
                raise TypeError
        except (KeyError, IndexError, TypeError):
            raise TranslatorError(f"the reply of {self.url} has no choices[0].message.content: {raw[:120]!r}") from None
        usage = data.get("usage") or {}
        return Reply(text.strip().split("\n")[0], int(usage.get("prompt_tokens", 0)),
                     int(usage.get("completion_tokens", 0)))  # fmt: skip


class _Handler(BaseHTTPRequestHandler):
    translator: Translator
    model_name: str

    def log_message(self, *args: Any) -> None:  # silence the default stderr log
        pass

    def _send(self, status: int, payload: dict) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"unknown path {self.path}"}})
            return
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            user = [m for m in body["messages"] if m.get("role") == "user"][-1]["content"]
            sample = int(body.get("seed", 0)) if float(body.get("temperature", 0.0)) > 0 else 0
            req = parse_user_message(user, sample=sample)
        except (ValueError, KeyError, IndexError, TypeError) as err:
            self._send(400, {"error": {"message": f"bad request: {err}"}})
            return
        reply = self.translator.translate([req])[0]
        self._send(200, {
            "id": "chatcmpl-dna", "object": "chat.completion", "model": self.model_name,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                      "total_tokens": reply.prompt_tokens + reply.completion_tokens},
        })  # fmt: skip


class TranslatorServer:
    """A translator served on the OpenAI chat-completions protocol in a background thread (a context manager).

    Attributes:
        url: the base URL (``http://127.0.0.1:PORT/v1``) to give :class:`HTTPTranslator`.
    """

    def __init__(self, translator: Translator, *, host: str = "127.0.0.1", port: int = 0,
                 model_name: str = "dna-small") -> None:  # fmt: skip
        handler = type("Handler", (_Handler,), {"translator": translator, "model_name": model_name})
        self._server = ThreadingHTTPServer((host, port), handler)
        self.url = f"http://{host}:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> TranslatorServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving and free the port."""
        self._server.shutdown()
        self._server.server_close()


def serve_translator(translator: Translator, *, host: str = "127.0.0.1", port: int = 0) -> TranslatorServer:
    """A :class:`TranslatorServer` for ``translator`` (use as ``with serve_translator(t) as s: ... s.url``)."""
    return TranslatorServer(translator, host=host, port=port)
