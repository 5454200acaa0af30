"""Strangers on one shared page: the attacks of issue 4/7 replayed against the running app.

One app shared as an operator shares it (`--auth`, visitors behind a trusted proxy, visitor
URLs allowed so that a visitor's own server can misbehave), on the real test server behind a
fault proxy. Each test runs one attack and, while it runs, measures another visitor: their
page load and a Run, from the click to the painted metrics. The rows report those
milliseconds; the tests assert only the order (the other visitor was served while the attack
was still on), never a duration.
"""

from __future__ import annotations

import http.client
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from subprocess import Popen
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.apphelp import PENDING, app, open_page
from tests.browser.test_playground_ui import LONG, LONG_RUN_TOKENS, pick, settle
from tests.browser.test_reliability_ui import type_url
from tests.faultproxy import FaultProxy
from tests.procs import wait_for

pytestmark = [pytest.mark.browser, pytest.mark.server]

LOGIN = ("demo", "strangers-pass-5e1")
OP_KEY = "sk-operator-" + secrets.token_hex(10)
OP = "ok-op"  # the fault proxy's tag for the operator's own server


@dataclass
class Shared:
    url: str
    proc: Popen[bytes]
    proxy: FaultProxy
    runs: Path
    log: Path

    def rss_mib(self) -> float:
        """The app's resident memory now (/proc)."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0


@pytest.fixture(scope="module")
def shared(vllm_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared]:
    tmp = tmp_path_factory.mktemp("strangers")
    proxy = FaultProxy(vllm_server).start()
    env = {"PLAYGROUND_BASE_URL": proxy.url(OP), "PLAYGROUND_API_KEY": OP_KEY,
           "PLAYGROUND_WARMUP": "off", "PLAYGROUND_AUTH": ":".join(LOGIN),
           "PLAYGROUND_RUNS_DIR": str(tmp / "runs"),
           "PLAYGROUND_USER_PRESETS_DIR": str(tmp / "up")}
    try:
        with app("--allow-visitor-urls", "--allow-private-urls", env_extra=env,
                 log=tmp / "app.log") as (url, proc):
            yield Shared(url, proc, proxy, tmp / "runs", tmp / "app.log")
    finally:
        proxy.stop()


def visitor(browser, s: Shared) -> Page:  # type: ignore[no-untyped-def]
    return open_page(browser, s.url, login=LOGIN)


def bystander(browser, s: Shared) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Another visitor: their page load (to the drawn, connected page) and a Run of the page's
    default columns (click to both columns' metrics painted), in ms."""
    t0 = time.monotonic()
    page = visitor(browser, s)
    t1 = time.monotonic()
    page.get_by_role("button", name="Run", exact=True).click()
    for i in range(2):
        expect(page.locator(f"#metrics-{i}")).to_contain_text("E2E", timeout=LONG)
    t2 = time.monotonic()
    page.context.close()
    return {"page load": (t1 - t0) * 1000, "Run": (t2 - t1) * 1000}


def said(took: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:,.0f} ms" for k, v in took.items())


def cookie_of(page: Page) -> str:
    return "; ".join(f"{c['name']}={c['value']}" for c in page.context.cookies())


def long_columns(page: Page) -> None:
    """Column 1 streams for ~25 s or more (the test leaves before it ends); column 2 is short.
    One long answer, not two: what the test watches is column 1, and a second 8,000-token
    decode only doubled the load that stalls the page on a 2-core box (tests/apphelp:
    open_page)."""
    pick(page, "preset 1", "fixed-64-stream")
    pick(page, "preset 2", "fixed-64-stream")
    boxes = page.get_by_label("max_tokens", exact=True).all()[:2]
    for box in boxes:
        expect(box).to_have_value("64", timeout=LONG)
    settle(boxes[0], LONG_RUN_TOKENS)


def answer_len(page: Page) -> int:
    return len(page.locator("#answer-0 textarea").input_value())


@pytest.mark.reliability(case="a stranger floods /live on a shared page: 300 page tokens opened "
                         "and dropped from 300 addresses, then 40 streams held from one, in the "
                         "browser", where="a run the victim starts afterwards streams live (its "
                         "text grows while it runs; not stopped); one address holds at most 16 "
                         "live streams (the rest 429); without a login /live answers 401; "
                         "another visitor's page load and Run are served meanwhile", order=56)
def test_a_live_flood_touches_no_other_page(browser, shared: Shared,  # type: ignore[no-untyped-def]
                                            observed: Callable[[str], None]) -> None:
    victim = visitor(browser, shared)
    long_columns(victim)
    parts = urlsplit(shared.url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    cookie = cookie_of(victim)

    def live(address: str, with_login: bool = True) -> tuple[http.client.HTTPConnection, int]:
        conn = http.client.HTTPConnection(host, port, timeout=30)
        headers = {"X-Forwarded-For": address, **({"Cookie": cookie} if with_login else {})}
        conn.request("GET", f"/live/{secrets.token_urlsafe(18)}", headers=headers)
        return conn, conn.getresponse().status

    conn, anonymous = live("198.18.0.1", with_login=False)
    conn.close()
    churned: list[int] = []
    for i in range(300):  # each opened and dropped at once, each from its own address
        conn, status = live(f"198.18.{1 + i // 250}.{1 + i % 250}")
        churned.append(status)
        conn.close()
    held = [live("198.18.9.9") for _ in range(40)]  # and held open, from one address
    try:
        took = bystander(browser, shared)
        victim.get_by_role("button", name="Run", exact=True).click()
        expect(victim.locator("#answer-0 textarea")).not_to_have_value("", timeout=LONG)
        first = answer_len(victim)
        grew = wait_for(lambda: answer_len(victim) > first, 60, step=0.2)
        running = "E2E" not in victim.locator("#metrics-0").inner_text()
        still_held = sum(s == 200 for _, s in held)
    finally:
        for conn, _ in held:
            conn.close()
    # clean-up, not the row's claim: the visitor leaves, which stops the run (a row of its
    # own). Not a click on Stop: with a busy loop on one core, the page streaming 8,000 tokens
    # did not take the click within 30 s (V64: "performing click action" timed out)
    victim.context.close()
    statuses = sorted({s for s in churned})
    observed(f"another visitor meanwhile: {said(took)}; no login: {anonymous}; 300 dropped: "
             f"{statuses}; 40 held from one address: {still_held} accepted; the victim's run "
             f"grew live from {first} chars: {grew}")
    assert anonymous == 401
    assert set(churned) <= {200, 503}
    assert still_held <= 16 and all(s in (200, 429) for _, s in held)
    assert grew and running  # live text while the run was still going, not at its end


@pytest.mark.reliability(case="a visitor of a shared page presses the operator's buttons: Server "
                         "tab Start with a hub model name, a model directory that exists and "
                         "one that does not, Stop, and a benchmark that starts servers, in the "
                         "browser", where="each is refused with the same message naming the "
                         "operator's flag; no process starts; existing and missing paths are "
                         "not told apart; another visitor's page load and Run are served",
                         order=56)
def test_server_powers_stay_with_the_operator(browser, shared: Shared,  # type: ignore[no-untyped-def]
                                              observed: Callable[[str], None]) -> None:
    from playground.server.managed import free_port

    port = free_port()

    def press(button: str, typed: str = "") -> str:
        """A fresh page (the status starts blank: the same refusal twice would not show a
        change) presses `button` on the Server tab; returns the status it gets."""
        page = visitor(browser, shared)
        page.get_by_role("tab", name="Server").click()
        status = page.locator("#server-tab-status")
        page.get_by_label("port", exact=True).filter(visible=True).fill(str(port))
        if typed:
            page.locator("#server-model-dir textarea, #server-model-dir input").first.fill(typed)
        page.get_by_role("button", name=button, exact=True).filter(visible=True).click()
        expect(status).to_contain_text("❌", timeout=LONG)
        # the event has ended: its progress timer ("0.1s") no longer sits over the status
        expect(page.locator(PENDING)).to_have_count(0, timeout=LONG)
        text = status.inner_text().strip()
        page.context.close()
        return text

    seen = [press("Start", typed) for typed in ("attacker-org/any-70b-model", "/root",
                                                 "/no/such/directory")]
    stopped = press("Stop")
    page = visitor(browser, shared)
    page.get_by_role("tab", name="Benchmark").click()
    pick(page, "experiment (presets/experiments)", "compiled-vs-eager")
    page.get_by_role("button", name="Run benchmark", exact=True).click()
    toast = page.get_by_text("starts servers of its own").first
    expect(toast).to_be_visible(timeout=LONG)
    bench = toast.inner_text().strip()
    took = bystander(browser, shared)
    page.context.close()
    started = [c for c in Path("/proc").glob("[0-9]*/cmdline")
               if b"any-70b-model" in _read(c) or f"--port\0{port}\0".encode() in _read(c)]
    observed(f"another visitor: {said(took)}; processes started: {len(started)}; Start x3 "
             f"and Stop: {seen[0][:70]}...; benchmark: {bench[:50]}...")
    assert len(set(seen)) == 1 and "operator" in seen[0] and "--allow-visitor-servers" in seen[0]
    assert "no such directory" not in seen[0] and "not a model directory" not in seen[0]
    assert stopped == seen[0]
    assert started == []


@pytest.mark.reliability(case="16 threads calling /compare without pause, a 144k-character "
                         "prompt each, from one address of a shared app", where="the per-visitor "
                         "cap (4 at once) is taken before any work: the operator's server gets a "
                         "/tokenize request (and at most one chat request) only for a call "
                         "the cap admitted; the rest are answered busy; another visitor's "
                         "page load and Run are served while the flood goes on", order=56)
def test_the_cap_comes_before_any_work(browser, shared: Shared,  # type: ignore[no-untyped-def]
                                       observed: Callable[[str], None]) -> None:
    page = visitor(browser, shared)
    cookie = cookie_of(page)
    page.context.close()
    prompt = "word " * 28_800  # 144,000 characters: over the model's window, so never sent
    tokenized = lambda: sum(1 for r in shared.proxy.seen  # noqa: E731
                            if r["fault"] == OP and r["path"].endswith("tokenize"))
    before = tokenized()
    answers: list[str] = []
    flooding = threading.Event()
    flooding.set()

    def caller() -> None:  # one of the attacker's threads: call, read the answer, again
        headers = {"Cookie": cookie, "X-Forwarded-For": "198.18.20.20"}
        with httpx.Client(base_url=shared.url, headers=headers, timeout=120) as c:
            while flooding.is_set():
                r = c.post("gradio_api/call/compare",
                           json={"data": [prompt, ["fixed-64-stream"]]})
                event = r.json()["event_id"]
                with c.stream("GET", f"gradio_api/call/compare/{event}") as res:
                    answers.append(res.read().decode("utf-8", "replace"))

    threads = [threading.Thread(target=caller) for _ in range(16)]  # 4x the cap
    for t in threads:
        t.start()
    try:
        wait_for(lambda: len(answers) >= 16, 120, step=0.2)
        took = bystander(browser, shared)
        attack_on = all(t.is_alive() for t in threads)  # the order: served amid the flood
    finally:
        flooding.clear()
        for t in threads:
            t.join(300)
    sent = tokenized() - before
    busy = sum("busy" in a for a in answers)
    admitted = sum("prompt" in a and "busy" not in a for a in answers)
    chats = sum(1 for r in shared.proxy.seen if r["fault"] == OP and prompt[:50] in r["body"]
                and r["path"].endswith("completions"))
    observed(f"another visitor, amid the flood: {said(took)}; {len(answers)} calls: {busy} "
             f"busy, {admitted} admitted (then refused as too long); /tokenize requests: "
             f"{sent}; chat requests: {chats}")
    assert attack_on and busy + admitted == len(answers)
    assert busy >= 1  # the cap was reached ...
    # ... and only a call it admitted did any work: a /tokenize each, and a chat request only
    # where the tokenizer did not answer in time (V31, one core busy: 4 of 64 were sent, and
    # the server refused them as too long)
    assert sent <= admitted and chats <= admitted


@pytest.mark.reliability(case="a visitor's server sends far too much: a 300 MB model list, and "
                         "50 MB of answer under max_tokens 16, in the browser", where="the "
                         "connection line names the size cap; the column cuts the answer at "
                         "4,096 characters and says so; the app's memory and the run file stay "
                         "small; another visitor's page load and Run are served", order=56)
def test_what_a_server_sends_is_bounded(browser, shared: Shared,  # type: ignore[no-untyped-def]
                                        observed: Callable[[str], None]) -> None:
    peak = [shared.rss_mib()]
    start = peak[0]
    done = threading.Event()
    # this test's run files only: the app is the module's, and the /compare flood before may
    # have recorded its 144k-character prompt (V35: a 582 KB file from that test)
    before = set(shared.runs.rglob("*.jsonl"))

    def watch() -> None:
        while not done.is_set():
            peak.append(shared.rss_mib())
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        page = visitor(browser, shared)
        type_url(page, shared.proxy.url("huge-models"))
        page.get_by_role("button", name="Connect", exact=True).click()
        status = page.locator("#server-status")
        expect(status).to_contain_text("MiB", timeout=LONG)
        listing = status.inner_text().strip()
        type_url(page, shared.proxy.url("flood"))
        page.get_by_role("button", name="Connect", exact=True).click()
        expect(status).to_contain_text("vLLM 0.", timeout=LONG)
        pick(page, "preset 1", "fixed-64-stream")
        pick(page, "preset 2", "fixed-64-nonstream")
        for box in page.get_by_label("max_tokens", exact=True).all()[:2]:
            expect(box).to_have_value("64", timeout=LONG)
            settle(box, "16")
        page.get_by_role("button", name="Run", exact=True).click()
        expect(page.locator("#error-0")).to_contain_text("cut", timeout=LONG)
        expect(page.locator("#metrics-1")).to_contain_text("E2E", timeout=LONG)
        cut = page.locator("#error-0").inner_text().strip()
        shown = answer_len(page)
        took = bystander(browser, shared)
        page.context.close()
    finally:
        done.set()
        watcher.join(10)
    mine = set(shared.runs.rglob("*.jsonl")) - before
    biggest = max((f.stat().st_size for f in mine), default=0)
    grew = max(peak) - start
    observed(f"another visitor: {said(took)}; app memory +{grew:.0f} MiB at its peak; "
             f"largest run file {biggest / 1024:.0f} KiB; {shown:,} chars shown of "
             f"{shared.proxy.flooded / 2**20:.1f} MiB sent; '{cut[:60]}'; list: {listing[:60]}")
    assert "8 MiB" in listing
    assert shown <= 4096 and "4,096" in cut
    assert mine and grew < 150 and biggest < 512 * 1024


@pytest.mark.reliability(case="16 wrong logins at once from one address on a shared app",
                         where="the right password from another address logs in while they "
                         "still wait (the throttle is per address); another visitor's page "
                         "load and Run are served meanwhile", order=56)
def test_one_address_guessing_locks_no_one_else_out(browser, shared: Shared,  # type: ignore[no-untyped-def]
                                                    observed: Callable[[str], None]) -> None:
    def login(address: str, password: str) -> int:
        try:
            with httpx.Client(base_url=shared.url, timeout=120,
                              headers={"X-Forwarded-For": address}) as c:
                return c.post("login", data={"username": LOGIN[0],
                                             "password": password}).status_code
        except httpx.HTTPError:  # a guess still waiting when the app stops
            return 0

    wrong: list[int] = []
    threads = [threading.Thread(target=lambda: wrong.append(login("198.18.30.30", "guess")),
                                daemon=True) for _ in range(16)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    time.sleep(0.5)  # the guesses are in
    right = login("198.18.31.31", LOGIN[1])
    right_ms = (time.monotonic() - t0) * 1000
    took = bystander(browser, shared)
    waiting = sum(t.is_alive() for t in threads)  # the order: the others got in meanwhile
    observed(f"another visitor: {said(took)}; the right password from another address: "
             f"{right} after {right_ms:,.0f} ms, while {waiting} of the 16 guesses still "
             f"waited (answered so far: {sorted(set(wrong))})")
    assert right == 200 and waiting >= 1 and 200 not in wrong
    # (the guesses left waiting end with the app, at the module's end: each waits its turn,
    # up to 8 s, and seeing them all out would only cost the suite time)


@pytest.mark.reliability(case="a server that repeats the operator's key in its error (\"Incorrect "
                         "API key provided: sk-...\"), on a shared page", where="the column "
                         "shows the error with the key redacted; the key is in no run file and "
                         "not in the app's log", order=56)
def test_a_key_a_server_echoes_is_redacted(browser, shared: Shared,  # type: ignore[no-untyped-def]
                                           observed: Callable[[str], None]) -> None:
    shared.proxy.force(OP, "echo-key")
    try:
        page = visitor(browser, shared)
        pick(page, "preset 1", "fixed-64-stream")
        pick(page, "preset 2", "fixed-64-nonstream")
        page.get_by_role("button", name="Run", exact=True).click()
        err = page.locator("#error-0")
        expect(err).to_contain_text("401", timeout=LONG)
        shown = err.inner_text() + page.locator("#error-1").inner_text()
        html = page.content()
        page.context.close()
    finally:
        shared.proxy.force(OP, None)
    echoed = sum(OP_KEY in r["headers"].get("Authorization", "") for r in shared.proxy.seen)
    stored = [f.name for f in shared.runs.rglob("*") if f.is_file()
              and OP_KEY in f.read_text("utf-8", "replace")]
    observed(f"the server was sent the key {echoed} time(s) and echoed it; the column: "
             f"{shown.strip()[:140]}; files holding it: {stored}")
    assert echoed >= 1  # the attack happened: the key went out and came back in the error
    assert OP_KEY not in shown and OP_KEY not in html and stored == []
    assert OP_KEY not in shared.log.read_text("utf-8", "replace")


@pytest.mark.reliability(case="a visitor of a shared page replays a recording at 0.25x",
                         where="the replay panel refuses it before anything plays, naming the "
                         "speed and why (a replay holds a run slot); at 1x it plays", order=56)
def test_a_slow_replay_is_refused_on_a_shared_page(browser, shared: Shared,  # type: ignore[no-untyped-def]
                                                   observed: Callable[[str], None]) -> None:
    page = visitor(browser, shared)
    panel = page.locator("#replay-panel")
    panel.get_by_text("Replay a recording").first.click()
    speed = page.locator("#replay-speed input[type=number]")
    speed.wait_for(state="visible", timeout=LONG)
    info = page.locator("#replay-info")
    tries = []
    for _ in range(3):
        # the slider's own range input follows the value it will send: wait for it. In V82
        # (3e99951, the whole suite, one failure) the click still went out at the default
        # 1x: the replay played and the refusal was never asked for. That is the page not
        # taking the typed speed yet, not the refusal: such a replay is stopped and the speed
        # set again (at most 3 times; each try is said below)
        speed.fill("0.25")
        speed.press("Tab")
        expect(page.locator("#replay-speed input[type=range]")).to_have_value("0.25")
        page.get_by_role("button", name="Replay", exact=True).click()
        expect(info).to_contain_text(re.compile(r"1x or faster|replaying"), timeout=LONG)
        said = info.inner_text()
        tries.append(" ".join(said.split())[:80])
        if "1x or faster" in said or "at 0.25x" in said:
            break
        page.get_by_role("button", name="Stop replay", exact=True).click()
        expect(info).to_contain_text("replay ended", timeout=LONG)
    expect(info).to_contain_text("1x or faster", timeout=LONG)
    refused = info.inner_text()
    played = page.locator("#answer-0 textarea").input_value()
    speed.fill("4")
    speed.press("Tab")
    page.get_by_role("button", name="Replay", exact=True).click()
    expect(page.locator("#answer-0 textarea")).not_to_have_value("", timeout=LONG)
    page.context.close()
    observed(f"at 0.25x: {' '.join(refused.split())[:160]}; at 4x it played"
             + (f" (the speed was taken at try {len(tries)}: {tries})" if len(tries) > 1
                else ""))
    assert "0.25x" in refused and played == ""


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:  # a process that ended meanwhile
        return b""
