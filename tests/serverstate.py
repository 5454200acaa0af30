"""What the shared test server is doing, for tests that prove their requests were dropped.

vLLM reports `vllm:num_requests_running` / `_waiting` for the whole server, and a client that
closes a stream is aborted by the engine on its next step -- which, on a loaded 2-core box, can
take seconds. So a test waits for the server to be idle *before* its own requests (then the
gauge is about them alone: the suite runs one test at a time) and waits for the event again
after, bounded only as a failure guard, never as a claim about how fast it happens. (vLLM
counts no "abort" for a client that left: `request_success_total{finished_reason="abort"}`
stays 0, so the gauge is the server's only word on it.)
"""

from __future__ import annotations

from playground.server.prom import scrape, total
from tests.procs import wait_for

IDLE_BOUND_S = 180.0  # a failure guard: the event normally comes within a second


def in_flight(base_url: str) -> float:
    """Requests the server is running or holding in its queue (-1 when /metrics fails)."""
    try:
        snap = scrape(base_url)
    except OSError:
        return -1.0
    return total(snap, "vllm:num_requests_running") + total(snap, "vllm:num_requests_waiting")


def idle(base_url: str, timeout_s: float = IDLE_BOUND_S) -> bool:
    """Wait until the server runs and queues nothing; whether it got there."""
    return wait_for(lambda: in_flight(base_url) == 0, timeout_s, step=0.2)
