"""Checks against the live server's limits, before a generation request is sent.

Owns: the prompt's size limit, and max_tokens / the prompt against the model's context length
(max_model_len from /v1/models, the prompt's token count from vLLM's /tokenize with the same
messages the request would carry -- asked only when the prompt is long enough to matter).
When the server cannot say (no max_model_len, no /tokenize) the check is skipped and the
server's own 400 -- shown with its parameter name -- decides.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from playground.core.request import build_messages
from playground.errors import ValidationFailed
from playground.server.http import atokenize_count
from playground.specs.presets import Variant

TokenCount = Callable[[str, str, dict[str, Any]], Awaitable[int | None]]
MAX_PROMPT_CHARS = 200_000  # pasted or uploaded text; far above any context this tool serves


def check_prompt(prompt: str) -> None:
    if not prompt.strip():
        raise ValidationFailed("prompt", "is empty -- type a prompt or pick an example")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise ValidationFailed("prompt", f"is {len(prompt):,} characters; the limit is "
                               f"{MAX_PROMPT_CHARS:,} -- shorten it")


def tokenize_body(model: str, variant: Variant, prompt: str) -> dict[str, object]:
    """The /tokenize body that renders the same chat prompt the request would carry."""
    return {"model": model, "messages": build_messages(variant, prompt),
            "add_generation_prompt": True,
            "chat_template_kwargs": {"enable_thinking": variant.thinking}}


def check_fits(variant: Variant, prompt: str, max_model_len: int | None,
               tokens: int | None) -> None:
    """Raise ValidationFailed (naming prompt or max_tokens, and the fix) when the request
    cannot fit the model's context."""
    if not max_model_len:
        return
    if variant.max_tokens >= max_model_len:
        raise ValidationFailed("max_tokens", f"{variant.max_tokens:,} does not fit the model's "
                               f"context of {max_model_len:,} tokens -- lower max_tokens",
                               source=f"variant {variant.name}")
    if tokens is None:
        return
    if tokens >= max_model_len:
        raise ValidationFailed("prompt", f"is {tokens:,} tokens; the model's context is "
                               f"{max_model_len:,} -- shorten the prompt",
                               source=f"variant {variant.name}")
    if tokens + variant.max_tokens > max_model_len:
        raise ValidationFailed("max_tokens", f"{variant.max_tokens:,} + the prompt's {tokens:,} "
                               f"tokens exceed the model's context of {max_model_len:,} -- "
                               f"lower max_tokens to {max_model_len - tokens:,} or less",
                               source=f"variant {variant.name}")


TEMPLATE_SLACK = 64  # tokens a chat template may add per message (roles, special tokens)


def surely_fits(variant: Variant, prompt: str, max_model_len: int) -> bool:
    """True when the request fits whatever the tokenizer: byte-level BPE (Qwen's) never makes
    more tokens than the text has UTF-8 bytes, so a prompt this short needs no /tokenize."""
    messages = build_messages(variant, prompt)
    bound = sum(len(m["content"].encode()) + TEMPLATE_SLACK for m in messages) + TEMPLATE_SLACK
    return bound + variant.max_tokens <= max_model_len


async def preflight(base_url: str, api_key: str, model: str, max_model_len: int | None,
                    variant: Variant, prompt: str, *,
                    token_count: TokenCount = atokenize_count) -> None:
    """One variant against the server's context (the prompt itself: check_prompt, once)."""
    check_fits(variant, prompt, max_model_len, None)  # max_tokens alone, without a request
    if max_model_len and not surely_fits(variant, prompt, max_model_len):
        tokens = await token_count(base_url, api_key, tokenize_body(model, variant, prompt))
        check_fits(variant, prompt, max_model_len, tokens)
