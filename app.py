"""Hugging Face Spaces entry point: the embedded default, headless for now (UI: issue 2/8)."""

from playground.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["demo"]))
