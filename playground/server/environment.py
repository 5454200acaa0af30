"""Where a measurement ran: this machine and the server (version, models, demo model or not).

The one description of the environment that run files, boards and recordings carry. It is
metadata: a server that cannot be asked is stated (`server_error`), never raised. It never
holds an API key.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from playground.errors import PlaygroundError
from playground.server import machine
from playground.server.demo_model import is_demo_dir
from playground.server.http import ServerInfo, aserver_info
from playground.server.small_model import is_small_dir

InfoFn = Callable[[str, str | None], Awaitable[ServerInfo]]


async def environment(base_url: str, api_key: str | None, *, info_fn: InfoFn = aserver_info
                      ) -> dict[str, Any]:
    described = await asyncio.to_thread(machine.describe)  # runs nvidia-smi: not on the loop
    env: dict[str, Any] = {"base_url": base_url, "machine": described,
                           "measured_at": time.strftime("%Y-%m-%d %H:%M %Z")}
    try:
        info = await info_fn(base_url, api_key)
    except PlaygroundError as e:
        return {**env, "vllm_version": None, "models": [], "demo_model": None,
                "real_small_model": None, "server_error": str(e)}
    return {**env, "vllm_version": info.version, "models": [m.id for m in info.models],
            "demo_model": any(is_demo_dir(m.root) for m in info.models),
            # the second offline model (real weights, no thinking mode)
            "real_small_model": any(is_small_dir(m.root) for m in info.models)}


def recording_environment(env: dict[str, Any], note: str | None = None) -> dict[str, Any]:
    """What a shared recording says about where it was measured (no URL: it may be private)."""
    out = {"accelerator": env["machine"]["accelerator"], "cpu": env["machine"]["cpu"],
           "vllm_version": env.get("vllm_version"), "model": ", ".join(env.get("models") or []),
           "demo_model": env.get("demo_model")}
    if note:
        out["note"] = note
    return {k: v for k, v in out.items() if v not in (None, "")}
