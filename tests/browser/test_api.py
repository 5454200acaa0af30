"""The app's API through gradio_client: one comparison by preset names."""

from __future__ import annotations

import pytest
from gradio_client import Client

pytestmark = pytest.mark.server


def test_compare_endpoint(app_url: str) -> None:
    client = Client(app_url, verbose=False)
    result = client.predict("北京市朝阳区建国路88号 王建国 13812345678",
                            ["fixed-64-stream", "fixed-64-nonstream"], api_name="/compare")
    stream, non_stream = result
    assert stream["variant"]["name"] == "fixed-64-stream"
    assert stream["metrics"]["ttft_ms"] > 0 and stream["metrics"]["completion_tokens"] == 64
    assert non_stream["metrics"]["ttft_ms"] is None
    assert non_stream["metrics"]["e2e_ms"] > 0
    assert "api_key" not in str(result).lower()


def test_compare_endpoint_unknown_preset(app_url: str) -> None:
    client = Client(app_url, verbose=False)
    with pytest.raises(Exception, match="unknown preset"):
        client.predict("x", ["nope"], api_name="/compare")


@pytest.mark.reliability(case="10 concurrent users (gradio_client sessions)", where="each "
                         "gets its own results; all 10 in flight at once, held in front of "
                         "the server (the app queued none; limit 16)", order=45)
def test_ten_users_at_once_each_get_their_own_results(vllm_server: str, tmp_path,  # type: ignore[no-untyped-def]
                                                      observed) -> None:
    """Truly at once: a proxy holds every chat request until all ten have arrived (the app
    sent each without waiting for another), then lets them through together.

    What the server then does with them is reported, not asserted: how many engine steps
    decoded more than 8 at once (its step histogram, `vllm:iteration_tokens_total`; a step of
    more than 8 tokens is a prefill, at most one per request, or such a decode). Under a busy
    loop the server admitted the released requests more slowly than it finished them, with
    this app and the one before it alike (7-12 such steps of 14 requests); and a sampled
    /metrics gauge waited ~10 s for its answer, longer than the burst."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    from playground.server.prom import scrape, total
    from tests.apphelp import app
    from tests.faultproxy import FaultProxy
    from tests.serverstate import idle

    n = 10
    assert idle(vllm_server)  # the server's steps reported below are this test's requests

    def big_steps() -> float:  # engine steps that carried more than 8 tokens, so far
        snap = scrape(vllm_server, timeout_s=60)
        return (total(snap, "vllm:iteration_tokens_total_count")
                - total(snap, "vllm:iteration_tokens_total_bucket", le="8.0"))

    before = big_steps()
    proxy = FaultProxy(vllm_server).start()

    def held() -> int:
        return sum(1 for s in proxy.seen if s["fault"] == "hold"
                   and s["path"].endswith("chat/completions"))

    presets = tmp_path / "user" / "variants"  # long enough to overlap for seconds
    presets.mkdir(parents=True)
    (presets / "fixed-512-stream.yaml").write_text(
        "name: fixed-512-stream\nstream: true\nmax_tokens: 512\nignore_eos: true\n"
        "thinking: false\ntemperature: 0\n", "utf-8")
    # ten visitors: the app trusts its local proxy (127.0.0.1), each client names its own
    # address in X-Forwarded-For -- /compare takes the page's run slots, 4 per visitor
    env = {"PLAYGROUND_BASE_URL": proxy.url("hold"), "PLAYGROUND_WARMUP": "off",
           "PLAYGROUND_RUNS_DIR": str(tmp_path / "runs"),
           "PLAYGROUND_USER_PRESETS_DIR": str(tmp_path / "user"),
           "PLAYGROUND_TRUSTED_PROXIES": "127.0.0.1"}
    try:
        with app(env_extra=env, log=tmp_path / "app.log") as (url, _):
            clients = [Client(url, verbose=False, headers={"X-Forwarded-For": f"10.0.0.{i}"})
                       for i in range(n)]  # a session and an address each
            # one visitor's fifth call, while that visitor's four are held: refused at once
            same = [Client(url, verbose=False, headers={"X-Forwarded-For": "10.9.9.9"})
                    for _ in range(5)]

            def user(i: int) -> tuple[int, list[dict]]:
                return i, clients[i].predict(f"用户{i}: 上海市徐汇区{i}号 电话1380000{i:04d}",
                                             ["fixed-512-stream"], api_name="/compare")

            with ThreadPoolExecutor(n + 4) as pool:
                futures = [pool.submit(user, i) for i in range(n)]
                deadline = time.monotonic() + 120
                while held() < n and time.monotonic() < deadline:
                    time.sleep(0.05)
                at_once = held()
                mine = [pool.submit(same[k].predict, "x", ["fixed-512-stream"],
                                    api_name="/compare") for k in range(4)]
                while held() < n + 4 and time.monotonic() < deadline:
                    time.sleep(0.05)
                with pytest.raises(Exception, match="one visitor may run 4 at once"):
                    same[4].predict("x", ["fixed-512-stream"], api_name="/compare")
                held_after = held()
                proxy.release()
                results = [f.result(timeout=300) for f in futures]
                assert all(f.result(timeout=300)[0]["error"] is None for f in mine)
    finally:
        proxy.release()
        proxy.stop()
    for i, (rec,) in results:
        assert rec["error"] is None and rec["metrics"]["completion_tokens"] == 512
        assert f"用户{i}:" in rec["request"]["messages"][-1]["content"]  # its own prompt
        assert all(f"用户{j}:" not in str(rec) for j in range(n) if j != i)
    big = big_steps() - before
    observed(f"{n} users, {n} results each with its own prompt; {at_once} held at once in "
             f"front of the server; released, they ran in {big:.0f} engine steps of more "
             f"than 8 tokens ({n + 4} requests: a prefill each, or a decode of more than 8)")
    assert at_once == n  # all ten at once, not queued in the app
    assert held_after == n + 4  # the refused fifth sent nothing


@pytest.mark.reliability(case="/compare with too many presets (gradio_client)", where="the "
                         "API's error names the field and the limit; nothing is sent", order=46)
def test_compare_caps_the_number_of_variants(app_url: str, observed) -> None:
    client = Client(app_url, verbose=False)
    with pytest.raises(Exception, match="presets: 5 names given") as e:
        client.predict("x", ["fixed-64-stream"] * 5, api_name="/compare")
    observed(str(e.value))


@pytest.mark.reliability(case="/compare called over HTTP and never read", where="the job is "
                         "stopped once no result stream has been open for the app's "
                         "PLAYGROUND_GONE_AFTER_S (20 s by default, 6 s here), its run slot "
                         "given back; a job that is read runs to its end beside it; what the "
                         "stopped job measured is stored and can still be read, marked "
                         "cancelled", order=47)
def test_compare_jobs_no_one_reads_are_stopped(vllm_server: str, tmp_path,  # type: ignore[no-untyped-def]
                                               observed) -> None:
    """Two calls held in front of the server (`hold-sse`: streams in flight for as long as the
    test needs): one is read through its result stream, the other never; only the unread one
    is stopped, and the server stops seeing it."""
    import json
    import threading
    import time

    import httpx

    from tests.apphelp import app, run_rows
    from tests.faultproxy import FaultProxy

    proxy = FaultProxy(vllm_server).start()
    env = {"PLAYGROUND_BASE_URL": proxy.url("hold-sse"), "PLAYGROUND_WARMUP": "off",
           "PLAYGROUND_RUNS_DIR": str(tmp_path / "runs"), "PLAYGROUND_GONE_AFTER_S": "6"}

    def wait(cond, what: str, timeout_s: float = 120) -> None:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout_s
        while not cond():
            assert time.monotonic() < deadline, what
            time.sleep(0.1)

    def events(url: str, event_id: str, into: list[tuple[str, object]]) -> None:
        with httpx.stream("GET", f"{url}gradio_api/call/compare/{event_id}",
                          timeout=None) as resp:
            kind = ""
            for line in resp.iter_lines():
                if line.startswith("event:"):
                    kind = line.split(":", 1)[1].strip()
                elif line.startswith("data:") and kind in ("complete", "error"):
                    into.append((kind, json.loads(line.split(":", 1)[1])))
                    return

    try:
        with app(env_extra=env, log=tmp_path / "app.log") as (url, _):
            def call() -> str:
                r = httpx.post(f"{url}gradio_api/call/compare", timeout=30,
                               json={"data": ["上海市徐汇区1号", ["fixed-64-stream"]]})
                r.raise_for_status()
                return str(r.json()["event_id"])

            read: list[tuple[str, object]] = []
            reader = threading.Thread(target=events, args=(url, call(), read), daemon=True)
            reader.start()
            unread = call()
            wait(lambda: proxy.holding == 2, "both calls reached the server")
            t0 = time.monotonic()
            wait(lambda: proxy.holding < 2, "the unread call was never stopped")
            stopped_after = time.monotonic() - t0
            assert proxy.holding == 1 and reader.is_alive()  # the read one runs on
            proxy.release()
            reader.join(120)
            late: list[tuple[str, object]] = []
            events(url, unread, late)  # what the stopped call measured, read afterwards
    finally:
        proxy.release()
        proxy.stop()
    (kind, (recs,)), = read  # type: ignore[misc]
    assert kind == "complete" and recs[0]["status"] == "done", recs
    assert recs[0]["metrics"]["completion_tokens"] == 64
    (kind, (stopped,)), = late  # type: ignore[misc]
    assert kind == "complete" and stopped[0]["status"] == "cancelled", stopped
    statuses = sorted(r["status"] for r in run_rows(tmp_path / "runs"))
    assert statuses == ["cancelled", "done"], statuses  # both stored
    observed(f"the unread call stopped {stopped_after:.0f} s after both were in flight; the "
             "read one ended with its 64 tokens; both are in the run files")
