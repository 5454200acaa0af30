"""The physical floor of one decode step: the bytes every step must read / memory bandwidth.

At batch 1, generating one token reads every weight once (a decoder is memory-bound there),
so no server can produce tokens faster than `weight_bytes / bandwidth` per step.

    weight_bytes = bytes_per_param * (embedding + layers * per_layer [+ lm_head if untied])
    per_layer    = q (h * heads * head_dim) + k, v (h * kv_heads * head_dim each)
                   + o (heads * head_dim * h) + MLP (3 * h * intermediate) + norms
    floor_ms     = weight_bytes / bandwidth

Assumptions (stated wherever the floor is drawn): batch 1; the KV cache read per step is
ignored (small for short contexts: 2 * layers * kv_heads * head_dim * bytes per past token);
the input embedding lookup reads one row, but a tied lm_head reads the whole embedding
matrix, so it is counted once either way; activations and kernel launch overheads are
ignored; the bandwidth is the vendor's peak (or one measured copy on a CPU), never reached in
practice. The floor is a lower bound, not a prediction.
"""

from __future__ import annotations

import functools
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "float8": 1, "int8": 1, "int4": 0.5}

# Peak memory bandwidth (bytes/s), vendor data sheets.
GPU_BANDWIDTH = {
    "H200": 4.8e12,
    "H100": 3.35e12,  # SXM5 (the PCIe card: 2.0 TB/s)
    "A100": 2.0e12,  # 80 GB SXM
    "A10": 600e9,
    "L4": 300e9,
    "RTX 4090": 1008e9,
}

# Qwen/Qwen3-0.6B's config.json (the fields used here), for servers whose model directory
# cannot be read.
QWEN3_0_6B: dict[str, Any] = {
    "hidden_size": 1024, "num_hidden_layers": 28, "intermediate_size": 3072,
    "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
    "vocab_size": 151936, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
}


@dataclass(frozen=True)
class Floor:
    params: int
    weight_bytes: float
    bandwidth: float  # bytes/s
    bandwidth_source: str  # "H200 (data sheet)" / "measured copy on this CPU"
    ms_per_token: float

    def times_above(self, tpot_ms: float | None) -> float | None:
        return None if tpot_ms is None or self.ms_per_token <= 0 else tpot_ms / self.ms_per_token

    def describe(self) -> str:
        return (f"physical floor {self.ms_per_token:.3f} ms/token = "
                f"{self.weight_bytes / 1e9:.2f} GB of weights / "
                f"{self.bandwidth / 1e12:.2f} TB/s ({self.bandwidth_source}), batch 1")


def param_count(cfg: dict[str, Any]) -> int:
    h = int(cfg["hidden_size"])
    layers = int(cfg["num_hidden_layers"])
    heads = int(cfg["num_attention_heads"])
    kv = int(cfg.get("num_key_value_heads") or heads)
    head_dim = int(cfg.get("head_dim") or h // heads)
    inter = int(cfg["intermediate_size"])
    vocab = int(cfg["vocab_size"])
    attn = h * heads * head_dim + 2 * h * kv * head_dim + heads * head_dim * h
    mlp = 3 * h * inter  # gate, up, down
    norms = 2 * h + 2 * head_dim  # input/post-attention RMSNorm; Qwen3's q/k norms
    embedding = vocab * h
    lm_head = 0 if cfg.get("tie_word_embeddings", False) else vocab * h
    return embedding + layers * (attn + mlp + norms) + h + lm_head  # + the final norm


def weight_bytes(cfg: dict[str, Any], dtype: str | None = None) -> float:
    name = dtype or str(cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16")
    return param_count(cfg) * DTYPE_BYTES.get(name, 2)


def gpu_bandwidth(name: str) -> tuple[float, str] | None:
    """Peak bandwidth of a known GPU from its marketing name ("NVIDIA H200", ...)."""
    upper = name.upper()
    for key in sorted(GPU_BANDWIDTH, key=len, reverse=True):
        if key.upper() in upper:
            return GPU_BANDWIDTH[key], f"{key} (data sheet peak)"
    return None


@functools.cache
def measure_cpu_bandwidth(mib: int = 256, repeats: int = 3) -> float:
    """One large array copy (read + write), best of a few: a rough CPU memory bandwidth.
    Measured once per process (512 MiB while it runs): the machine does not change, and a
    shared page must not let each new server URL allocate it again."""
    import numpy as np

    src = np.ones(mib * 2**20 // 8, dtype=np.float64)
    dst = np.empty_like(src)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t0)
    return 2 * src.nbytes / best


def floor_for(cfg: dict[str, Any], bandwidth: float, source: str,
              dtype: str | None = None) -> Floor:
    wb = weight_bytes(cfg, dtype)
    return Floor(param_count(cfg), wb, bandwidth, source, 1000 * wb / bandwidth)


def model_config(root: str | None) -> dict[str, Any]:
    """The served model's config.json when its directory is readable, else Qwen3-0.6B's."""
    if root:
        path = Path(root) / "config.json"
        try:
            return json.loads(path.read_text("utf-8"))
        except (OSError, ValueError):
            pass
    return dict(QWEN3_0_6B)


def machine_floor(cfg: dict[str, Any], gpu_names: list[str]) -> Floor:
    """Floor on this machine: the first known GPU's data-sheet bandwidth, else a CPU copy."""
    for name in gpu_names:
        known = gpu_bandwidth(name)
        if known:
            return floor_for(cfg, *known)
    return floor_for(cfg, measure_cpu_bandwidth(), "measured copy on this CPU")


def server_floor(settings: Any, base_url: str, api_key: str) -> float | None:
    """ms per decode step for the model at `base_url`, on the accelerator it runs on:
    PLAYGROUND_ACCELERATOR (a GPU name) when set, else this machine's GPU or CPU when the
    server is local; None when the accelerator cannot be known (a remote server)."""
    from playground.errors import PlaygroundError
    from playground.server import machine
    from playground.server.http import on_this_machine, server_info

    try:
        info = server_info(base_url, api_key)
    except PlaygroundError:
        return None
    root = info.models[0].root if info.models else None
    local = on_this_machine(base_url)
    names = [settings.accelerator] if settings.accelerator else (
        [g["name"] for g in machine.gpus()] if local else None)
    if names is None:
        return None
    cfg = model_config(root)
    if names:
        known = [k for k in (gpu_bandwidth(n) for n in names) if k]
        return floor_for(cfg, *known[0]).ms_per_token if known else None
    return machine_floor(cfg, []).ms_per_token
