"""The whole page: the tabs inside one gr.Blocks, the CSS, and the programmatic API."""

from __future__ import annotations

import gradio as gr

from playground.ui.context import UIContext

CSS = """
.variant-error p { color: #b00020; font-weight: 600; }
#demo-banner { background: #fff4e5; border-left: 4px solid #f58518; padding: 6px 12px; }
"""


def build_ui(ctx: UIContext) -> gr.Blocks:
    from playground.ui import bench_tab, claims_tab, playground_tab, server_tab

    with gr.Blocks(title="qwen-latency-lab") as demo:
        gr.Markdown("# qwen-latency-lab\nWhy does one way of calling Qwen3-0.6B answer in 20 ms "
                    "and another in 2 s? Line up variants, send one prompt, watch.")
        if ctx.banner:
            gr.Markdown(f"⚠️ {ctx.banner}", elem_id="demo-banner")
        with gr.Tabs():
            with gr.Tab("Playground"):
                playground_tab.build(ctx, demo)
            with gr.Tab("Benchmark"):
                bench_tab.build(ctx)
            with gr.Tab("Claims"):
                claims_tab.build(ctx)
            with gr.Tab("Server"):
                server_tab.build(ctx)
        _api(ctx)
    demo.queue(default_concurrency_limit=ctx.concurrency_limit, max_size=128)
    return demo


def _api(ctx: UIContext) -> None:
    """A programmatic endpoint (gradio_client / "Use via API"): one comparison by preset names."""
    from playground.core.compare import compare
    from playground.core.record import RequestRecord
    from playground.errors import PlaygroundError

    async def compare_presets(prompt: str, presets: list[str]) -> list[dict]:
        """Send `prompt` to the named presets at once; returns every measured request."""
        try:
            variants = [ctx.library.get(name) for name in presets]
            recs = await ctx.measure.run(compare(ctx.settings, variants, prompt))
        except PlaygroundError as e:
            raise gr.Error(str(e)) from None
        ctx.store_run(list(recs))
        return [RequestRecord.of(r).line() for r in recs]

    gr.api(compare_presets, api_name="compare", concurrency_limit=ctx.concurrency_limit,
           concurrency_id="runs")
