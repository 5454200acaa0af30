"""Live means live: what the audience sees in the browser vs what the playground measured.

One run, on one machine, side by side:

- **playground, live vLLM**: Chromium clicks Run on the Playground tab with 4 streaming columns
  (4 x fixed-64-stream, unique prompts), alternating rounds with the same comparison run
  headless (the same runner, no UI);
- **playground, replay mode** (the Spaces default, no server): a recording of one headless round
  replayed in the same 4 columns;
- **control**: the smallest Gradio app streaming 4 textboxes at 50 updates/s
  (benchmarks/ui_control_app.py), once on an idle machine and once while the same 4-stream
  load keeps the vLLM engine busy -- the floor of Gradio + Chromium on this machine.

Measured in the browser (a requestAnimationFrame loop records every change of each answer
box's length on this machine's wall clock) and joined with the backend's own record of when
each chunk arrived (run files) or was yielded (control):

- click -> first visible answer text, minus the TTFA the column reports (live) or the
  recorded TTFA (replay): p50 / p90 / p95;
- render lag: backend receipt of each chunk -> the browser showing it, over every update,
  and as a multiple of the control's;
- UI TTFT, TTFA and E2E vs headless: ratio of medians with its 95% interval.

The targets it judges are in docs/fidelity.md (and `judge` below).

Writes summary.json and raw.jsonl (every observation) to --out.

    python benchmarks/ui_fidelity.py --base-url http://127.0.0.1:8000/v1 --rounds 8 --out DIR

An experiment's arm (benchmarks/ui_fidelity_ab.py alternates two): `--app-switch-interval-ms
0.5` starts the app with that thread switch interval, `--chromium-cpus 1` holds the browser to
those CPUs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import proc_cpu

from playground.core.compare import compare
from playground.core.metrics import server_parts
from playground.core.record import RequestRecord
from playground.lab import calls
from playground.lab.replay import from_history, save
from playground.lab.stats import percentile
from playground.lab.store import read_run
from playground.server import http
from playground.server.managed import free_port
from playground.settings import REPO_ROOT, Settings
from playground.specs.presets import PresetLibrary

ADDRESS = "北京市朝阳区建国路88号SOHO现代城A座2305 收件人：王建国 手机：13812345678"
PRESET = "fixed-64-stream"
N_COLS = 4
CPU_WINDOW_S = 0.2  # CPU time by process is taken over this long from the click (proc_cpu)
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
# Each round runs the three live rows in one of these orders, in turn, so that no row always
# follows the same one (what the row before leaves behind -- its page's end, its run's hand-
# over -- falls on every row alike); each row's rows in raw.jsonl carry their position.
ORDERS = (("plain", "live", "headless"), ("live", "headless", "plain"),
          ("headless", "plain", "live"))

# Every change of an answer box's length (code points, like Python's len) with its wall time.
# When the page clears the columns for a new run (window.qllFollow), a 0 is recorded for every
# column at that moment: the browser may never paint the empty boxes (the first text can land
# in the same frame), and a round's observations are those after its clearing.
WATCH_JS = """(n) => {
  window.__obs = []; window.__click = null; window.__stop = false;
  window.__last = new Array(n).fill(-1);
  if (!window.__clickHooked) {
    window.__clickHooked = true;
    document.addEventListener('click', () => {
      if (window.__click === null) window.__click = performance.timeOrigin + performance.now();
    }, true);
    if (window.qllFollow) {
      const follow = window.qllFollow;
      window.qllFollow = () => {
        const token = follow();
        const t = performance.timeOrigin + performance.now();
        for (let i = 0; i < n; i++) { window.__obs.push([i, t, 0]); window.__last[i] = 0; }
        return token;
      };
    }
  }
  const tick = () => {
    const now = performance.timeOrigin + performance.now();
    for (let i = 0; i < n; i++) {
      const box = document.querySelector(`#answer-${i} textarea`);
      const len = box ? [...box.value].length : 0;
      if (len !== window.__last[i]) { window.__last[i] = len; window.__obs.push([i, now, len]); }
    }
    if (!window.__stop) requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}"""


def p(values: Sequence[float], q: float) -> float | None:
    return percentile(list(values), q) if values else None


def content_times(rec: RequestRecord) -> tuple[list[int], list[float]]:
    """Cumulative answer length after each chunk, and the chunk's arrival (wall seconds)."""
    assert rec.clock_origin is not None
    wall, perf = rec.clock_origin
    lens, times, total = [], [], 0
    for t, (_, content) in zip(rec.raw.token_times, rec.raw.token_text, strict=False):
        if content:
            total += len(content)
            lens.append(total)
            times.append(wall + (t - perf))
    return lens, times


def this_round(obs: list[list[float]], col: int) -> list[tuple[float, int]]:
    """The column's observations after the round cleared it (before: the last round's text)."""
    out: list[tuple[float, int]] = []
    cleared = False
    for i, t_ms, n in obs:
        if int(i) != col:
            continue
        if n == 0:
            cleared = True
        elif cleared:
            out.append((t_ms, int(n)))
    return out


def lags(obs: list[list[float]], col: int, lens: list[int], times: list[float]) -> list[float]:
    """For each length the browser showed: its time minus when that length first existed."""
    out = []
    for t_ms, n in this_round(obs, col):
        k = bisect_left(lens, n)
        if k < len(times):
            out.append(t_ms - times[k] * 1000)
    return out


def first_seen(obs: list[list[float]], col: int) -> float | None:
    return next((t for t, _ in this_round(obs, col)), None)


@contextmanager
def process(args: list[str], env: dict[str, str], url: str, log: Path
            ) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        proc = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        for _ in range(480):
            try:
                if http.get(url, timeout_s=1).status == 200:
                    break
            except OSError:
                if proc.poll() is not None:
                    raise SystemExit(f"{args} exited: {log.read_text()[-1500:]}") from None
                time.sleep(0.5)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def new_page(browser: Any, url: str) -> Any:
    page = browser.new_page(viewport={"width": 1600, "height": 1400})
    page.goto(url)
    page.wait_for_selector("#answer-0", timeout=120_000)
    return page


def four_columns(page: Any, preset: str | None) -> None:
    slider = page.get_by_label("number input for variants")
    slider.fill(str(N_COLS))
    slider.press("Enter")
    page.wait_for_selector(f"text=Variant {N_COLS}", timeout=30_000)
    if preset:
        for i in range(N_COLS):
            page.get_by_label(f"preset {i + 1}", exact=True).click()
            page.get_by_role("option", name=preset, exact=True).click()


def browser_round(page: Any, click: Any, done: Any, timeout_s: float = 300) -> dict:
    """Watch the answer boxes, click, wait for `done()`, return the browser's record."""
    page.evaluate(WATCH_JS, N_COLS)
    page.wait_for_timeout(100)  # the watcher's first frame records the cleared boxes
    cpu0, t0 = proc_cpu.snapshot(), time.monotonic()
    click()  # Playwright's click returns once the click is dispatched: its own time varies
    time.sleep(CPU_WINDOW_S)  # the browser, the app and vLLM go on meanwhile
    cpu = {**proc_cpu.since(cpu0), "window": round(time.monotonic() - t0, 3)}
    deadline = time.monotonic() + timeout_s
    result = None
    while time.monotonic() < deadline:
        result = done()
        if result is not None:
            break
        time.sleep(0.2)
    else:
        state = page.evaluate("() => [document.querySelectorAll('.stale').length, "
                              "[0, 1, 2, 3].map(i => (document.querySelector('#metrics-' + i)"
                              " || {}).innerText)]")
        raise SystemExit(f"round did not finish in {timeout_s} s: {state}")
    for _ in range(600):  # the run's end is drawn (the page marks stale what a run replaces)
        if page.evaluate("() => document.querySelectorAll('.stale').length") == 0:
            break
        time.sleep(0.1)
    page.wait_for_timeout(300)  # the last updates reach the page
    page.evaluate("() => { window.__stop = true; }")
    return {"click": page.evaluate("() => window.__click"),
            "feed": page.evaluate("() => { const l = window.qllFeedLog || []; "
                                  "window.qllFeedLog = []; return l; }"),
            "obs": page.evaluate("() => window.__obs"), "result": result, "cpu": cpu}


def server_side(rec: RequestRecord) -> dict[str, float | None]:
    """The engine's own part of the wait (vLLM's --enable-per-request-metrics): queued ->
    scheduled, and scheduled -> first token (client TTFA minus these is the rest: the API
    server, the transport and the reader); and the reader's sent -> headers, sent -> first
    chunk."""
    parts = server_parts(rec.raw)
    r = rec.raw
    return {"server_queue_ms": parts.queue_ms if parts else None,
            "server_ttft_ms": parts.prefill_ms if parts else None,
            # sent -> the response's headers (vLLM sends them once the request is templated,
            # tokenized and handed to the engine) and -> its first chunk (the role chunk)
            "headers_ms": None if r.t_send is None or r.t_headers is None
            else (r.t_headers - r.t_send) * 1000,
            "first_chunk_ms": rec.metrics.first_chunk_ms}


def wait_parts(raw: list[dict]) -> dict[str, dict[str, Any]]:
    """Per row (plain page, Playground, headless): medians of the client's TTFA, the engine's
    part of it (queue, scheduled -> first token) and the rest; for the two browser rows, each
    process group's share of the machine from just before a click to CPU_WINDOW_S after it;
    and each row's ratios to headless with their intervals."""
    out: dict[str, dict[str, Any]] = {}
    for row in ("plain", "live", "headless"):
        rs = [r for r in raw if r["row"] == row and r.get("ttfa_ms") is not None]
        if not rs:
            continue
        rest = [_rest(r) for r in rs
                if r.get("server_ttft_ms") is not None and r.get("server_queue_ms") is not None]
        windows = [r["cpu_s"] for r in rs if r.get("cpu_s")]
        groups = sorted({g for w in windows for g in w} - {"window"})
        wall = sum(w["window"] for w in windows) * (os.cpu_count() or 1)
        out[row] = {"n": len(rs), "ttfa_p50_ms": p([r["ttfa_ms"] for r in rs], 50),
                    "headers_p50_ms": p([r["headers_ms"] for r in rs
                                         if r.get("headers_ms") is not None], 50),
                    "first_chunk_p50_ms": p([r["first_chunk_ms"] for r in rs
                                             if r.get("first_chunk_ms") is not None], 50),
                    "server_queue_p50_ms": p([r["server_queue_ms"] for r in rs
                                              if r.get("server_queue_ms") is not None], 50),
                    "server_ttft_p50_ms": p([r["server_ttft_ms"] for r in rs
                                             if r.get("server_ttft_ms") is not None], 50),
                    "rest_p50_ms": p(rest, 50), "clicks": len(windows),
                    "window_ms": round(1000 * sum(w["window"] for w in windows)
                                       / max(1, len(windows)), 1),
                    "click_window_cpu_pct": {g: round(100 * sum(w.get(g, 0.0) for w in windows)
                                                      / wall, 1) for g in groups} if wall else {},
                    "by_position": by_position(rs)}
    hl = [r for r in raw if r["row"] == "headless" and r.get("server_ttft_ms") is not None]
    for row in ("plain", "live"):
        rs = [r for r in raw if r["row"] == row and r.get("server_ttft_ms") is not None]
        if row in out and rs and hl:  # row vs headless, ratio of medians with its interval
            out[row]["vs_headless"] = {
                "server_ttft": within_5([r["server_ttft_ms"] for r in hl],
                                        [r["server_ttft_ms"] for r in rs]),
                "headers": within_5([r["headers_ms"] for r in hl if r.get("headers_ms")],
                                    [r["headers_ms"] for r in rs if r.get("headers_ms")]),
                "rest": within_5([_rest(r) for r in hl], [_rest(r) for r in rs])}
    return out


def by_position(rs: list[dict]) -> dict[str, dict[str, Any]]:
    """A row's TTFA and sent -> headers medians by its place in the round (ORDERS): whether
    what ran just before it moves it."""
    out: dict[str, dict[str, Any]] = {}
    for pos in sorted({r["position"] for r in rs if r.get("position") is not None}):
        at = [r for r in rs if r.get("position") == pos]
        out[str(pos)] = {"n": len(at), "ttfa_p50_ms": p([r["ttfa_ms"] for r in at], 50),
                         "headers_p50_ms": p([r["headers_ms"] for r in at
                                              if r.get("headers_ms") is not None], 50)}
    return out


def _rest(r: dict) -> float:
    return r["ttfa_ms"] - r["server_queue_ms"] - r["server_ttft_ms"]


def headless(settings: Settings, variants: list, prompt: str) -> list[RequestRecord]:
    """The same comparison without any UI (own thread: Playwright's sync API owns a loop)."""
    with ThreadPoolExecutor(1) as pool:
        recs = pool.submit(asyncio.run, compare(settings, variants, prompt)).result()
    return [RequestRecord.of(r) for r in recs]


def app_command(switch_interval_ms: float | None) -> list[str]:
    """How the app under test starts: app.py, or (an experiment's arm) app.py with the
    interpreter's thread switch interval set first (sys.setswitchinterval; CPython's default
    is 5 ms), to see whether the measuring thread waits for the GIL."""
    app = str(REPO_ROOT / "app.py")
    if switch_interval_ms is None:
        return [sys.executable, app]
    return [sys.executable, "-c", f"import runpy, sys; sys.setswitchinterval("
            f"{switch_interval_ms / 1000!r}); sys.argv = [{app!r}]; "
            f"sys.path.insert(0, {str(REPO_ROOT)!r}); "
            f"runpy.run_path({app!r}, run_name='__main__')"]


def app_env(base_url: str, port: int, runs_dir: Path) -> dict[str, str]:
    """The environment of the app under test: instrumented (the plain page, the live
    messages' stamps), no warm-up, its run files in `runs_dir`."""
    return {**os.environ, "PLAYGROUND_BASE_URL": base_url, "GRADIO_SERVER_PORT": str(port),
            "PLAYGROUND_RUNS_DIR": str(runs_dir), "GRADIO_ANALYTICS_ENABLED": "False",
            "PLAYGROUND_WARMUP": "off", "PLAYGROUND_UI_INSTRUMENT": "1"}


def chromium(cpus: str | None, tmp: Path) -> str:
    """The browser to launch: Debian's chromium, or (an experiment's arm) the same held to
    some CPUs (`taskset -c`), every process it starts included."""
    if not cpus:
        return "/usr/bin/chromium"
    wrapper = tmp / "chromium-pinned"
    wrapper.write_text(f'#!/bin/sh\nexec taskset -c {cpus} /usr/bin/chromium "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


def live_rows(browser: Any, base_url: str, rounds: int, tmp: Path,
              app_cmd: list[str] | None = None, send_at_click: bool = False
              ) -> tuple[dict, list]:
    runs_dir = tmp / "runs"
    port = free_port()
    env = app_env(base_url, port, runs_dir)
    settings = Settings(base_url=base_url)
    variant = PresetLibrary(settings.presets_dir).get(PRESET)
    url = f"http://127.0.0.1:{port}/"
    raw: list[dict] = []
    out: dict[str, Any] = {"first_lag": [], "lag": [], "ui": [], "headless": [],
                           "plain": {"first_lag": [], "lag": []}}
    with process(app_cmd or app_command(None), env, url, tmp / "app.log"):
        page = new_page(browser, url)
        four_columns(page, PRESET)
        if send_at_click:  # an experiment's arm: the page before 2026-12-07 (static/live.js)
            page.evaluate("() => { window.qllSendAtClick = true; }")
        plain = browser.new_page(viewport={"width": 1600, "height": 1400})
        plain.goto(f"{url}bench/plain/?preset={PRESET}")
        plain.wait_for_selector("#plain-run")

        def plain_round(prompt: str) -> tuple[dict, list[RequestRecord]]:
            """The same comparison from the plain page (no Gradio) of the same app."""
            plain.fill("#plain-prompt", prompt)
            plain.evaluate("() => { window.plainEnd = null; document.querySelectorAll("
                           "'textarea').forEach((t) => { t.value = ''; }); }")

            def done() -> list[RequestRecord] | None:
                end = plain.evaluate("() => window.plainEnd")
                return None if not end else [RequestRecord.model_validate(r)
                                             for r in end["records"]]

            got = browser_round(plain, plain.locator("#plain-run").click, done)
            return got, got["result"]

        def ui_round(prompt: str) -> tuple[dict, list[RequestRecord]]:
            before = set(runs_dir.glob("playground/*.jsonl"))
            page.get_by_label("prompt", exact=True).fill(prompt)

            def done() -> list[RequestRecord] | None:
                new = set(runs_dir.glob("playground/*.jsonl")) - before
                if new:
                    recs = read_run(new.pop()).requests
                    if len(recs) == N_COLS:
                        return recs
                return None

            got = browser_round(page, page.get_by_role("button", name="Run", exact=True).click,
                                done)
            return got, got["result"]

        ui_round(f"[warm-up ui] {ADDRESS}")
        plain_round(f"[warm-up plain] {ADDRESS}")
        headless(settings, [variant] * N_COLS, f"[warm-up hl] {ADDRESS}")
        def plain_rows(k: int, pos: int) -> None:
            got, recs = plain_round(f"[plain {k:03d}] {ADDRESS}")
            for c, rec in enumerate(recs):
                m = rec.metrics
                lens, times = content_times(rec)
                seen = first_seen(got["obs"], c)
                fl = None
                if seen is not None and got["click"] is not None and m.ttfa_ms is not None:
                    fl = seen - got["click"] - m.ttfa_ms
                    out["plain"]["first_lag"].append(fl)
                lg = lags(got["obs"], c, lens, times)
                out["plain"]["lag"] += lg
                raw.append({"row": "plain", "round": k, "position": pos, "column": c,
                            "click_ms": got["click"],
                            "first_visible_ms": seen, "ttft_ms": m.ttft_ms,
                            "ttfa_ms": m.ttfa_ms, "e2e_ms": m.e2e_ms, "first_lag_ms": fl,
                            **server_side(rec), "cpu_s": got["cpu"] if c == 0 else None,
                            "chunk_lengths": lens, "chunk_wall_s": times,
                            "browser": [o[1:] for o in got["obs"] if int(o[0]) == c]})

        def ui_rows(k: int, pos: int) -> None:
            got, recs = ui_round(f"[ui {k:03d}] {ADDRESS}")
            for c, rec in enumerate(recs):
                m = rec.metrics
                out["ui"].append({"ttft_ms": m.ttft_ms, "ttfa_ms": m.ttfa_ms,
                                  "e2e_ms": m.e2e_ms})
                lens, times = content_times(rec)
                seen = first_seen(got["obs"], c)
                fl = None
                if seen is not None and got["click"] is not None and m.ttfa_ms is not None:
                    fl = seen - got["click"] - m.ttfa_ms
                    out["first_lag"].append(fl)
                lg = lags(got["obs"], c, lens, times)
                out["lag"] += lg
                raw.append({"row": "live", "round": k, "position": pos, "column": c,
                            "click_ms": got["click"], "feed": got["feed"] if c == 0 else None,
                            "first_visible_ms": seen, "ttft_ms": m.ttft_ms,
                            "ttfa_ms": m.ttfa_ms, "e2e_ms": m.e2e_ms, "first_lag_ms": fl,
                            **server_side(rec), "cpu_s": got["cpu"] if c == 0 else None,
                            "chunk_lengths": lens, "chunk_wall_s": times,
                            "browser": [o[1:] for o in got["obs"] if int(o[0]) == c]})

        def headless_rows(k: int, pos: int) -> None:
            for c, rec in enumerate(headless(settings, [variant] * N_COLS,
                                             f"[hl {k:03d}] {ADDRESS}")):
                m = rec.metrics
                out["headless"].append({"ttft_ms": m.ttft_ms, "ttfa_ms": m.ttfa_ms,
                                        "e2e_ms": m.e2e_ms})
                raw.append({"row": "headless", "round": k, "position": pos, "column": c,
                            "ttft_ms": m.ttft_ms, "ttfa_ms": m.ttfa_ms, "e2e_ms": m.e2e_ms,
                            **server_side(rec)})

        do = {"plain": plain_rows, "live": ui_rows, "headless": headless_rows}
        for k in range(rounds):
            for pos, row in enumerate(ORDERS[k % len(ORDERS)]):
                do[row](k, pos)
        page.close()
        plain.close()
    return out, raw


def replay_row(browser: Any, base_url: str, rounds: int, tmp: Path) -> tuple[dict, list]:
    settings = Settings(base_url=base_url)
    variant = PresetLibrary(settings.presets_dir).get(PRESET)
    recorded = headless(settings, [variant] * N_COLS, f"[replay source] {ADDRESS}")
    path = save(from_history(recorded, title="ui-fidelity replay"), tmp / "replay.json")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLAYGROUND_")}
    env.update({"GRADIO_ANALYTICS_ENABLED": "False", "PLAYGROUND_RUNS_DIR": str(tmp / "rruns")})
    url = f"http://127.0.0.1:{port}/"
    t0 = min(r.raw.t_send for r in recorded if r.raw.t_send is not None)
    offsets = []  # per column: (cumulative lengths, offsets in s from the first send)
    for rec in recorded:
        lens, times = content_times(rec)
        assert rec.clock_origin is not None
        wall0 = rec.clock_origin[0] + (t0 - rec.clock_origin[1])
        offsets.append((lens, [t - wall0 for t in times]))
    out: dict[str, Any] = {"first_lag": [], "lag": []}
    raw: list[dict] = []
    with process([sys.executable, "-m", "playground.cli", "ui", "--replay", "--port",
                  str(port)], env, url, tmp / "replay-app.log"):
        page = new_page(browser, url)
        page.locator("#replay-panel input[type=file]").set_input_files(str(path))
        page.wait_for_timeout(1500)
        for k in range(rounds):
            def done() -> bool | None:
                obs = page.evaluate("() => window.__obs")
                cleared = {int(i) for i, _, n in obs if n == 0}
                drawn = page.evaluate(
                    "() => document.querySelectorAll('.stale').length === 0 && [0, 1, 2, 3]"
                    ".every(i => (document.querySelector('#metrics-' + i) || {}).innerText"
                    "?.includes('E2E'))")
                return True if drawn and len(cleared) == N_COLS else None

            got = browser_round(page, page.locator("#replay-run").click, done)
            for c, (lens, offs) in enumerate(offsets):
                if got["click"] is None:
                    continue
                times = [(got["click"] / 1000) + o for o in offs]  # when the recording says
                lg = lags(got["obs"], c, lens, times)
                seen = first_seen(got["obs"], c)
                fl = None if seen is None or not times else seen - times[0] * 1000
                if fl is not None:
                    out["first_lag"].append(fl)
                out["lag"] += lg
                raw.append({"row": "replay", "round": k, "column": c, "click_ms": got["click"],
                            "first_visible_ms": seen, "recorded_first_answer_s": offs[0]
                            if offs else None, "first_lag_ms": fl,
                            "browser": [o[1:] for o in got["obs"] if int(o[0]) == c]})
        page.close()
    return out, raw


def control_row(browser: Any, rounds: int, tmp: Path, busy: Any | None, name: str
                ) -> tuple[dict, list]:
    log = tmp / f"{name}.jsonl"
    port = free_port()
    env = {**os.environ, "UI_CONTROL_LOG": str(log), "GRADIO_SERVER_PORT": str(port),
           "GRADIO_ANALYTICS_ENABLED": "False"}
    url = f"http://127.0.0.1:{port}/"
    out: dict[str, Any] = {"first_lag": [], "lag": []}
    raw: list[dict] = []
    stop = threading.Event()
    load = None
    if busy is not None:
        load = threading.Thread(target=lambda: [busy(k) for k in range(10_000)
                                                if not stop.is_set()], daemon=True)
    with process([sys.executable, str(Path(__file__).with_name("ui_control_app.py"))], env,
                 url, tmp / f"{name}-app.log"):
        page = new_page(browser, url)
        if load is not None:
            load.start()
            time.sleep(2)
        for k in range(rounds + 1):  # the first round warms up
            n_before = len(log.read_text().splitlines()) if log.exists() else 0

            def done(n_before: int = n_before) -> list | None:
                lines = log.read_text().splitlines() if log.exists() else []
                return json.loads(lines[-1]) if len(lines) > n_before else None

            got = browser_round(page, page.get_by_role("button", name="Run").click, done)
            if k == 0:
                continue
            stamps = got["result"]
            lens = [n for _, n in stamps]
            times = [t for t, _ in stamps]
            for c in range(N_COLS):
                lg = lags(got["obs"], c, lens, times)
                out["lag"] += lg
                seen = first_seen(got["obs"], c)
                if seen is not None:
                    out["first_lag"].append(seen - times[0] * 1000)
                raw.append({"row": name, "round": k, "column": c, "yields": stamps,
                            "browser": [o[1:] for o in got["obs"] if int(o[0]) == c]})
        page.close()
    stop.set()
    if load is not None:
        load.join(timeout=120)
    return out, raw


def summary_line(label: str, row: dict, floor: float | None) -> dict:
    s = {"row": label, "n_lags": len(row["lag"]), "lag_p50_ms": p(row["lag"], 50),
         "lag_p95_ms": p(row["lag"], 95), "lag_max_ms": max(row["lag"]) if row["lag"] else None,
         "first_lag_p50_ms": p(row["first_lag"], 50), "first_lag_p90_ms":
         p(row["first_lag"], 90), "first_lag_p95_ms": p(row["first_lag"], 95),
         "n_first": len(row["first_lag"])}
    if floor and s["lag_p50_ms"] is not None:
        s["lag_vs_control"] = s["lag_p50_ms"] / floor
    return s


def within_5(headless_ms: list[float], ui_ms: list[float]) -> dict:
    """UI vs headless, ratio of medians with its 95% interval (lab/calls: the permutation
    test inverted), and whether that interval says "within 5%", "outside 5%" or neither."""
    e = calls.compare(ui_ms, headless_ms)  # ratio = ui / headless
    ci = e.ratio_ci
    if ci is None:
        verdict = "not measurable"
    elif ci[0] >= 0.95 and ci[1] <= 1.05:
        verdict = "within 5%"
    elif ci[1] < 0.95 or ci[0] > 1.05:
        verdict = "outside 5%"
    else:
        verdict = f"not resolved at this n ({e.n_variant} vs {e.n_baseline})"
    return {"headless": e.variant, "ui": e.baseline, "ratio": e.ratio, "ratio_ci": ci,
            "verdict": verdict, "n_headless": e.n_variant, "n_ui": e.n_baseline}


def judge(plain: dict, live: dict, ttfa: dict) -> list[dict]:
    """Issue targets: click -> first answer text minus TTFA, p50 <= max(60 ms, 1.5x the plain
    page's) and p90 <= 100 ms; UI TTFA within 5% of headless; render lag p50 <= 30 ms."""
    def met(v: float | None, limit: float | None) -> bool | None:
        return None if v is None or limit is None else v <= limit

    p50, plain50 = live["first_lag_p50_ms"], plain["first_lag_p50_ms"]
    limit = None if plain50 is None else max(60.0, 1.5 * plain50)
    return [
        {"target": "click -> text - TTFA, p50 <= max(60 ms, 1.5x plain page)",
         "measured": f"{fmt(p50)} (plain page {fmt(plain50)}, limit {fmt(limit)})",
         "met": met(p50, limit)},
        {"target": "click -> text - TTFA, p90 <= 100 ms",
         "measured": fmt(live["first_lag_p90_ms"]), "met": met(live["first_lag_p90_ms"], 100)},
        {"target": "UI TTFA within 5% of headless", "measured":
         f"{fmt(ttfa['ratio'], '')} ({ttfa['verdict']})",
         "met": True if ttfa["verdict"] == "within 5%" else
         False if ttfa["verdict"] == "outside 5%" else None},
        {"target": "render lag p50 <= 30 ms", "measured": fmt(live["lag_p50_ms"]),
         "met": met(live["lag_p50_ms"], 30)},
    ]


def fmt(v: float | None, unit: str = " ms") -> str:
    return "-" if v is None else f"{v:.0f}{unit}" if unit else f"{v:.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--rows", default="control-idle,control-busy,live,replay",
                    help="which rows to measure (comma-separated)")
    ap.add_argument("--out", type=Path, default=None, help="write summary.json + raw.jsonl here")
    ap.add_argument("--app-switch-interval-ms", type=float, default=None,
                    help="experiment: start the app with this thread switch interval")
    ap.add_argument("--chromium-cpus", default=None,
                    help="experiment: hold the browser to these CPUs (taskset -c, e.g. 1)")
    ap.add_argument("--send-at-click", action="store_true",
                    help="experiment: the Playground's Run sends its request at the click, not "
                         "after the browser drew the click (the page before 2026-12-07)")
    a = ap.parse_args()
    if a.out is not None and a.out.exists() and any(a.out.iterdir()):
        raise SystemExit(f"--out: {a.out} is not empty; give a new or empty directory")
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="ui-fidelity-"))
    settings = Settings(base_url=a.base_url)
    variant = PresetLibrary(settings.presets_dir).get(PRESET)

    def busy(k: int) -> None:
        headless(settings, [variant] * N_COLS, f"[load {k:04d}] {ADDRESS}")

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium(a.chromium_cpus, tmp),
                                     args=CHROMIUM_ARGS)
        empty: tuple[dict, list] = ({"first_lag": [], "lag": [], "ui": [], "headless": [],
                                     "plain": {"first_lag": [], "lag": []}}, [])
        want = set(a.rows.split(","))
        control_idle, raw_ci = (control_row(browser, a.rounds, tmp, None, "control-idle")
                                if "control-idle" in want else empty)
        control_busy, raw_cb = (control_row(browser, a.rounds, tmp, busy, "control-busy")
                                if "control-busy" in want else empty)
        live, raw_live = (live_rows(browser, a.base_url, a.rounds, tmp,
                                    app_command(a.app_switch_interval_ms), a.send_at_click)
                          if "live" in want else empty)
        replay, raw_replay = (replay_row(browser, a.base_url, a.rounds, tmp)
                              if "replay" in want else empty)
        browser.close()

    floor = p(control_busy["lag"], 50)
    rows = [summary_line("control, idle machine", control_idle, floor),
            summary_line("control, vLLM busy (floor)", control_busy, floor),
            summary_line("plain page, same app", live["plain"], floor),
            summary_line("playground, live vLLM", live, floor),
            summary_line("playground, replay mode", replay, floor)]

    def side(name: str, key: str) -> list[float]:
        return [r[key] for r in live[name] if r[key] is not None]

    ratios = {key: within_5(side("headless", key), side("ui", key))
              for key in ("ttft_ms", "ttfa_ms", "e2e_ms")}
    targets = judge(rows[2], rows[3], ratios["ttfa_ms"])
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}"
    print(f"\nUI fidelity: {a.rounds} rounds x {N_COLS} streaming columns of {PRESET}; "
          f"server {a.base_url}; machine {machine}")
    print(f"{'row':30}{'click->visible - TTFA':>24}{'render lag':>26}{'x floor':>9}")
    print(f"{'':30}{'p50 / p95':>24}{'p50 / p95 / max (n)':>26}")
    for s in rows:
        print(f"{s['row']:30}{fmt(s['first_lag_p50_ms']):>12} /{fmt(s['first_lag_p95_ms']):>9}"
              f"{fmt(s['lag_p50_ms']):>10} /{fmt(s['lag_p95_ms']):>7} /"
              f"{fmt(s['lag_max_ms']):>8} ({s['n_lags']})"
              f"{fmt(s.get('lag_vs_control'), ''):>9}")
    print(f"\n{'median':14}{'headless':>12}{'UI (4 cols)':>14}{'UI/headless':>13}"
          f"{'95% interval':>18}  verdict")
    for key, label in (("ttft_ms", "TTFT"), ("ttfa_ms", "TTFA"), ("e2e_ms", "E2E")):
        r = ratios[key]
        ci = r["ratio_ci"]
        print(f"{label:14}{fmt(r['headless']):>12}{fmt(r['ui']):>14}"
              f"{fmt(r['ratio'], ''):>13}{'-' if ci is None else f'{ci[0]:.2f}-{ci[1]:.2f}':>18}"
              f"  {r['verdict']}")
    parts = wait_parts(raw_live)
    if parts:
        print(f"\nwhere the wait goes (medians; 'engine' = vLLM's own queue + scheduled -> "
              f"first token; CPU = each process group's share of the machine from the click "
              f"to {CPU_WINDOW_S:.1f} s after it)")
        for row, w in parts.items():
            cpu = ", ".join(f"{g} {pct:.0f}%" for g, pct in w["click_window_cpu_pct"].items()
                            if pct >= 1)
            if cpu:
                cpu += f" (window {w['window_ms']:.0f} ms)"
            for what, r in w.get("vs_headless", {}).items():
                ci = r["ratio_ci"]
                cpu += (f"\n            {what} vs headless: {fmt(r['ratio'], '')} "
                        f"({'-' if ci is None else f'{ci[0]:.2f}-{ci[1]:.2f}'}), {r['verdict']}")
            place = "\n            by place in the round: " + ", ".join(
                f"{int(pos) + 1}. TTFA {fmt(b['ttfa_p50_ms'])} headers {fmt(b['headers_p50_ms'])}"
                f" (n={b['n']})" for pos, b in w.get("by_position", {}).items())
            print(f"  {row:9} TTFA {fmt(w['ttfa_p50_ms'])}  headers {fmt(w['headers_p50_ms'])}  "
                  f"first chunk {fmt(w['first_chunk_p50_ms'])}  engine "
                  f"{fmt(w['server_queue_p50_ms'])}"
                  f" + {fmt(w['server_ttft_p50_ms'])}  rest {fmt(w['rest_p50_ms'])}"
                  + (f"\n            CPU: {cpu}" if cpu else "") + place)
    print("\ntargets (docs/fidelity.md):")
    for t in targets:
        print(f"  {'MET ' if t['met'] else 'MISSED' if t['met'] is False else 'n/a '} "
              f"{t['target']}: {t['measured']}")
    if a.out is not None:
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "summary.json").write_text(json.dumps({
            "machine": machine, "base_url": a.base_url, "rounds": a.rounds, "columns": N_COLS,
            "preset": PRESET, "rows": rows, "ui_vs_headless": ratios, "targets": targets,
            "where_the_wait_goes": parts, "cpu_window_s": CPU_WINDOW_S,
            "app_switch_interval_ms": a.app_switch_interval_ms, "chromium_cpus": a.chromium_cpus,
            "created": time.strftime("%Y-%m-%d %H:%M:%S %Z")}, indent=1) + "\n")
        with (a.out / "raw.jsonl").open("w") as f:
            for line in [*raw_ci, *raw_cb, *raw_live, *raw_replay]:
                f.write(json.dumps(line, ensure_ascii=False) + "\n")
        print(f"\nwrote {a.out}/summary.json and raw.jsonl")
    return 0


if __name__ == "__main__":
    sys.exit(main())
