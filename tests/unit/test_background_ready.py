"""When vllm bench serve's background load counts as in flight (lab/engine.VllmBenchLoad).

The server's /metrics is scripted here: a real server cannot be made to show, on demand, an
engine that finishes requests faster than the client reads them (V29, on a starved 2-core box:
"Running: 1" for minutes at --max-concurrency 2). The engine process is a stand-in that sleeps.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from playground.errors import PlaygroundError
from playground.lab.engine import BenchServe, VllmBenchLoad


def page(running: float, finished: float) -> str:
    return ("# TYPE vllm:num_requests_running gauge\n"
            f'vllm:num_requests_running{{engine="0",model_name="m"}} {running}\n'
            "# TYPE vllm:request_success counter\n"
            f'vllm:request_success_total{{engine="0",finished_reason="length",model_name="m"}} '
            f"{finished}\n")


@dataclass
class Script:
    pages: list[str]
    served: int = 0

    def next(self) -> str:
        text = self.pages[min(self.served, len(self.pages) - 1)]
        self.served += 1
        return text


@pytest.fixture()
def metrics() -> Iterator[tuple[str, Script]]:
    script = Script([])

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = script.next().encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", script
    finally:
        server.shutdown()


class Sleeper(BenchServe):
    def command(self, python: str) -> list[str]:  # the engine's stand-in
        return [python, "-c", "import time; time.sleep(120)"]


def ready(url: str, tmp_path: Path, timeout_s: float = 20.0) -> float | None:
    spec = Sleeper(url, "m", "tok", concurrency=2, dataset=tmp_path / "d.jsonl",
                   num_prompts=10)
    load = VllmBenchLoad(spec, "EMPTY", sys.executable, tmp_path / "bench.log",
                         ready_timeout_s=timeout_s)

    async def go() -> float | None:
        try:
            await load.start()
        except BaseException:
            await load.stop()
            raise
        record = await load.stop()  # the run file's line says what start() saw, and when
        assert record.running_at_start == load.reached and record.ready_after_s is not None
        return load.reached

    return asyncio.run(go())


def test_all_n_running_is_ready(metrics: tuple[str, Script], tmp_path: Path) -> None:
    url, script = metrics
    script.pages = [page(0, 0), page(1, 0), page(2, 0)]
    assert ready(url, tmp_path) == 2


def test_a_load_that_flows_is_ready_though_the_gauge_never_shows_n(
        metrics: tuple[str, Script], tmp_path: Path) -> None:
    url, script = metrics  # one running at every scrape, the finished count growing
    script.pages = [page(0, 7), page(1, 8), page(1, 9), page(1, 11), page(1, 12)]
    assert ready(url, tmp_path) == 1  # 12 - 7 > 2 x 2: what the server showed is recorded
    assert script.served == 5


def test_one_running_and_nothing_finishing_is_not_ready(metrics: tuple[str, Script],
                                                        tmp_path: Path) -> None:
    url, script = metrics  # requests finished before the load began do not count
    script.pages = [page(1, 50)]
    with pytest.raises(PlaygroundError, match="did not get 2 requests running within 2 s "
                                              r"\(the server reported at most 1"):
        ready(url, tmp_path, timeout_s=2)
