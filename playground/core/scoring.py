"""Scoring an answer: JSON validity, schema validity, field-level exact match against gold."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import jsonschema


@dataclass(frozen=True)
class Score:
    json_valid: bool
    schema_valid: bool | None  # None when no schema was given
    schema_error: str | None = None
    fields: dict[str, bool] = field(default_factory=dict)  # per gold field: exact match

    @property
    def field_accuracy(self) -> float | None:
        return sum(self.fields.values()) / len(self.fields) if self.fields else None


def parse_json(text: str) -> Any:
    """The answer as JSON, tolerating a ```json fence (what free generation often adds)."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.strip("`")
        stripped = stripped.removeprefix("json").strip()
    return json.loads(stripped)


def score(text: str, schema: dict[str, Any] | None = None,
          gold: dict[str, Any] | None = None) -> Score:
    try:
        data = parse_json(text)
    except ValueError:
        return Score(False, False if schema is not None else None,
                     fields={k: False for k in gold} if gold else {})
    schema_ok: bool | None = None
    schema_err = None
    if schema is not None:
        try:
            jsonschema.validate(data, schema)
            schema_ok = True
        except jsonschema.ValidationError as e:
            schema_ok, schema_err = False, e.message
    fields = {}
    if gold:
        fields = {k: isinstance(data, dict) and _norm(data.get(k)) == _norm(v)
                  for k, v in gold.items()}
    return Score(True, schema_ok, schema_err, fields)


def _norm(value: object) -> str:
    return "" if value is None else str(value).strip()


def badge(s: Score) -> str:
    """One-line label for the UI."""
    if not s.json_valid:
        return "JSON: invalid"
    parts = ["JSON: valid"]
    if s.schema_valid is True:
        parts.append("schema-valid")
    elif s.schema_valid is False:
        parts.append(f"schema-INVALID ({s.schema_error})")
    if s.field_accuracy is not None:
        parts.append(f"fields {sum(s.fields.values())}/{len(s.fields)}")
    return " · ".join(parts)


def thinking_cut_off(thinking: bool, content: str) -> bool:
    """Thinking ran into max_tokens: no answer text, or `<think>` text leaking into it."""
    return thinking and (not content.strip() or "<think>" in content or "</think>" in content)
