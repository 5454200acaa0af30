"""Hugging Face Spaces entry point: the embedded default, then the Gradio UI."""

import os

from playground.settings import Settings
from playground.ui.app import launch

if __name__ == "__main__":
    launch(Settings.from_env(), host=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
           port=int(os.environ.get("GRADIO_SERVER_PORT", "7860")))
