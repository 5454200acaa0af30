"""The control row of benchmarks/ui_fidelity.py: the smallest Gradio app that streams text.

Four read-only textboxes, one button; each click yields 4 growing texts every INTERVAL_S
(50 updates/s) from an async generator and appends (wall time of each yield, text length) to
the JSON-lines file named by UI_CONTROL_LOG. Whatever lag a browser shows here is Gradio's and
the machine's floor, which the playground's own lag is compared with.

    UI_CONTROL_LOG=/tmp/log.jsonl GRADIO_SERVER_PORT=7999 python benchmarks/ui_control_app.py
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path

import gradio as gr

N_BOXES = 4
INTERVAL_S = 0.02
UPDATES = 120  # 2.4 s of streaming, like a 64-token stream on the CPU demo server
PIECE = "字ab "  # each update appends a few characters, as a token chunk does


def main() -> None:
    log = Path(os.environ["UI_CONTROL_LOG"])

    async def stream() -> AsyncIterator[list[str]]:
        texts = [""] * N_BOXES
        stamps: list[tuple[float, int]] = []
        yield texts
        await asyncio.sleep(0.2)  # the cleared boxes are painted before the first text
        for _ in range(UPDATES):
            await asyncio.sleep(INTERVAL_S)
            texts = [t + PIECE for t in texts]
            stamps.append((time.time(), len(texts[0])))
            yield texts
        with log.open("a") as f:
            f.write(json.dumps(stamps) + "\n")

    with gr.Blocks(title="control") as demo:
        boxes = [gr.Textbox(label=f"answer {i + 1}", lines=6, max_lines=12, interactive=False,
                            elem_id=f"answer-{i}") for i in range(N_BOXES)]
        gr.Button("Run").click(stream, None, boxes, api_name=False)
    demo.queue().launch(server_name="127.0.0.1")


if __name__ == "__main__":
    main()
