"""Variant columns: the controls of one column <-> a Variant (pure mapping, no gradio)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from playground.errors import ValidationFailed
from playground.specs.presets import GuidedJson, PresetLibrary, PromptVariant, Variant, first_error

MAX_COLUMNS = 4
PROMPT_CHOICES = ["long", "minimal", "none", "custom"]
CUSTOM = "custom"
NO_SCHEMA = "none"
CLIENT_CHOICES = ["auto", "openai", "raw", "langchain"]
MAX_CUSTOM_TEXT = 20_000


@dataclass
class Controls:
    """The values of one column's controls, as the browser sent them."""

    name: str
    stream: bool
    thinking: bool
    temperature: float
    top_p: float
    top_k: float | None
    seed: float | None
    max_tokens: float | None
    ignore_eos: bool
    prompt_choice: str
    custom_prompt: str
    schema_choice: str
    custom_schema: str
    client: str = "auto"  # who reads the answer: auto (the SDK here), openai, raw, langchain


def controls_from_variant(v: Variant) -> Controls:
    prompt = v.prompt.name if v.prompt.name in PROMPT_CHOICES else CUSTOM
    if v.guided_json is None:
        schema_choice, custom = NO_SCHEMA, ""
    else:
        schema_choice = v.guided_json.name
        custom = json.dumps(v.guided_json.json_schema, ensure_ascii=False, indent=2)
    return Controls(
        name=v.name, stream=v.stream, thinking=v.thinking,
        temperature=1.0 if v.temperature is None else v.temperature,
        top_p=1.0 if v.top_p is None else v.top_p, top_k=v.top_k, seed=v.seed,
        max_tokens=v.max_tokens, ignore_eos=v.ignore_eos, prompt_choice=prompt,
        custom_prompt=v.prompt.text if prompt == CUSTOM else "",
        schema_choice=schema_choice, custom_schema=custom, client=v.client,
    )


def _int_or_none(value: float | None, field: str = "number") -> int | None:
    if value is None or value == "":
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValidationFailed(field, f"{value!r} is not a whole number") from None


def variant_from_controls(c: Controls, library: PresetLibrary) -> Variant:
    """Validate one column; ValidationFailed names the control and the fix."""
    if len(c.custom_prompt) > MAX_CUSTOM_TEXT or len(c.custom_schema) > MAX_CUSTOM_TEXT:
        raise ValidationFailed("custom text", f"longer than {MAX_CUSTOM_TEXT} characters")
    prompt = _prompt(c, library)
    guided = _schema(c, library)
    data: dict[str, Any] = dict(
        name=c.name or "variant", stream=c.stream, thinking=c.thinking,
        temperature=c.temperature, top_p=c.top_p, top_k=_int_or_none(c.top_k, "top_k"),
        seed=_int_or_none(c.seed, "seed"),
        max_tokens=_int_or_none(c.max_tokens, "max_tokens") or 0,
        ignore_eos=c.ignore_eos, prompt=prompt, guided_json=guided,
        client=c.client or "auto",
    )
    try:
        return Variant.model_validate(data)
    except ValidationError as e:
        field, reason = first_error(e)
        raise ValidationFailed(field, reason) from None


def _prompt(c: Controls, library: PresetLibrary) -> PromptVariant:
    if c.prompt_choice == "none":
        return PromptVariant()
    if c.prompt_choice == CUSTOM:
        if not c.custom_prompt.strip():
            raise ValidationFailed("system prompt", "custom is selected but the text is empty")
        return PromptVariant(name=CUSTOM, text=c.custom_prompt.strip())
    path = library.presets_dir / "prompts" / f"{c.prompt_choice}.txt"
    if c.prompt_choice not in library.prompt_names():
        raise ValidationFailed("system prompt", f"unknown prompt {c.prompt_choice!r}")
    return PromptVariant(name=c.prompt_choice, text=path.read_text("utf-8").strip())


def _schema(c: Controls, library: PresetLibrary) -> GuidedJson | None:
    if c.schema_choice == NO_SCHEMA:
        return None
    if c.schema_choice == CUSTOM:
        text = c.custom_schema.strip()
        if not text:
            raise ValidationFailed("guided JSON schema", "custom is selected but the box is "
                                   "empty; paste a JSON Schema")
        try:
            schema = json.loads(text)
        except ValueError as e:
            raise ValidationFailed("guided JSON schema", f"not valid JSON ({e}); paste a JSON "
                                   "Schema object") from None
        name = CUSTOM
    else:
        if c.schema_choice not in library.schema_names():
            raise ValidationFailed("guided JSON schema", f"unknown schema {c.schema_choice!r}")
        path = library.presets_dir / "schemas" / f"{c.schema_choice}.json"
        schema, name = json.loads(path.read_text("utf-8")), c.schema_choice
    try:
        return GuidedJson(name=name, schema=schema)
    except ValidationError as e:
        raise ValidationFailed("guided JSON schema", first_error(e)[1]) from None
