"""One variant column of the Playground tab: its components (controls and outputs), how they
are laid out, and the events that keep its preset, custom boxes and "View code" in step."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from playground.core import request
from playground.errors import ValidationFailed
from playground.ui.columns import (
    CLIENT_CHOICES,
    CUSTOM,
    NO_SCHEMA,
    PROMPT_CHOICES,
    Controls,
    controls_from_variant,
    variant_from_controls,
)
from playground.ui.context import UIContext

DEFAULT_COLUMN_PRESETS = ["seed-default", "all-optimizations", "streaming", "thinking-off"]


@dataclass
class Column:
    """The components of one variant column."""

    box: Any
    preset: Any
    stream: Any
    thinking: Any
    temperature: Any
    top_p: Any
    top_k: Any
    seed: Any
    max_tokens: Any
    ignore_eos: Any
    prompt_choice: Any
    custom_prompt: Any
    schema_choice: Any
    custom_schema: Any
    client: Any = None
    answer: Any = None
    reasoning: Any = None
    badge: Any = None
    metrics: Any = None
    error: Any = None
    code_py: Any = None
    code_curl: Any = None
    phases: Any = None

    def controls(self) -> list[Any]:
        return [self.stream, self.thinking, self.temperature, self.top_p, self.top_k,
                self.seed, self.max_tokens, self.ignore_eos, self.prompt_choice,
                self.custom_prompt, self.schema_choice, self.custom_schema, self.client]

    def outputs(self) -> list[Any]:
        return [self.answer, self.reasoning, self.badge, self.metrics, self.error, self.phases]


def column(i: int, ctx: UIContext) -> Column:
    names = sorted(ctx.library.variants)
    preset_name = DEFAULT_COLUMN_PRESETS[i]
    c = controls_from_variant(ctx.library.get(preset_name))
    schemas = [NO_SCHEMA, *ctx.library.schema_names(), CUSTOM]
    with gr.Column(visible=i < 2, min_width=280) as box:
        gr.Markdown(f"### Variant {i + 1}")
        with gr.Column(elem_classes=["pv-hide"]):
            preset = gr.Dropdown(names, value=preset_name, label=f"preset {i + 1}")
            with gr.Row():
                stream = gr.Checkbox(c.stream, label="stream")
                thinking = gr.Checkbox(c.thinking, label="thinking")
                ignore_eos = gr.Checkbox(c.ignore_eos, label="fixed length (ignore_eos)")
            temperature = gr.Slider(0, 2, c.temperature, step=0.05, label="temperature")
            with gr.Accordion("sampling & length", open=False):
                top_p = gr.Slider(0.05, 1, c.top_p, step=0.05, label="top_p")
                top_k = gr.Number(c.top_k, label="top_k (empty = server default)", precision=0)
                seed = gr.Number(c.seed, label="seed (empty = random)", precision=0)
            max_tokens = gr.Number(c.max_tokens, label="max_tokens", precision=0)
            prompt_choice = gr.Radio(PROMPT_CHOICES, value=c.prompt_choice,
                                     label="system prompt")
            custom_prompt = gr.Textbox(c.custom_prompt, label="custom system prompt", lines=2,
                                       visible=c.prompt_choice == CUSTOM)
            schema_choice = gr.Dropdown(schemas, value=c.schema_choice, label="guided JSON")
            custom_schema = gr.Code(c.custom_schema if c.schema_choice == CUSTOM else "",
                                    language="json", label=f"pasted JSON Schema {i + 1}",
                                    visible=c.schema_choice == CUSTOM, interactive=True)
            client = gr.Dropdown(CLIENT_CHOICES, value=c.client,
                                 label="client (auto = the openai SDK)",
                                 elem_id=f"client-{i}")
        col = Column(box, preset, stream, thinking, temperature, top_p, top_k, seed,
                     max_tokens, ignore_eos, prompt_choice, custom_prompt, schema_choice,
                     custom_schema, client)
        col.error = gr.Markdown(elem_classes=["variant-error"], elem_id=f"error-{i}")
        # the live feed's status line (never a Gradio value: only the feed writes it)
        gr.HTML(f'<div id="live-status-{i}" class="live-status"></div>')
        col.metrics = gr.Markdown("", elem_id=f"metrics-{i}")
        col.phases = gr.HTML("", elem_id=f"phases-{i}")
        col.badge = gr.Markdown("", elem_id=f"badge-{i}")
        col.answer = gr.Textbox(label=f"answer {i + 1}", lines=6, max_lines=12,
                                interactive=False, elem_id=f"answer-{i}")
        with gr.Accordion("reasoning", open=False, elem_id=f"reasoning-panel-{i}"):
            col.reasoning = gr.Textbox(label=f"reasoning {i + 1}", lines=4, max_lines=10,
                                       interactive=False, elem_id=f"reasoning-{i}")
        with gr.Accordion("View code", open=False):
            col.code_py = gr.Code(language="python", label=f"Python (openai SDK, or LangChain "
                                  f"for client langchain) {i + 1}",
                                  interactive=False, elem_id=f"code-py-{i}")
            col.code_curl = gr.Code(language="shell", label=f"curl {i + 1}", interactive=False,
                                    elem_id=f"code-curl-{i}")
    return col


def _controls_values(name: str, vals: list[Any]) -> Controls:
    return Controls(name, *vals)


def controls_values(name: str, vals: list[Any]) -> Controls:
    return Controls(name, *vals)


def wire_column(c: Column, ctx: UIContext, base_url: Any, model: Any) -> None:
    def load_preset(name: str) -> list[Any]:
        v = ctx.library.get(name)
        k = controls_from_variant(v)
        return [k.stream, k.thinking, k.temperature, k.top_p, k.top_k, k.seed, k.max_tokens,
                k.ignore_eos, k.prompt_choice,
                gr.update(value=k.custom_prompt, visible=k.prompt_choice == CUSTOM),
                k.schema_choice,
                gr.update(value=k.custom_schema if k.schema_choice == CUSTOM else "",
                          visible=k.schema_choice == CUSTOM), k.client]

    c.preset.input(load_preset, c.preset, c.controls(), api_name=False)
    c.prompt_choice.change(lambda p: gr.update(visible=p == CUSTOM), c.prompt_choice,
                           c.custom_prompt, api_name=False)
    c.schema_choice.change(lambda s: gr.update(visible=s == CUSTOM), c.schema_choice,
                           c.custom_schema, api_name=False)

    def show_code(name: str, url: str, model_name: str | None, *vals: Any) -> list[str]:
        try:
            v = variant_from_controls(controls_values(name or "variant", list(vals)),
                                      ctx.library)
        except ValidationFailed as e:
            return [f"# fix this first: {e}", f"# fix this first: {e}"]
        req = request.build(v, "<your prompt>", model_name or "Qwen/Qwen3-0.6B")
        return [request.code_snippet(req, url, v.client), request.curl_snippet(req, url)]

    gr.on([x.change for x in [c.preset, *c.controls()]] + [model.change], show_code,
          [c.preset, base_url, model, *c.controls()], [c.code_py, c.code_curl],
          api_name=False, show_progress="hidden")
