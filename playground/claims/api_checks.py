"""The seed articles' API statements, tried against the live server, with the evidence.

Each check sends what the article wrote next to what vLLM documents as working, and compares
what the server did (rendered prompt length, output validity, chunk counts, tokenization,
number of answers). Outcome words: "works as written", "silently ignored" (HTTP 200, no
effect), "rejected" (an error), "not what it claims", "does not exist", "could not check".
Raw HTTP (server/http, not the SDK) so that the exact body is what the article's code
would send.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from playground.core.scoring import score
from playground.server import http
from playground.server.http import server_root

Outcome = str


@dataclass(frozen=True)
class ApiCheck:
    id: str
    article: str
    statement: str
    outcome: Outcome
    evidence: str
    instead: str  # what does work

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Api:
    """The bits of the server these checks need; the key only goes into the header."""

    def __init__(self, base_url: str, api_key: str, model: str, timeout_s: float = 120) -> None:
        self.base_url = base_url.rstrip("/")
        self._key = api_key
        self.model = model
        self.timeout_s = timeout_s

    def post(self, path: str, body: dict[str, Any], *, root: bool = False
             ) -> tuple[int, dict[str, Any] | str]:
        url = (server_root(self.base_url) if root else self.base_url) + path
        reply = http.request("POST", url, body=body, api_key=self._key,
                             timeout_s=self.timeout_s)
        data = reply.json()
        return reply.status, data if isinstance(data, dict) else reply.text

    def chat(self, messages: list[dict[str, str]], **extra: Any
             ) -> tuple[int, dict[str, Any] | str]:
        body = {"model": self.model, "messages": messages, "max_tokens": 8,
                "temperature": 0, **extra}
        return self.post("/chat/completions", body)

    def stream_chunks(self, body: dict[str, Any]) -> tuple[int, int, int | None]:
        """(HTTP status, token-carrying chunks, completion tokens) of a streamed request."""
        full = {"model": self.model, "stream": True,
                "stream_options": {"include_usage": True}, **body}
        status, events = http.sse_events(self.base_url + "/chat/completions", full,
                                         api_key=self._key, timeout_s=self.timeout_s)
        chunks, tokens = 0, None
        for data in events:
            if data.get("usage"):
                tokens = data["usage"].get("completion_tokens")
            for ch in data.get("choices") or []:
                d = ch.get("delta") or {}
                if d.get("content") or d.get("reasoning"):
                    chunks += 1
        return status, chunks, tokens


def _usage(resp: dict[str, Any] | str, key: str) -> int | None:
    return resp.get("usage", {}).get(key) if isinstance(resp, dict) else None


def _err(resp: dict[str, Any] | str) -> str:
    if isinstance(resp, dict):
        e = resp.get("error")
        return str(e.get("message") if isinstance(e, dict) else e or resp)[:200]
    return str(resp)[:200]


MSG = [{"role": "user", "content": "Extract the address: 北京市朝阳区建国路88号 张伟 13800000000"}]


def check_top_level_enable_thinking(api: Api) -> ApiCheck:
    s0, default = api.chat(MSG)
    s1, top = api.chat(MSG, enable_thinking=False)
    s2, kw = api.chat(MSG, chat_template_kwargs={"enable_thinking": False})
    statement = 'extra_body={"enable_thinking": False} (top level) turns thinking off'
    instead = 'extra_body={"chat_template_kwargs": {"enable_thinking": False}}'
    if s1 != 200:
        return ApiCheck("enable-thinking-top-level", "000, 001", statement, "rejected",
                        f"HTTP {s1}: {_err(top)}", instead)
    p0, p1, p2 = (_usage(r, "prompt_tokens") for r in (default, top, kw))
    if None in (p0, p1, p2) or s0 != 200 or s2 != 200:
        return ApiCheck("enable-thinking-top-level", "000, 001", statement, "could not check",
                        f"HTTP {s0}/{s1}/{s2}; prompt tokens {p0}/{p1}/{p2}", instead)
    ignored = p1 == p0 and p2 != p0
    evidence = (f"HTTP 200. Rendered prompt: {p0} tokens by default, {p1} with top-level "
                f"enable_thinking=false (unchanged: no empty <think></think> block), {p2} "
                "with chat_template_kwargs (the empty think block that switches thinking off).")
    return ApiCheck("enable-thinking-top-level", "000, 001", statement,
                    "silently ignored" if ignored else "works as written", evidence, instead)


def check_thinking_chunk_size(api: Api) -> ApiCheck:
    """Judged by what grouping into 8s would look like, not by equal chunk counts: a busy
    server merges a slow reader's tokens into fewer chunks on its own (vLLM coalesces the
    outputs a reader has not taken yet), so two plain streams differ in count too."""
    body = {"messages": MSG, "max_tokens": 32, "ignore_eos": True, "temperature": 0,
            "chat_template_kwargs": {"enable_thinking": False}}
    _s0, c0, t0 = api.stream_chunks(body)
    s1, c1, t1 = api.stream_chunks({**body, "thinking_chunk_size": 8})
    statement = "thinking_chunk_size=8 groups the streamed thinking into chunks"
    instead = "no such parameter; --stream-interval N (server) batches tokens per chunk"
    if s1 != 200:
        return ApiCheck("thinking-chunk-size", "001", statement, "rejected", f"HTTP {s1}",
                        instead)

    def grouped(chunks: int, tokens: int) -> bool:  # about 8 tokens per chunk, or more
        return chunks <= -(-tokens // 8) + 1

    evidence = (f"HTTP 200 either way. Without it: {t0} tokens in {c0} chunks; with "
                f"thinking_chunk_size=8: {t1} tokens in {c1} chunks")
    if grouped(c0, t0):
        return ApiCheck("thinking-chunk-size", "001", statement, "could not check",
                        evidence + " -- this server groups tokens by itself.", instead)
    if grouped(c1, t1):
        return ApiCheck("thinking-chunk-size", "001", statement, "works as written",
                        evidence + ".", instead)
    return ApiCheck("thinking-chunk-size", "001", statement, "silently ignored",
                    evidence + " -- not grouped into 8s (a difference in count alone is the "
                    "server merging what a reader had not taken yet).", instead)


# Small and bounded, so that a constrained answer always closes within max_tokens.
ADDRESS_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["city", "name", "phone"],
    "properties": {k: {"type": "string", "maxLength": 12} for k in ("city", "name", "phone")},
}


def check_guided_json(api: Api, n: int = 3) -> ApiCheck:
    base: dict[str, Any] = {"max_tokens": 96, "temperature": 0,
                            "chat_template_kwargs": {"enable_thinking": False}}
    statement = 'extra_body={"guided_json": SCHEMA} constrains the output to the schema'
    instead = ('response_format={"type": "json_schema", "json_schema": {"name": "address", '
               '"schema": SCHEMA}} or extra_body={"structured_outputs": {"json": SCHEMA}}')
    tallies = []
    for extra in ({"guided_json": ADDRESS_SCHEMA},
                  {"response_format": {"type": "json_schema", "json_schema": {
                      "name": "address", "schema": ADDRESS_SCHEMA}}}):
        ok = 0
        status = 200
        for i in range(n):
            msgs = [{"role": "user", "content": f"{MSG[0]['content']} ({i})"}]
            status, resp = api.chat(msgs, **base, **extra)
            if status != 200:
                break
            content = (resp["choices"][0]["message"].get("content") or ""
                       if isinstance(resp, dict) else "")
            ok += bool(score(content, ADDRESS_SCHEMA, None).schema_valid)
        tallies.append((status, ok))
    (sg, ok_g), (_sr, ok_r) = tallies
    if sg != 200:
        return ApiCheck("guided-json", "004", statement, "rejected", f"HTTP {sg}", instead)
    evidence = (f"HTTP 200. Schema-valid answers: {ok_g}/{n} with guided_json, {ok_r}/{n} "
                "with response_format json_schema on the same prompts (vLLM >= 0.12 removed "
                "guided_* and logs 'output will NOT be constrained').")
    outcome = ("silently ignored" if ok_r == n and ok_g < n else
               "works as written" if ok_g == n else "could not check")
    return ApiCheck("guided-json", "004", statement, outcome, evidence, instead)


def check_eot_id(api: Api) -> ApiCheck:
    statement = 'stop=["<|eot_id|>"] stops Qwen3 at the end of its turn'
    instead = ("nothing: vLLM already stops on Qwen3's <|im_end|> / <|endoftext|> from "
               "generation_config.json")
    s1, eot = api.post("/tokenize", {"model": api.model, "prompt": "<|eot_id|>",
                                     "add_special_tokens": False}, root=True)
    s2, im_end = api.post("/tokenize", {"model": api.model, "prompt": "<|im_end|>",
                                        "add_special_tokens": False}, root=True)
    s3, _resp = api.chat(MSG, stop=["<|eot_id|>"])
    if s1 != 200 or s2 != 200 or not isinstance(eot, dict) or not isinstance(im_end, dict):
        return ApiCheck("eot-id-stop", "004", statement, "could not check",
                        f"/tokenize answered HTTP {s1}/{s2}", instead)
    n_eot, n_end = len(eot.get("tokens", [])), len(im_end.get("tokens", []))
    evidence = (f"The request is accepted (HTTP {s3}), but <|eot_id|> is not a Qwen3 token: "
                f"it tokenizes to {n_eot} ordinary pieces {eot.get('tokens')}, while Qwen3's "
                f"end-of-turn <|im_end|> is {n_end} special token {im_end.get('tokens')}. The "
                "stop string only fires if the model writes that literal text (Llama-3's "
                "marker), which it has no reason to.")
    return ApiCheck("eot-id-stop", "004", statement,
                    "not what it claims" if n_eot > 1 and s3 == 200 else "could not check",
                    evidence, instead)


def check_message_list_batch(api: Api, n: int = 10) -> ApiCheck:
    statement = f"messages=[{n} user messages] processes them as a batch ({n} answers)"
    instead = f"send {n} requests concurrently (vLLM batches them on the server)"
    msgs = [{"role": "user", "content": f"address {i}: 上海市浦东新区世纪大道{i}号"}
            for i in range(n)]
    s1, resp = api.chat(msgs)
    _s2, one = api.chat(msgs[:1])
    if s1 != 200 or not isinstance(resp, dict):
        return ApiCheck("messages-as-batch", "000", statement, "rejected",
                        f"HTTP {s1}: {_err(resp)}", instead)
    choices = len(resp.get("choices", []))
    evidence = (f"HTTP 200 with {choices} answer(s) for {n} messages; the prompt was "
                f"{_usage(resp, 'prompt_tokens')} tokens vs {_usage(one, 'prompt_tokens')} for "
                "one message: the list is ONE conversation, answered once.")
    return ApiCheck("messages-as-batch", "000", statement,
                    "not what it claims" if choices == 1 else "works as written", evidence,
                    instead)


def check_enable_streaming_flag(api: Api, vllm_python: str | None) -> ApiCheck:
    statement = "the server needs --enable-streaming to stream"
    instead = "nothing: every vLLM server streams when the request has stream=true"
    s, chunks, tokens = api.stream_chunks({"messages": MSG, "max_tokens": 8,
                                           "ignore_eos": True})
    streams = (f"This server (started without that flag) streamed {tokens} tokens in "
               f"{chunks} chunks (HTTP {s}).")
    if vllm_python is None:
        return ApiCheck("enable-streaming-flag", "001", statement, "not what it claims",
                        streams + " (No local vLLM to list its flags.)", instead)
    try:
        out = subprocess.run([vllm_python, "-m", "vllm.entrypoints.openai.api_server",
                              "--help"], capture_output=True, text=True, timeout=180)
        helptext = out.stdout + out.stderr
    except (OSError, subprocess.TimeoutExpired) as e:
        return ApiCheck("enable-streaming-flag", "001", statement, "not what it claims",
                        streams + f" (Could not list the flags: {e}.)", instead)
    if "--enable-chunked-prefill" not in helptext:  # help did not print: cannot tell
        return ApiCheck("enable-streaming-flag", "001", statement, "not what it claims",
                        streams + " (vLLM's --help printed no flag list.)", instead)
    exists = "--enable-streaming" in helptext
    return ApiCheck("enable-streaming-flag", "001", statement,
                    "works as written" if exists else "does not exist",
                    streams + (" `--enable-streaming` is listed in `api_server --help`." if exists
                               else " `--enable-streaming` is not among the local vLLM's "
                               "server flags (`api_server --help`); vLLM would refuse to "
                               "start with it."), instead)


CHECKS: list[tuple[str, Callable[..., ApiCheck]]] = [
    ("enable-thinking-top-level", check_top_level_enable_thinking),
    ("thinking-chunk-size", check_thinking_chunk_size),
    ("guided-json", check_guided_json),
    ("eot-id-stop", check_eot_id),
    ("messages-as-batch", check_message_list_batch),
]


def run_api_checks(base_url: str, api_key: str, model: str, *,
                   vllm_python: str | None = None) -> list[ApiCheck]:
    """All checks, one after another; a check that crashes is reported, not raised."""
    api = Api(base_url, api_key, model)
    out = []
    calls: list[tuple[str, Callable[[], ApiCheck]]] = [
        (cid, lambda f=f: f(api)) for cid, f in CHECKS]  # type: ignore[misc]
    calls.append(("enable-streaming-flag", lambda: check_enable_streaming_flag(api,
                                                                                vllm_python)))
    for cid, call in calls:
        try:
            out.append(call())
        except (OSError, ValueError, KeyError) as e:
            out.append(ApiCheck(cid, "", cid, "could not check", f"{type(e).__name__}: {e}",
                                ""))
    return out
