"""Typed presets (pydantic, unknown keys rejected) and loading of presets/*.yaml.

A variant file may refer to a system prompt by name (presets/prompts/NAME.txt) and to a JSON
Schema by name (presets/schemas/NAME.json); the loader resolves both before validation, so a
`Variant` always carries the actual text and schema it will send. Errors name file, field, reason.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from playground.errors import PresetError, ValidationFailed
from playground.specs.limits import (
    MAX_DEPTH,
    MAX_SPEC_BYTES,
    MAX_SPEC_VALUES,
    check_tree,
    read_text,
)

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MAX_SCHEMA_BYTES = 32_000
MAX_USER_PRESETS = 1_000  # saved presets the user folder keeps (all visitors together)


class PromptVariant(BaseModel):
    """A system prompt: a named one from presets/prompts/, or custom text. Empty text = none."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = "none"
    text: str = ""


class GuidedJson(BaseModel):
    """A JSON Schema the output must follow (sent as response_format json_schema)."""

    # populate_by_name: documents dumped without aliases (older results.json) load too
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    name: str = "schema"
    json_schema: dict[str, Any] = Field(alias="schema")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", v):
            raise ValueError("must be 1-64 letters, digits, '_' or '-' (OpenAI's rule for names)")
        return v

    @field_validator("json_schema")
    @classmethod
    def _valid_schema(cls, v: dict[str, Any]) -> dict[str, Any]:
        check_json_schema(v)
        return v


def check_json_schema(schema: object) -> None:
    """Raise ValueError unless `schema` is a small, valid JSON Schema object."""
    import jsonschema

    if not isinstance(schema, dict):
        raise ValueError("a JSON Schema must be a JSON object")
    if len(json.dumps(schema)) > MAX_SCHEMA_BYTES:
        raise ValueError(f"schema is larger than {MAX_SCHEMA_BYTES} bytes")
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as e:
        path = "/".join(str(p) for p in e.absolute_path) or "(root)"
        raise ValueError(f"invalid JSON Schema at {path}: {e.message}") from None


class Variant(BaseModel):
    """One way of calling the model: every toggle the playground compares."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    name: str
    description: str = ""
    stream: bool = True
    thinking: bool = False
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    top_k: int | None = Field(default=None, ge=-1)
    seed: int | None = None
    max_tokens: int = Field(default=256, ge=1, le=131072)
    min_tokens: int | None = Field(default=None, ge=0)
    ignore_eos: bool = False
    # vLLM's per-request reasoning budget (`thinking_token_budget`): after this many reasoning
    # tokens the server forces `</think>` and the answer starts. Needs thinking on.
    thinking_budget: int | None = Field(default=None, ge=1, le=131072)
    # Start the answer with "<think>\n" (continue_final_message). vLLM's budget counts from that
    # token; a trained Qwen3 writes it itself, the random-weight demo model never does.
    think_prefill: bool = False
    prompt: PromptVariant = PromptVariant()
    guided_json: GuidedJson | None = None
    # A variant may target its own server: a URL, or a server preset (presets/servers/) that
    # a benchmark starts as a managed server of its own. None = the session's server.
    base_url: str | None = None
    server: str | None = None
    # Which client reads the answer: "openai" (the SDK, the code "View code" shows), "raw"
    # (the same body read the way vllm bench serve reads it), or "auto" (the SDK in the
    # Playground, raw in the benchmark lab), or "langchain" (langchain-openai's ChatOpenAI, an
    # optional extra). Compare them to see a client's own overhead.
    client: Literal["auto", "openai", "raw", "langchain"] = "auto"
    # The dialect of the server the variant is sent to: "vllm", or "transformers" (Hugging Face
    # `transformers serve`, which rejects vLLM's extra parameters). A benchmark sets it from the
    # server preset a variant names.
    engine: Literal["vllm", "transformers"] = "vllm"

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not NAME_RE.fullmatch(v):
            raise ValueError("use 1-64 letters, digits, '.', '_' or '-', starting with a letter "
                             "or digit")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> Variant:
        if self.base_url and self.server:
            raise ValueError("give either base_url or server (a server preset), not both")
        if (self.thinking_budget is not None or self.think_prefill) and not self.thinking:
            raise ValueError("thinking_budget and think_prefill need thinking: true")
        if self.min_tokens is not None and self.min_tokens > self.max_tokens:
            raise ValueError(f"min_tokens ({self.min_tokens}) must not exceed max_tokens "
                             f"({self.max_tokens})")
        if self.engine == "transformers":
            unsupported = [name for name, on in (
                ("guided_json", self.guided_json is not None),
                ("thinking_budget", self.thinking_budget is not None),
                ("think_prefill", self.think_prefill)) if on]
            if unsupported:
                raise ValueError(f"{', '.join(unsupported)} cannot run on engine transformers "
                                 "(transformers serve has no guided decoding, thinking budget "
                                 "or prefilled turn): remove it, or use engine vllm")
        return self


# ---------------------------------------------------------------------------------------------
# loading


def safe_child(folder: Path, name: str, suffix: str, what: str) -> Path:
    """`folder/name+suffix`, refusing names that could escape the folder."""
    if not NAME_RE.fullmatch(name) or ".." in name:
        raise ValueError(f"{what} name {name!r} is not a plain name (letters, digits, . _ -)")
    path = (folder / f"{name}{suffix}").resolve()
    if folder.resolve() not in path.parents:
        raise ValueError(f"{what} {name!r} points outside {folder}")
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in folder.glob(f"*{suffix}"))) or "none"
        raise ValueError(f"unknown {what} {name!r} (known: {known})")
    return path


def resolve_refs(data: dict[str, Any], presets_dir: Path) -> dict[str, Any]:
    """Replace `prompt: NAME` and `guided_json: NAME` by their content."""
    out = dict(data)
    prompt = out.get("prompt")
    if isinstance(prompt, str):
        if prompt == "none":
            out["prompt"] = {"name": "none", "text": ""}
        else:
            try:
                path = safe_child(presets_dir / "prompts", prompt, ".txt", "prompt")
            except ValueError as e:
                raise FieldError("prompt", str(e)) from None
            out["prompt"] = {"name": prompt, "text": path.read_text(encoding="utf-8").strip()}
    schema = out.get("guided_json")
    if isinstance(schema, str):
        try:
            path = safe_child(presets_dir / "schemas", schema, ".json", "schema")
        except ValueError as e:
            raise FieldError("guided_json", str(e)) from None
        out["guided_json"] = {"name": schema, "schema": json.loads(path.read_text("utf-8"))}
    return out


class FieldError(Exception):
    def __init__(self, field: str, reason: str) -> None:
        self.field, self.reason = field, reason



def first_error(err: ValidationError) -> tuple[str, str]:
    """(dotted field, reason) of a pydantic error, worded for people."""
    e = err.errors()[0]
    field = ".".join(str(p) for p in e["loc"]) or "(file)"
    reason = e["msg"]
    if e["type"] == "extra_forbidden":
        reason = "unknown key (check the spelling; see presets/variants/*.yaml for the fields)"
    return field, reason.removeprefix("Value error, ")


def variant_from_dict(data: object, presets_dir: Path, *, source: str = "variant") -> Variant:
    if not isinstance(data, dict):
        raise PresetError("(file)", "expected a mapping of fields", source=source)
    try:
        return Variant.model_validate(resolve_refs(data, presets_dir))
    except FieldError as e:
        raise PresetError(e.field, e.reason, source=source) from None
    except ValidationError as e:
        raise PresetError(*first_error(e), source=source) from None


def load_yaml(path: Path) -> object:
    """A preset / experiment / ladder / server YAML, within specs/limits' size, depth and
    value-count limits (an alias bomb or a deep nesting is a named error)."""
    text = read_text(path, MAX_SPEC_BYTES)
    try:
        data = yaml.safe_load(text)
    except RecursionError:
        raise PresetError("(file)", f"nests deeper than {MAX_DEPTH} levels",
                          source=str(path)) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "(file)"
        raise PresetError(where, f"not valid YAML: {getattr(e, 'problem', e)}",
                          source=str(path)) from None
    check_tree(data, str(path), max_values=MAX_SPEC_VALUES)
    return data


class PresetLibrary:
    """Shipped variants (presets/variants) plus the user's (user_presets/variants).

    A bad file never hides the good ones: its error is collected in `errors`.
    """

    def __init__(self, presets_dir: Path, user_dir: Path | None = None) -> None:
        self.presets_dir = presets_dir
        self.user_dir = user_dir
        self.variants: dict[str, Variant] = {}
        self.errors: list[PresetError] = []
        self.reload()

    def reload(self) -> None:
        self.variants, self.errors = {}, []
        folders = [self.presets_dir / "variants"]
        if self.user_dir is not None:
            folders.append(self.user_dir / "variants")
        for folder in folders:
            for path in sorted(folder.glob("*.yaml")):
                try:
                    v = variant_from_dict(load_yaml(path), self.presets_dir, source=str(path))
                except PresetError as e:
                    self.errors.append(e)
                    continue
                if v.name != path.stem:
                    self.errors.append(PresetError(
                        "name", f"{v.name!r} differs from the file name {path.stem!r}",
                        source=str(path)))
                    continue
                self.variants.setdefault(v.name, v)  # shipped presets win over user ones

    def get(self, name: str) -> Variant:
        if name not in self.variants:
            known = ", ".join(sorted(self.variants)) or "none"
            raise ValidationFailed("variant", f"unknown preset {name!r}; known presets: {known}")
        return self.variants[name]

    def prompt_names(self) -> list[str]:
        return sorted(p.stem for p in (self.presets_dir / "prompts").glob("*.txt"))

    def schema_names(self) -> list[str]:
        return sorted(p.stem for p in (self.presets_dir / "schemas").glob("*.json"))

    def save_user_variant(self, variant: Variant, *, overwrite: bool = False) -> Path:
        """Write a user preset; refuses to shadow a shipped one, and to replace a saved one
        unless `overwrite` (the UI allows it for a name the same visitor saved)."""
        if self.user_dir is None:
            raise ValidationFailed("preset", "no user presets folder is configured")
        if (self.presets_dir / "variants" / f"{variant.name}.yaml").exists():
            raise ValidationFailed("name", f"{variant.name!r} is a shipped preset; pick another "
                                   "name")
        folder = self.user_dir / "variants"
        folder.mkdir(parents=True, exist_ok=True)
        path = _safe_target(folder, variant.name)
        if path.exists() and not overwrite:
            raise ValidationFailed("name", f"a saved preset {variant.name!r} already exists "
                                   "(saved by someone else, or earlier) -- pick another name")
        if not path.exists() and len(list(folder.glob("*.yaml"))) >= MAX_USER_PRESETS:
            raise ValidationFailed("name", f"{MAX_USER_PRESETS:,} presets are saved here, the "
                                   "most kept -- replace one of yours, or ask the operator")
        data = variant.model_dump(mode="json", by_alias=True, exclude_defaults=True)
        data["name"] = variant.name
        path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), "utf-8")
        self.reload()
        return path


def _safe_target(folder: Path, name: str) -> Path:
    if not NAME_RE.fullmatch(name) or ".." in name:
        raise ValidationFailed("name", f"{name!r} is not a plain name (letters, digits, . _ -)")
    return folder / f"{name}.yaml"
