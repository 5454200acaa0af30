"""One variant column of the Playground tab: its components (the controls of the field table in
ui/columns, and the outputs), how they are laid out, and the events that keep its preset,
custom boxes and "View code" in step."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import gradio as gr

from playground.core import request
from playground.errors import ValidationFailed
from playground.specs.presets import PresetLibrary, Variant
from playground.ui import ids
from playground.ui.columns import (
    CLIENT_CHOICES,
    CUSTOM,
    FIELDS,
    NO_SCHEMA,
    PROMPT_CHOICES,
    Field,
    controls_from_variant,
    grouped,
    variant_from_controls,
)
from playground.ui.context import UIContext

DEFAULT_COLUMN_PRESETS = ["seed-default", "all-optimizations", "streaming", "thinking-off"]


@dataclass
class Column:
    """The components of one variant column: `inputs` holds each field-table row's
    component(s) by field name, in table order."""

    box: Any
    preset: Any
    inputs: dict[str, list[Any]] = field(default_factory=dict)
    answer: Any = None
    reasoning: Any = None
    reasoning_panel: Any = None  # opened by the page's "show reasoning"
    badge: Any = None
    metrics: Any = None
    error: Any = None
    code_py: Any = None
    code_curl: Any = None
    phases: Any = None
    title: Any = None  # "Variant 1", or what a ladder played in it

    def controls(self) -> list[Any]:
        """Every control's component, in table order (what Run, Save and View code read)."""
        return [c for f in FIELDS for c in self.inputs[f.name]]

    def outputs(self) -> list[Any]:
        return [self.answer, self.reasoning, self.badge, self.metrics, self.error, self.phases]


def _widget(f: Field, value: Any, i: int, ctx: UIContext) -> list[Any]:
    """The component(s) of one row, holding `value`."""
    if f.widget == "checkbox":
        return [gr.Checkbox(value, label=f.label)]
    if f.widget == "number":
        return [gr.Number(value, label=f.label)]
    if f.widget == "whole":
        return [gr.Number(value, label=f.label, precision=0)]
    if f.widget == "client":
        return [gr.Dropdown(CLIENT_CHOICES, value=value, label=f.label, elem_id=f"client-{i}")]
    choice, text = value
    if f.widget == "prompt":
        return [gr.Radio(PROMPT_CHOICES, value=choice, label=f.label),
                gr.Textbox(text, label="custom system prompt", lines=2,
                           visible=choice == CUSTOM)]
    schemas = [NO_SCHEMA, *ctx.library.schema_names(), CUSTOM]
    return [gr.Dropdown(schemas, value=choice, label=f.label),
            gr.Code(text, language="json", label=f"pasted JSON Schema {i + 1}",
                    visible=choice == CUSTOM, interactive=True)]


def column(i: int, ctx: UIContext) -> Column:
    names = sorted(ctx.library.variants)
    preset_name = DEFAULT_COLUMN_PRESETS[i]
    values = controls_from_variant(ctx.library.get(preset_name), ctx.library)
    rows = {place: [f for f in FIELDS if f.place == place]
            for place in ("toggles", "main", "sampling")}
    with gr.Column(visible=i < 2, min_width=280) as box:
        title = gr.Markdown(column_title(i))
        col = Column(box, None, title=title)
        with gr.Column(elem_classes=["pv-hide"]):
            col.preset = gr.Dropdown(names, value=preset_name, label=f"preset {i + 1}")
            with gr.Row():
                for f in rows["toggles"]:
                    col.inputs[f.name] = _widget(f, values[f.name], i, ctx)
            for f in rows["main"]:
                if f.name == "max_tokens":  # sampling sits between temperature and length
                    with gr.Accordion("sampling & length", open=False):
                        for s in rows["sampling"]:
                            col.inputs[s.name] = _widget(s, values[s.name], i, ctx)
                col.inputs[f.name] = _widget(f, values[f.name], i, ctx)
        col.error = gr.Markdown(elem_classes=["variant-error"], elem_id=f"error-{i}")
        # the live feed's status line (never a Gradio value: only the feed writes it)
        gr.HTML(f'<div id="{ids.col(ids.LIVE_STATUS, i)}" class="live-status"></div>')
        col.metrics = gr.Markdown("", elem_id=ids.col(ids.METRICS, i))
        col.phases = gr.HTML("", elem_id=ids.col(ids.PHASES, i))
        col.badge = gr.Markdown("", elem_id=ids.col(ids.BADGE, i))
        col.answer = gr.Textbox(label=f"answer {i + 1}", lines=6, max_lines=12,
                                interactive=False, elem_id=ids.col(ids.ANSWER, i))
        with gr.Accordion("reasoning", open=False,
                          elem_id=f"reasoning-panel-{i}") as col.reasoning_panel:
            col.reasoning = gr.Textbox(label=f"reasoning {i + 1}", lines=4, max_lines=10,
                                       interactive=False, elem_id=ids.col(ids.REASONING, i))
        with gr.Accordion("View code", open=False):
            col.code_py = gr.Code(language="python", label=f"Python (openai SDK, or LangChain "
                                  f"for client langchain) {i + 1}",
                                  interactive=False, elem_id=f"code-py-{i}")
            col.code_curl = gr.Code(language="shell", label=f"curl {i + 1}", interactive=False,
                                    elem_id=ids.col(ids.CODE_CURL, i))
    return col


def read_variant(ctx: UIContext, preset: str | None, vals: Sequence[Any],
                 name: str | None = None) -> Variant:
    """A column's Variant from its preset's name and its controls' values (table order):
    fields without a control are the preset's. ValidationFailed names the control."""
    if preset not in ctx.library.variants:
        raise ValidationFailed("preset", f"unknown preset {preset!r}; pick one from the list")
    return variant_from_controls(grouped(list(vals)), ctx.library.get(preset), ctx.library,
                                 name=name)


def column_title(i: int, step: str = "") -> str:
    return f"### Variant {i + 1}" + (f" · {step}" if step else "")


def control_values(v: Variant, library: PresetLibrary) -> list[Any]:
    """Every control's new value for variant `v`, in table order (Column.controls)."""
    values = controls_from_variant(v, library)
    out: list[Any] = []
    for f in FIELDS:
        if f.parts == 2:  # the custom box shows only when "custom" is chosen
            choice, text = values[f.name]
            out += [choice, text]  # its visibility follows the choice (wire_column)
        else:
            out.append(values[f.name])
    return out


def code_pair(ctx: UIContext, name: str, url: str, model_name: str | None,
              vals: Sequence[Any]) -> list[str]:
    """View code's two snippets (Python, curl) for a column's preset and control values."""
    try:
        v = read_variant(ctx, name, vals)
    except ValidationFailed as e:
        return [f"# fix this first: {e}", f"# fix this first: {e}"]
    req = request.build(v, "<your prompt>", model_name or "Qwen/Qwen3-0.6B")
    return [request.code_snippet(req, url, v.client), request.curl_snippet(req, url)]


# a preset picked: its hand-over is due (static/live.js: a click waits for it)
PICK_JS = "(name) => { if (window.qllEdited) window.qllEdited(); return name; }"


def wire_column(i: int, c: Column, ctx: UIContext, base_url: Any, model: Any) -> Any:
    """The column's own events; returns the preset pick's event (a Stage.writes entry)."""

    def load_preset(name: str) -> list[Any]:  # the column is the user's again: its plain title
        return [column_title(i), *control_values(ctx.library.get(name), ctx.library)]

    for f in FIELDS:
        if f.parts == 2:
            choice, box = c.inputs[f.name]
            choice.change(lambda v: gr.update(visible=v == CUSTOM), choice, box,
                          api_name=False, queue=False, show_progress="hidden")

    def show_code(name: str, url: str, model_name: str | None, *vals: Any) -> list[str]:
        return code_pair(ctx, name, url, model_name, vals)

    # the visitor's edits only: what the app writes is followed by Stage.writes' chain
    gr.on([x.input for x in c.controls()] + [model.change], show_code,
          [c.preset, base_url, model, *c.controls()], [c.code_py, c.code_curl],
          api_name=False, show_progress="hidden", queue=False)
    return c.preset.select(load_preset, c.preset, [c.title, *c.controls()], api_name=False,
                           queue=False, js=PICK_JS)


def all_code(ctx: UIContext, columns: Sequence[Column], base_url: Any, model: Any
             ) -> tuple[Any, list[Any], list[Any]]:
    """(fn, inputs, outputs) of one event that redraws every column's View code."""
    per = 1 + len(columns[0].controls())

    def show_all(url: str, model_name: str | None, *vals: Any) -> list[str]:
        out: list[str] = []
        for k in range(len(columns)):
            part = vals[k * per:(k + 1) * per]
            out += code_pair(ctx, part[0], url, model_name, part[1:])
        return out

    inputs = [base_url, model, *[x for c in columns for x in (c.preset, *c.controls())]]
    return show_all, inputs, [x for c in columns for x in (c.code_py, c.code_curl)]


def follow_writes(writes: Sequence[Any], ctx: UIContext, columns: Sequence[Column], base_url: Any,
                  model: Any, sync: Any, handed: list[Any], sync_js: str) -> None:
    """After each event in `writes` (Stage.writes): one hand-over of the page's inputs (`sync`,
    numbered by `sync_js`) and one event that redraws every column's View code."""
    show_all, code_inputs, code_outputs = all_code(ctx, columns, base_url, model)
    for w in writes:
        w.then(sync, handed, None, api_name=False, js=sync_js, queue=False,
               show_progress="hidden", preprocess=False)
        w.then(show_all, code_inputs, code_outputs, api_name=False, queue=False,
               show_progress="hidden")
