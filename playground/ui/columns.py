"""Variant columns: the ONE field table between a Variant and a column's controls (pure: no
gradio; ui/column_view draws each row's widget).

Every row names a Variant field, the widget that shows it, and both directions: the control's
value for a preset (`to_control`) and the field's value from the control (`to_variant`, which
names the control when the value is wrong). Building a column, loading a preset into it,
reading it at Run, saving it as a preset and "View code" all go through this table, so they
cannot drift apart. `None` stays `None` (an empty box means "the server's default"), and a
field without a row is carried from the column's preset, never dropped: what a column sends
is exactly what `request.build` makes of the preset -- what `playground run` sends.

Adding a toggle: one `Field` row here (and its request mapping in core/request).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from playground.errors import PresetError, ValidationFailed
from playground.specs.limits import MAX_SPEC_VALUES, check_tree, parse_json
from playground.specs.presets import GuidedJson, PresetLibrary, PromptVariant, Variant, first_error

MAX_COLUMNS = 4
PROMPT_CHOICES = ["long", "minimal", "none", "custom"]
CUSTOM = "custom"
NO_SCHEMA = "none"
CLIENT_CHOICES = ["auto", "openai", "raw", "langchain"]
MAX_CUSTOM_TEXT = 20_000

# How ui/column_view draws a row: a checkbox; a number box (empty = None); a whole-number box;
# a choice of named prompts + a custom text box; a choice of schemas + a pasted schema; a list.
Widget = Literal["checkbox", "number", "whole", "prompt", "schema", "client"]
# Where the row sits in the column: the toggles' row, the main list, the "sampling" accordion.
Place = Literal["toggles", "main", "sampling"]


@dataclass(frozen=True)
class Field:
    """One row of the table: a Variant field and the control that shows it."""

    name: str  # the Variant field (and the key of its control's value)
    widget: Widget
    label: str
    place: Place
    to_control: Callable[[Variant, PresetLibrary], Any]
    to_variant: Callable[[Any, PresetLibrary, Variant], Any]

    @property
    def parts(self) -> int:
        """Components the widget uses (a choice and its custom text box for two of them)."""
        return 2 if self.widget in ("prompt", "schema") else 1


def _number(label: str) -> Callable[[Any, PresetLibrary, Variant], float | None]:
    def read(value: Any, _lib: PresetLibrary, _base: Variant) -> float | None:
        if value is None or value == "":
            return None
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ValidationFailed(label, f"{value!r} is not a number (empty = the server's "
                                   "default)") from None
    return read


def _int_or_none(value: Any, field: str = "number") -> int | None:
    if value is None or value == "":
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValidationFailed(field, f"{value!r} is not a whole number") from None
    if not number.is_integer():
        raise ValidationFailed(field, f"{value!r} is not a whole number")
    return int(number)


def _whole(field: str) -> Callable[[Any, PresetLibrary, Variant], int | None]:
    return lambda value, _lib, _base: _int_or_none(value, field)


def _prompt_control(v: Variant, _lib: PresetLibrary) -> tuple[str, str]:
    if v.prompt.name in PROMPT_CHOICES and v.prompt.name != CUSTOM:
        return v.prompt.name, ""
    return CUSTOM, v.prompt.text


def _prompt_variant(value: Sequence[Any], library: PresetLibrary, _base: Variant
                    ) -> PromptVariant:
    choice, text = str(value[0] or "none"), str(value[1] or "")
    if choice == "none":
        return PromptVariant()
    if choice == CUSTOM:
        if not text.strip():
            raise ValidationFailed("system prompt", "custom is selected but the text is empty")
        if len(text) > MAX_CUSTOM_TEXT:
            raise ValidationFailed("custom system prompt", f"longer than {MAX_CUSTOM_TEXT} "
                                   "characters")
        return PromptVariant(name=CUSTOM, text=text.strip())
    if choice not in library.prompt_names():
        raise ValidationFailed("system prompt", f"unknown prompt {choice!r}")
    path = library.presets_dir / "prompts" / f"{choice}.txt"
    return PromptVariant(name=choice, text=path.read_text("utf-8").strip())


def _schema_control(v: Variant, library: PresetLibrary) -> tuple[str, str]:
    g = v.guided_json
    if g is None:
        return NO_SCHEMA, ""
    if g.name in library.schema_names() and _shipped_schema(library, g.name) == g.json_schema:
        return g.name, ""
    return CUSTOM, json.dumps(g.json_schema, ensure_ascii=False, indent=2)


def _shipped_schema(library: PresetLibrary, name: str) -> Any:
    return json.loads((library.presets_dir / "schemas" / f"{name}.json").read_text("utf-8"))


def _schema_variant(value: Sequence[Any], library: PresetLibrary, base: Variant
                    ) -> GuidedJson | None:
    choice, text = str(value[0] or NO_SCHEMA), str(value[1] or "").strip()
    if choice == NO_SCHEMA:
        return None
    if choice == CUSTOM:
        if not text:
            raise ValidationFailed("guided JSON schema", "custom is selected but the box is "
                                   "empty; paste a JSON Schema")
        if len(text) > MAX_CUSTOM_TEXT:
            raise ValidationFailed("guided JSON schema", f"longer than {MAX_CUSTOM_TEXT} "
                                   "characters")
        try:  # within specs/limits' depth and size: a 10,000-deep paste is named, not a 500
            schema = parse_json(text, "custom schema")
            check_tree(schema, "custom schema", max_values=MAX_SPEC_VALUES)
        except PresetError as e:
            raise ValidationFailed("guided JSON schema", f"{e.reason}; paste a JSON Schema "
                                   "object") from None
        # the preset's own schema, unchanged, keeps its name (sent as json_schema.name)
        same = base.guided_json is not None and base.guided_json.json_schema == schema
        name = base.guided_json.name if same and base.guided_json else CUSTOM
    else:
        if choice not in library.schema_names():
            raise ValidationFailed("guided JSON schema", f"unknown schema {choice!r}")
        schema, name = _shipped_schema(library, choice), choice
    try:
        return GuidedJson(name=name, schema=schema)
    except ValidationError as e:
        raise ValidationFailed("guided JSON schema", first_error(e)[1]) from None


def _flag(field: str) -> Field:
    labels = {"stream": "stream", "thinking": "thinking",
              "ignore_eos": "fixed length (ignore_eos)"}
    return Field(field, "checkbox", labels[field], "toggles",
                 lambda v, _lib: bool(getattr(v, field)),
                 lambda value, _lib, _base: bool(value))


def _plain(field: str, widget: Widget, label: str, place: Place,
           read: Callable[[Any, PresetLibrary, Variant], Any]) -> Field:
    return Field(field, widget, label, place, lambda v, _lib: getattr(v, field), read)


FIELDS: tuple[Field, ...] = (
    _flag("stream"),
    _flag("thinking"),
    _flag("ignore_eos"),
    _plain("temperature", "number", "temperature (empty = server default)", "main",
           _number("temperature")),
    _plain("top_p", "number", "top_p (empty = server default)", "sampling",
           _number("top_p")),
    _plain("top_k", "whole", "top_k (empty = server default)", "sampling", _whole("top_k")),
    _plain("seed", "whole", "seed (empty = random)", "sampling", _whole("seed")),
    _plain("max_tokens", "whole", "max_tokens", "main",
           lambda value, _lib, _base: _int_or_none(value, "max_tokens") or 0),
    Field("prompt", "prompt", "system prompt", "main", _prompt_control, _prompt_variant),
    Field("guided_json", "schema", "guided JSON", "main", _schema_control, _schema_variant),
    _plain("client", "client", "client (auto = the openai SDK)", "main",
           lambda value, _lib, _base: str(value or "auto")),
)
FIELD_NAMES = tuple(f.name for f in FIELDS)
# the components of one column's controls, in table order (composite rows use two)
N_COMPONENTS = sum(f.parts for f in FIELDS)


def controls_from_variant(v: Variant, library: PresetLibrary) -> dict[str, Any]:
    """The value of each row's control for preset `v` (a pair for the composite rows)."""
    return {f.name: f.to_control(v, library) for f in FIELDS}


def flat(values: Mapping[str, Any]) -> list[Any]:
    """Row values -> one value per component, in table order (what Gradio sends and sets)."""
    out: list[Any] = []
    for f in FIELDS:
        out += list(values[f.name]) if f.parts == 2 else [values[f.name]]
    return out


def grouped(components: Sequence[Any]) -> dict[str, Any]:
    """One value per component, in table order -> row values."""
    if len(components) != N_COMPONENTS:
        raise ValueError(f"{len(components)} control values, expected {N_COMPONENTS}")
    out, i = {}, 0
    for f in FIELDS:
        out[f.name] = tuple(components[i:i + 2]) if f.parts == 2 else components[i]
        i += f.parts
    return out


def variant_from_controls(values: Mapping[str, Any], base: Variant, library: PresetLibrary,
                          name: str | None = None) -> Variant:
    """The column's Variant: the preset `base` with every row's field taken from its control
    (fields without a row are the preset's); ValidationFailed names the control and the fix."""
    data: dict[str, Any] = {**base.model_dump(), "name": name or base.name}
    for f in FIELDS:
        data[f.name] = f.to_variant(values[f.name], library, base)
    try:
        return Variant.model_validate(data)
    except ValidationError as e:
        field, reason = first_error(e)
        raise ValidationFailed(field, reason) from None


def columns_asked(value: Any, strict: bool = False) -> int:
    """How many columns a plan runs: 2 to MAX_COLUMNS. A plan sent by hand with another
    count is named (`strict`: ValidationFailed "variants") before anything is sent; otherwise
    the count is kept in range, so the columns can say so."""
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = -1
    if strict and not 2 <= n <= MAX_COLUMNS:
        raise ValidationFailed("variants", f"{value!r} columns asked; the playground runs 2 "
                               f"to {MAX_COLUMNS} -- pick a number in that range")
    return min(max(n, 2), MAX_COLUMNS)

