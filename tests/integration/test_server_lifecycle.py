"""Managed vLLM servers for real: two at once, restart with a new flag, stop that takes the
whole process group (EngineCore included), and the server's own accounting of a reply.

The lifecycle runs on the keyed test server (conftest), which the suite starts anyway: no
extra server is started here, and the restart keeps its key, so the tests that use it later
still talk to a server that checks the key itself. "An app killed with its server running" is
tests/integration/test_no_orphans.py's SIGKILL case.
"""

from __future__ import annotations

import asyncio

import pytest

from playground.core import request
from playground.core.metrics import residual_ms
from playground.core.pool import ClientPool
from playground.core.runner import new_recording, run_to_end
from playground.server import http
from playground.server.http import is_healthy
from playground.server.managed import ManagedServer
from playground.server.prom import HISTOGRAMS, histogram_delta, scrape
from playground.specs.presets import Variant
from tests.conftest import Keyed
from tests.procs import engine_cores, group, wait_for

pytestmark = pytest.mark.server


def this_start(server: ManagedServer) -> str:
    """The server's log since its latest start (the file is appended to across starts)."""
    return server.log_path.read_text("utf-8", "replace").rsplit("\n==== ", 1)[-1]


def test_two_at_once_restart_with_a_new_flag_and_stop_takes_the_whole_group(
        keyed_vllm: Keyed, vllm_server: str) -> None:
    server = keyed_vllm.server
    assert is_healthy(server.config.base_url) and is_healthy(vllm_server)  # two at once
    assert server.proc is not None
    old_group = server.proc.pid  # the guard leads the server's process group
    assert wait_for(lambda: bool(engine_cores(old_group)), 60), group(old_group)
    assert "'max_num_seqs': 3" not in this_start(server)
    server.restart(server.config.model_copy(update={"max_num_seqs": 3}), timeout_s=900)
    # the stop inside restart ended the old group: API server, EngineCore and its workers
    assert wait_for(lambda: not group(old_group), 30), group(old_group)
    assert is_healthy(server.config.base_url)
    assert "'max_num_seqs': 3" in this_start(server)  # the new flag took effect
    assert server.proc is not None and wait_for(lambda: bool(engine_cores(server.proc.pid)), 60)
    # the restarted server still checks its key itself
    models = f"{server.config.base_url}/models"
    assert http.get(models).status == 401
    assert http.get(models, api_key=keyed_vllm.key).status == 200


def test_server_breakdown_is_accounted_in_the_servers_own_terms(vllm_server: str) -> None:
    v = Variant(name="b", stream=True, thinking=False, temperature=0, max_tokens=24,
                ignore_eos=True)
    before = scrape(vllm_server)
    recs = [new_recording(v, request.build(v, f"[bd {i}] 你好", "Qwen/Qwen3-0.6B"),
                          vllm_server) for i in range(3)]

    async def go() -> None:
        pool = ClientPool("EMPTY")
        for rec in recs:  # one at a time: no queueing between them
            await run_to_end(pool, [rec])
        await pool.aclose()

    asyncio.run(go())
    after = scrape(vllm_server)
    means = {k: histogram_delta(before, after, name) for k, name in HISTOGRAMS.items()}
    assert all(means[k].count == 3 for k in means), {k: d.count for k, d in means.items()}
    queue, prefill, decode, e2e = (means[k].mean_ms for k in ("queue_ms", "prefill_ms",
                                                                  "decode_ms", "e2e_ms"))
    assert queue is not None and prefill is not None and decode is not None and e2e is not None
    # vLLM's E2E runs from the request's arrival at the API server to its last token; queue,
    # prefill and decode are consecutive intervals of the engine inside it. What they leave is
    # the API server's own share (templating, tokenising, IPC, detokenising), which grows with
    # the machine's load -- so the parts never exceed E2E, and no share of it is asserted.
    assert queue >= 0 and prefill > 0 and decode > 0
    assert queue + prefill + decode <= e2e
    # per request, the client waited at least as long as the server's parts: the residual
    # (the same number every view shows) is never negative
    for r in recs:
        rest = residual_ms(r.raw, r.metrics().e2e_ms)
        assert rest is not None and rest >= 0
