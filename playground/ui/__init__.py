"""Gradio UI (the only package besides app.py that imports gradio): one module per tab,
the page in blocks.py, the shared live loops in live.py."""
