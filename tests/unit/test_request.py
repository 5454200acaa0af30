"""Table-driven: every toggle of a Variant maps to what vLLM honours (per its sources)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from playground.core import request
from playground.specs.presets import GuidedJson, PromptVariant, Variant

SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
BASE = {"name": "v"}

# (variant overrides, path into the request body, expected value); "MISSING" = key absent
CASES: list[tuple[dict[str, Any], str, Any]] = [
    ({"stream": True}, "stream", True),
    ({"stream": True}, "stream_options", {"include_usage": True}),
    ({"stream": False}, "stream", "MISSING"),
    ({"stream": False}, "stream_options", "MISSING"),
    ({"thinking": True}, "chat_template_kwargs", {"enable_thinking": True}),
    ({"thinking": False}, "chat_template_kwargs", {"enable_thinking": False}),
    ({"thinking": False}, "enable_thinking", "MISSING"),  # top level is silently ignored
    ({"temperature": 0.0}, "temperature", 0.0),
    ({}, "temperature", "MISSING"),
    ({"top_p": 0.8}, "top_p", 0.8),
    ({"top_k": 20}, "top_k", 20),
    ({}, "top_k", "MISSING"),
    ({"seed": 7}, "seed", 7),
    ({}, "max_tokens", 256),  # always sent
    ({"max_tokens": 12}, "max_tokens", 12),
    ({"ignore_eos": True}, "ignore_eos", True),
    ({}, "ignore_eos", "MISSING"),
    ({"min_tokens": 5}, "min_tokens", 5),
    ({"guided_json": GuidedJson(name="addr", schema=SCHEMA)}, "response_format",
     {"type": "json_schema", "json_schema": {"name": "addr", "schema": SCHEMA}}),
    ({}, "response_format", "MISSING"),
    ({}, "guided_json", "MISSING"),  # removed in vLLM 0.12: never sent
]


@pytest.mark.parametrize(("overrides", "key", "expected"), CASES)
def test_toggle_maps_to_body(overrides: dict[str, Any], key: str, expected: Any) -> None:
    body = request.build(Variant(**BASE, **overrides), "hi", "m").body()
    assert body.get(key, "MISSING") == expected


@pytest.mark.parametrize(("key", "where"), [
    ("top_k", "extra_body"), ("ignore_eos", "extra_body"), ("min_tokens", "extra_body"),
    ("chat_template_kwargs", "extra_body"), ("temperature", "kwargs"), ("seed", "kwargs"),
    ("max_tokens", "kwargs"), ("stream_options", "kwargs"), ("response_format", "kwargs"),
])
def test_vllm_only_params_go_in_extra_body(key: str, where: str) -> None:
    v = Variant(name="v", stream=True, top_k=5, ignore_eos=True, min_tokens=1, temperature=0.1,
                seed=1, guided_json=GuidedJson(schema=SCHEMA))
    req = request.build(v, "hi", "m")
    assert key in getattr(req, where)
    other = "kwargs" if where == "extra_body" else "extra_body"
    assert key not in getattr(req, other)


def test_messages_system_prompt_and_user() -> None:
    v = Variant(name="v", prompt=PromptVariant(name="minimal", text="SYS"))
    assert request.build(v, "hello", "m").kwargs["messages"] == [
        {"role": "system", "content": "SYS"}, {"role": "user", "content": "hello"}]
    assert request.build(Variant(name="v"), "hello", "m").kwargs["messages"] == [
        {"role": "user", "content": "hello"}]


def test_build_is_pure() -> None:
    v = Variant(name="v", stream=True, guided_json=GuidedJson(schema=SCHEMA))
    a, b = request.build(v, "x", "m"), request.build(v, "x", "m")
    assert a == b
    a.kwargs["messages"].append({"role": "user", "content": "mutated"})
    assert len(request.build(v, "x", "m").kwargs["messages"]) == 1


def test_snippets_carry_the_request_and_no_key() -> None:
    v = Variant(name="v", stream=True, thinking=False, top_k=3)
    req = request.build(v, "長沙", "Qwen/Qwen3-0.6B")
    py = request.python_snippet(req, "http://h:1/v1")
    assert "extra_body={'chat_template_kwargs': {'enable_thinking': False}, 'top_k': 3}" in py
    assert "OPENAI_API_KEY" in py
    compile(py, "<snippet>", "exec")
    curl = request.curl_snippet(req, "http://h:1/v1")
    body = curl.split("-d '", 1)[1].rstrip("'")
    assert json.loads(body) == req.body()
    assert "${OPENAI_API_KEY:-EMPTY}" in curl


def test_nonce_precedes_the_system_prompt() -> None:
    v = Variant(name="v", prompt=PromptVariant(name="m", text="SYS"))
    msgs = request.build(v, "hi", "m", nonce="r1-7").kwargs["messages"]
    assert msgs[0] == {"role": "system", "content": "[r1-7]\nSYS"}
    assert msgs[1] == {"role": "user", "content": "hi"}
    bare = request.build(Variant(name="v"), "hi", "m", nonce="x").kwargs["messages"]
    assert bare == [{"role": "user", "content": "[x]\nhi"}]


# Transformers' dialect (`transformers serve`: 422 on anything outside the OpenAI schema)
TF_CASES: list[tuple[dict[str, Any], str, Any]] = [
    ({"stream": True}, "stream", True),
    ({"stream": True}, "stream_options", "MISSING"),  # ignored there; usage rides on the end
    ({"thinking": False}, "chat_template_kwargs", {"enable_thinking": False}),
    ({"temperature": 0.0}, "temperature", 0.0),
    ({"top_k": 20}, "top_k", "MISSING"),
    ({"ignore_eos": True}, "ignore_eos", "MISSING"),
    ({"min_tokens": 5}, "min_tokens", "MISSING"),
    ({}, "generation_config", "MISSING"),
]


@pytest.mark.parametrize(("overrides", "key", "expected"), TF_CASES)
def test_transformers_dialect(overrides: dict[str, Any], key: str, expected: Any) -> None:
    v = Variant(**{**BASE, "engine": "transformers", **overrides})
    body = request.build(v, "hi", "Qwen/Qwen3-0.6B").body()
    assert body.get(key, "MISSING") == expected


def test_transformers_gets_lengths_and_top_k_in_its_generation_config() -> None:
    v = Variant(name="v", engine="transformers", max_tokens=32, ignore_eos=True, top_k=5,
                temperature=0.0)
    gen = json.loads(request.build(v, "hi", "m").body()["generation_config"])
    assert gen == {"min_new_tokens": 32, "max_new_tokens": 32, "top_k": 5, "do_sample": False}
    sampled = Variant(name="v", engine="transformers", min_tokens=3, temperature=0.7)
    gen = json.loads(request.build(sampled, "hi", "m").body()["generation_config"])
    assert gen["min_new_tokens"] == 3 and gen["do_sample"] is True


@pytest.mark.parametrize("field", ["guided_json", "thinking_budget", "think_prefill"])
def test_what_transformers_cannot_express_is_refused_by_name(field: str) -> None:
    extra: dict[str, Any] = {"guided_json": {"guided_json": GuidedJson(name="a", schema=SCHEMA)},
                             "thinking_budget": {"thinking": True, "thinking_budget": 8},
                             "think_prefill": {"thinking": True, "think_prefill": True}}[field]
    with pytest.raises(ValueError, match=field):
        Variant(name="v", engine="transformers", **extra)


def test_langchain_snippet_is_the_same_request_and_no_key() -> None:
    v = Variant(name="v", stream=True, thinking=False, top_k=3, max_tokens=9, client="langchain",
                guided_json=GuidedJson(name="addr", schema=SCHEMA))
    req = request.build(v, "長沙", "Qwen/Qwen3-0.6B")
    code = request.langchain_snippet(req, "http://h:1/v1")
    compile(code, "<snippet>", "exec")
    assert "from langchain_openai import ChatOpenAI" in code and "llm.stream(" in code
    assert "model='Qwen/Qwen3-0.6B'" in code and "base_url='http://h:1/v1'" in code
    assert "max_tokens=9" in code and "'top_k': 3" in code and "response_format=" in code
    assert "OPENAI_API_KEY" in code and "sk-" not in code
    plain = request.build(v.model_copy(update={"stream": False}), "x", "m")
    assert "llm.invoke(" in request.langchain_snippet(plain, "http://h:1/v1")


@pytest.mark.reliability(case="a base URL or prompt holding $(...) and quotes, pasted from the "
                         "curl snippet", where="the shell runs nothing: every value is "
                         "shell-quoted (curl gets them as text)", order=70)
def test_the_curl_snippet_quotes_every_value(tmp_path, observed) -> None:  # type: ignore[no-untyped-def]
    """Pasted into a shell, the snippet passes the URL and the body as text: a `$(...)` in
    either runs nothing (curl is replaced by printf, which shows the arguments it got)."""
    import subprocess

    from playground.core import request as rq

    mark = tmp_path / "ran"
    v = Variant(name="x")
    req = rq.build(v, f"it's $(touch {mark}) `touch {mark}`", "m")
    snip = rq.curl_snippet(req, f"http://h:1/v1$(touch {mark})")
    out = subprocess.run(["bash", "-c", "curl() { printf '%s\\n' \"$@\"; }\n" + snip],
                         capture_output=True, text=True, check=True)
    args = out.stdout.splitlines()
    assert args[0] in ("-N", f"http://h:1/v1$(touch {mark})/chat/completions")
    observed(f"curl got the URL {args[1] if args[0] == '-N' else args[0]!r}; command run: "
             f"{mark.exists()}")
    assert f"$(touch {mark})" in out.stdout and not mark.exists()
