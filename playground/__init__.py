"""qwen-latency-lab: measure and show where the latency of a small model on vLLM comes from."""

__version__ = "0.1.0"
