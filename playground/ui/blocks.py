"""The whole page: the tabs inside one gr.Blocks, the CSS, and the programmatic API."""

from __future__ import annotations

import gradio as gr

from playground.ui import compare_api
from playground.ui.context import UIContext

CSS = """
.variant-error p { color: #b00020; font-weight: 600; }
#demo-banner { background: #fff4e5; border-left: 4px solid #f58518; padding: 6px 12px; }
.hl-row { display: flex; gap: 10px; }
.hl-card { flex: 1; min-width: 0; border-radius: 8px; padding: 6px 12px; background: #f4f6fa;
           border-top: 4px solid #4c78a8; }
.hl-card.hl-1 { border-top-color: #f58518; } .hl-card.hl-2 { border-top-color: #54a24b; }
.hl-card.hl-3 { border-top-color: #e45756; }
.hl-name { font-weight: 600; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.hl-big { font-size: 1.9em; font-weight: 700; line-height: 1.15; }
.hl-label { font-size: 0.8em; color: #666; }
.hl-cmp { font-weight: 600; color: #555; }
.hl-cmp.hl-faster, .ladder-faster { color: #2e7d32; }
.hl-cmp.hl-slower, .ladder-slower { color: #c62828; }
.ladder-same { color: #555; }
.stale { opacity: 0.25; }
.hl-replay { font-weight: 600; color: #7c3aed; margin-bottom: 4px; }
#server-status[data-replay]::before { font-weight: 600; color: #7c3aed;
  content: "▶ " attr(data-replay) ": the numbers below are recorded, not this server's · "; }
.plot-title { font-weight: 600; color: #555; margin-top: 6px; }
.ladder-table td, .ladder-table th { padding: 2px 10px; }
/* what the live channel rewrites is laid out and painted on its own: a status line, the
   headline or the timeline changing does not make the browser lay out the whole page */
#hl-live, #tl-live, #bars-live, .live-status { contain: layout paint style; }
#hl-live { min-height: 84px; } #tl-live { min-height: 60px; }
[id^="answer-"] textarea, [id^="reasoning-"] textarea { contain: strict; }
.stage-buttons { display: flex; gap: 8px; height: 100%; }
.stage-btn { flex: 1; border-radius: 8px; padding: 8px 14px; font-weight: 600; cursor: pointer;
             border: 1px solid transparent; min-height: 42px; }
.stage-run { background: #f97316; color: white; } .stage-run:hover { background: #ea580c; }
.stage-stop { background: #fee2e2; color: #b91c1c; border-color: #fca5a5; }
.stage-stop:disabled { opacity: 0.45; cursor: not-allowed; }
.stage-note { color: #b00020; font-size: 0.9em; }
.stage-hidden { display: none !important; }
body.presenter .pv-hide { display: none !important; }
body.presenter #page-title { display: none !important; }
body.presenter .hl-big { font-size: 3.4em !important; }
body.presenter .hl-small, body.presenter .hl-cmp { font-size: 1.35em !important; }
body.presenter .hl-name { font-size: 1.2em !important; }
"""


def build_ui(ctx: UIContext) -> gr.Blocks:
    from playground.ui import bench_tab, claims_tab, playground_tab, server_tab

    with gr.Blocks(title="qwen-latency-lab") as demo:
        gr.Markdown("# qwen-latency-lab\nWhy does one way of calling Qwen3-0.6B answer in 20 ms "
                    "and another in 2 s? Line up variants, send one prompt, watch.",
                    elem_id="page-title")
        if ctx.banner:
            gr.Markdown(f"⚠️ {ctx.banner}", elem_id="demo-banner")
        with gr.Tabs():
            with gr.Tab("Playground") as play:
                connection = playground_tab.build(ctx, demo)
            with gr.Tab("Benchmark") as bench:
                bench_tab.build(ctx)
            with gr.Tab("Claims") as claims:
                claims_tab.build(ctx)
            with gr.Tab("Server") as server:
                timer, server_connection = server_tab.build(ctx)
        # The Server tab's status refresh (a Gradio event every 2 s) runs only while that tab
        # is open: it would otherwise keep every page's main thread busy (the stage's click ->
        # text) and send every idle visitor's page to the app.
        for tab in (play, bench, claims):
            tab.select(_timer_off, None, timer, api_name=False, show_progress="hidden")
        server.select(server_tab.opened, connection, [timer, server_connection],
                      api_name=False, show_progress="hidden")
        compare_api.register(ctx)
    demo.queue(default_concurrency_limit=ctx.concurrency_limit, max_size=128)
    return demo


def _timer_off() -> gr.Timer:
    return gr.Timer(active=False)
