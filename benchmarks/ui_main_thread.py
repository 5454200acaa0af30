"""What the browser's main thread does right after a Run click: the Playground against the plain
page of the same app (the control), in Chromium, alternating click by click.

    python benchmarks/ui_main_thread.py --base-url http://127.0.0.1:8000/v1 --clicks 8 --out DIR

One app (instrumented, so that it serves the plain page: bench/plain/), one browser, two pages:
the Playground with 4 streaming columns of fixed-64-stream (as benchmarks/ui_fidelity.py sets
it up) and the plain page (one button, four textareas, the same runner). For each click, a
Chromium trace (devtools.timeline, invalidation tracking) covers the click and the `--window-s`
after it; from the page's renderer main thread it sums:

- tasks: the time the main thread was busy (top-level RunTask);
- style (UpdateLayoutTree), layout (Layout), paint (Paint): the rendering work inside them;
- frames drawn (BeginMainFrame), the layout tree's size (Layout's totalObjects, largest), and
  the style invalidations by reason (what made the browser recompute style: an animation, a
  text control's value, a class change ...).

Medians per page, every click's sums in DIR/raw.jsonl. A page's work here is CPU taken from
vLLM and the app's reader on a small machine (docs/fidelity.md).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import ui_fidelity as uf

from playground.server.managed import free_port

CATEGORIES = ["devtools.timeline", "disabled-by-default-devtools.timeline",
              "disabled-by-default-devtools.timeline.invalidationTracking"]
SUMS = {"tasks": "RunTask", "style": "UpdateLayoutTree", "layout": "Layout", "paint": "Paint"}
SUMMED = {event: key for key, event in SUMS.items()}  # trace event -> its sum


def main_thread_work(trace: dict[str, Any], url: str) -> dict[str, Any]:
    """The sums above, from one Chromium trace: the main thread of the renderer that shows
    `url` (the trace holds every renderer of the browser: the other page's too)."""
    events = trace["traceEvents"]
    pids = {f.get("processId") for e in events if e.get("name") == "TracingStartedInBrowser"
            for f in ((e.get("args") or {}).get("data") or {}).get("frames") or []
            if f.get("url") == url}
    main = {(e["pid"], e["tid"]) for e in events
            if e.get("name") == "thread_name" and e.get("args", {}).get("name") == "CrRendererMain"
            and e["pid"] in pids}
    if not main:
        raise SystemExit(f"the trace has no renderer for {url}")
    ms: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    frames = 0
    tree = 0
    for e in events:
        here = (e.get("pid"), e.get("tid")) in main
        name = e.get("name")
        if here and e.get("ph") == "X" and "dur" in e:
            if name in SUMMED:
                ms[SUMMED[name]] += e["dur"] / 1000
            if name == "Layout":
                begin = (e.get("args") or {}).get("beginData") or {}
                tree = max(tree, int(begin.get("totalObjects") or 0))
        if name == "AnimationFrame::Render" and e.get("ph") in ("b", "X") and e["pid"] in pids:
            frames += 1  # a frame whose rendering ran on the main thread
        if name == "StyleRecalcInvalidationTracking" and e.get("pid") in pids:
            reason = ((e.get("args") or {}).get("data") or {}).get("reason") or "?"
            reasons[reason] += 1
    return {**{k: round(ms[k], 1) for k in SUMS}, "frames": frames, "layout_objects": tree,
            "style_invalidations": dict(reasons.most_common())}


def traced_click(browser: Any, page: Any, click: Any, prompt: str, window_s: float,
                 path: Path) -> dict:
    """`click(prompt, start)` fills its prompt, lets it settle, calls `start` (the trace
    starts), clicks Run; the trace stops `window_s` later."""
    click(prompt, lambda: browser.start_tracing(page=page, path=str(path),
                                                categories=CATEGORIES))
    time.sleep(window_s)
    browser.stop_tracing()
    return main_thread_work(json.loads(path.read_text("utf-8")), page.url)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--clicks", type=int, default=8, help="clicks per page")
    ap.add_argument("--window-s", type=float, default=0.6, help="traced after each click")
    ap.add_argument("--out", type=Path, default=None, help="write raw.jsonl here")
    a = ap.parse_args()
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="ui-main-thread-"))
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    rows: list[dict[str, Any]] = []
    env = uf.app_env(a.base_url, port, tmp / "runs")
    with sync_playwright() as pw, uf.process(uf.app_command(None), env, url, tmp / "app.log"):
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=uf.CHROMIUM_ARGS)
        play = uf.new_page(browser, url)
        uf.four_columns(play, uf.PRESET)
        play.wait_for_selector("div.wrap.full:not(.hide)", state="detached", timeout=120_000)
        plain = browser.new_page(viewport={"width": 1600, "height": 1400})
        plain.goto(f"{url}bench/plain/?preset={uf.PRESET}")
        plain.wait_for_selector("#plain-run")

        def play_click(prompt: str, start: Any) -> None:
            play.get_by_label("prompt", exact=True).fill(prompt)
            play.wait_for_timeout(1000)  # the prompt's edit is settled before the click
            start()
            play.get_by_role("button", name="Run", exact=True).click()

        def plain_click(prompt: str, start: Any) -> None:
            plain.fill("#plain-prompt", prompt)
            plain.evaluate("() => { window.plainEnd = null; }")
            plain.wait_for_timeout(1000)
            start()
            plain.locator("#plain-run").click()

        pages = {  # page, its click (a prompt of its own), the end of its run
            "playground": (play, play_click, lambda: play.wait_for_function(
                "document.querySelectorAll('.stale').length == 0", timeout=300_000)),
            "plain page": (plain, plain_click, lambda: plain.wait_for_function(
                "() => !!window.plainEnd", timeout=300_000)),
        }
        for k in range(a.clicks * 2):
            # A B B A ...: neither page always goes first
            name = list(pages)[(k + (k // 2) % 2) % 2]
            page, click, done = pages[name]
            time.sleep(2.0)  # what the last click left behind has settled
            work = traced_click(browser, page, click, f"[{k} {name}] {uf.ADDRESS}", a.window_s,
                                tmp / f"trace-{k}.json")
            done()
            rows.append({"click": k, "page": name, **work})
            print(json.dumps(rows[-1]), flush=True)
        browser.close()
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}"
    print(f"\nmain thread in the {a.window_s:.1f} s after a Run click, medians of {a.clicks} "
          f"clicks per page; {machine}; server {a.base_url}")
    print(f"{'page':12}{'tasks':>9}{'style':>9}{'layout':>9}{'paint':>9}{'frames':>8}"
          f"{'layout objects':>16}")
    for name in pages:
        mine = [r for r in rows if r["page"] == name]

        def med(key: str, mine: list[dict[str, Any]] = mine) -> float:
            return statistics.median(r[key] for r in mine)
        print(f"{name:12}{med('tasks'):>7.0f}ms{med('style'):>7.0f}ms{med('layout'):>7.0f}ms"
              f"{med('paint'):>7.0f}ms{med('frames'):>8.0f}{med('layout_objects'):>16.0f}")
        reasons: Counter[str] = Counter()
        for r in mine:
            reasons.update(r["style_invalidations"])
        print(f"{'':12}style invalidations per click: " + ", ".join(
            f"{why} {n / len(mine):.1f}" for why, n in reasons.most_common(6)))
    if a.out is not None:
        a.out.mkdir(parents=True, exist_ok=True)
        with (a.out / "raw.jsonl").open("w", encoding="utf-8") as f:
            f.write(json.dumps({"machine": machine, "base_url": a.base_url,
                                "window_s": a.window_s, "preset": uf.PRESET,
                                "created": time.strftime("%Y-%m-%d %H:%M:%S %Z")}) + "\n")
            for r in rows:
                f.write(json.dumps(r) + "\n")
        print(f"\nwrote {a.out}/raw.jsonl")
    return 0


if __name__ == "__main__":
    sys.exit(main())
