"""The suite's two lanes: `scripts/test.sh` runs the tests in two pytest-xdist workers, one
lane each, so that one lane's waiting (a vLLM server starting, a browser waiting for the
page) is the other lane's working time on this 2-core box.

- "browser": the browser tests that share the session app (python app.py) and its server;
- "main": the unit tests, then the integration tests, then the browser tests that start an
  app of their own (test_app_killed) -- Playwright's sync API keeps an event loop in the
  main thread, so a lane's browser tests come after its async tests (conftest._order).

Each lane is one xdist work unit: all its tests go to one worker, in collection order. Each
worker starts the servers its own lane needs (conftest.start_needed), on its first test: two
lanes never share a vLLM server, so no test sees the other lane's requests in its metrics.
"""

from __future__ import annotations

from typing import Any

OWN_APP = ("tests/browser/test_app_killed.py",)  # browser tests that start their own app


def lane(nodeid: str) -> str:
    if nodeid.startswith("tests/browser/") and not nodeid.startswith(OWN_APP):
        return "browser"
    return "main"


def scheduler(config: Any, log: Any) -> Any:
    """pytest-xdist's scope scheduler, with a lane as the scope."""
    from xdist.scheduler import LoadScopeScheduling

    class Lanes(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return lane(nodeid)

    return Lanes(config, log)
