"""PURE: Variant + prompt -> ChatRequest. The only module that knows vLLM's request dialect.

What each toggle becomes on the wire (checked against the vLLM 0.26 and 0.32 sources):
- stream          -> stream=True + stream_options.include_usage (server token counts)
- thinking        -> extra_body.chat_template_kwargs.enable_thinking (top-level is ignored)
- temperature/top_p/seed -> native kwargs; top_k, ignore_eos, min_tokens -> extra_body
- max_tokens      -> always sent (omitted, vLLM allows max_model_len - prompt tokens)
- guided_json     -> response_format {"type": "json_schema", "json_schema": {name, schema}}
- thinking_budget -> extra_body.thinking_token_budget (vLLM forces </think> after N tokens)
- think_prefill   -> a final assistant turn "<think>\n" + continue_final_message, no
                     generation prompt: the answer starts inside the think block

engine "transformers" (Hugging Face `transformers serve`, checked against transformers 5.17 and
5.19) answers 422 to any parameter outside the OpenAI schema and ignores stream_options and
response_format. There, top_k / min_tokens / ignore_eos travel inside its own
`generation_config` (ignore_eos = min_new_tokens equal to max_tokens: exactly max_tokens
tokens); chat_template_kwargs (thinking) is honoured; usage always rides on the last chunk.
Guided JSON, thinking budgets and think_prefill cannot be expressed (the Variant refuses them).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from typing import Any

from playground.specs.presets import Variant

THINK_PREFILL = "<think>\n"


@dataclass(frozen=True)
class ChatRequest:
    """Everything needed for one chat-completions call, split the way the openai SDK wants it."""

    variant: str
    kwargs: dict[str, Any]
    extra_body: dict[str, Any] = field(default_factory=dict)

    @property
    def stream(self) -> bool:
        return bool(self.kwargs.get("stream"))

    @property
    def max_tokens(self) -> int:
        return int(self.kwargs["max_tokens"])

    def body(self) -> dict[str, Any]:
        """The JSON body as it goes over the wire (extra_body merged at top level)."""
        return {**self.kwargs, **self.extra_body}


def build_messages(variant: Variant, prompt: str, nonce: str | None = None
                   ) -> list[dict[str, str]]:
    messages = []
    if variant.prompt.text:
        messages.append({"role": "system", "content": variant.prompt.text})
    messages.append({"role": "user", "content": prompt})
    if nonce:
        # A unique first line defeats vLLM's prefix cache ("cold" benchmarks): the cache
        # matches from the first token, so the nonce must precede the system prompt.
        first = messages[0]
        messages[0] = {**first, "content": f"[{nonce}]\n{first['content']}"}
    if variant.think_prefill:
        messages.append({"role": "assistant", "content": THINK_PREFILL})
    return messages


def build(variant: Variant, prompt: str, model: str, *, nonce: str | None = None
          ) -> ChatRequest:
    """Map every toggle of `variant` to the request vLLM honours for it."""
    kwargs: dict[str, Any] = {
        "model": model,
        "messages": build_messages(variant, prompt, nonce),
        "max_tokens": variant.max_tokens,
    }
    if variant.stream:
        kwargs["stream"] = True
        if variant.engine == "vllm":
            kwargs["stream_options"] = {"include_usage": True}
    for name in ("temperature", "top_p", "seed"):
        value = getattr(variant, name)
        if value is not None:
            kwargs[name] = value
    if variant.engine == "transformers":
        return ChatRequest(variant=variant.name, kwargs=kwargs,
                           extra_body=_transformers_extra(variant))
    if variant.guided_json is not None:
        kwargs["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": variant.guided_json.name,
                            "schema": variant.guided_json.json_schema},
        }
    extra: dict[str, Any] = {"chat_template_kwargs": {"enable_thinking": variant.thinking}}
    if variant.top_k is not None:
        extra["top_k"] = variant.top_k
    if variant.ignore_eos:
        extra["ignore_eos"] = True
    if variant.min_tokens is not None:
        extra["min_tokens"] = variant.min_tokens
    if variant.thinking_budget is not None:
        extra["thinking_token_budget"] = variant.thinking_budget
    if variant.think_prefill:
        extra["continue_final_message"] = True
        extra["add_generation_prompt"] = False
    return ChatRequest(variant=variant.name, kwargs=kwargs, extra_body=extra)


def _transformers_extra(variant: Variant) -> dict[str, Any]:
    extra: dict[str, Any] = {"chat_template_kwargs": {"enable_thinking": variant.thinking}}
    gen: dict[str, Any] = {}
    if variant.top_k is not None:
        gen["top_k"] = variant.top_k
    if variant.min_tokens is not None:
        gen["min_new_tokens"] = variant.min_tokens
    if variant.ignore_eos:
        gen["min_new_tokens"] = variant.max_tokens
    if gen:
        # a generation_config replaces the model's defaults: say greedy or sampling explicitly
        gen["do_sample"] = variant.temperature is None or variant.temperature > 0
        gen["max_new_tokens"] = variant.max_tokens
        extra["generation_config"] = json.dumps(gen, sort_keys=True)
    return extra


def python_snippet(req: ChatRequest, base_url: str) -> str:
    """The exact openai-SDK call for this request. The API key is a placeholder, always."""
    kw = dict(req.kwargs)
    lines = [
        "import os",
        "from openai import OpenAI",
        "",
        f"client = OpenAI(base_url={base_url!r},",
        "                api_key=os.environ.get('OPENAI_API_KEY', 'EMPTY'),",
        "                max_retries=0, timeout=120)",
        "response = client.chat.completions.create(",
    ]
    for key, value in kw.items():
        lines.append(f"    {key}={_py(value)},")
    if req.extra_body:
        lines.append(f"    extra_body={_py(req.extra_body)},")
    lines.append(")")
    if req.stream:
        lines += ["for chunk in response:",
                  "    if chunk.choices:",
                  "        delta = chunk.choices[0].delta",
                  "        print(getattr(delta, 'reasoning', None) or delta.content or '', end='')"]
    else:
        lines.append("print(response.choices[0].message.content)")
    return "\n".join(lines)


def langchain_snippet(req: ChatRequest, base_url: str) -> str:
    """The same request through LangChain's ChatOpenAI (what `client: langchain` measures).
    The API key is a placeholder, always; vLLM's extras go in `extra_body`."""
    kw = {k: v for k, v in req.kwargs.items()
          if k not in ("model", "messages", "stream", "stream_options")}
    lines = [
        "import os",
        "from langchain_openai import ChatOpenAI",
        "",
        f"llm = ChatOpenAI(model={req.kwargs['model']!r}, base_url={base_url!r},",
        "                 api_key=os.environ.get('OPENAI_API_KEY', 'EMPTY'),",
        f"                 max_retries=0, timeout=120, stream_usage={req.stream!r})",
        f"messages = {_py(req.kwargs['messages'])}",
    ]
    args = ["messages", *(f"{k}={_py(v)}" for k, v in kw.items())]
    if req.extra_body:
        args.append(f"extra_body={_py(req.extra_body)}")
    call = ",\n    ".join(args)
    if req.stream:
        lines += [f"for chunk in llm.stream(\n    {call},\n):",
                  "    print(chunk.content, end='')  # LangChain drops vLLM's reasoning field"]
    else:
        lines += [f"reply = llm.invoke(\n    {call},\n)", "print(reply.content)"]
    return "\n".join(lines)


def code_snippet(req: ChatRequest, base_url: str, client: str) -> str:
    """"View code": LangChain's call for a LangChain variant, the openai SDK's otherwise (the
    raw reader sends the same body: its code is the curl command)."""
    return (langchain_snippet if client == "langchain" else python_snippet)(req, base_url)


def curl_snippet(req: ChatRequest, base_url: str) -> str:
    """The same request as a curl command; the key comes from $OPENAI_API_KEY. Every value is
    shell-quoted: a URL or prompt holding `$(...)`, quotes or newlines is pasted as text."""
    body = json.dumps(req.body(), ensure_ascii=False, indent=2)
    flag = " -N" if req.stream else ""
    return (f"curl{flag} {shlex.quote(base_url.rstrip('/') + '/chat/completions')} \\\n"
            "  -H 'Content-Type: application/json' \\\n"
            "  -H \"Authorization: Bearer ${OPENAI_API_KEY:-EMPTY}\" \\\n"
            f"  -d {shlex.quote(body)}")


def _py(value: Any) -> str:
    """Python literal for JSON-like data (True/False/None, not true/false/null)."""
    return repr(value)
