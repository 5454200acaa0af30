"""What a preset pick costs the page: the app at a git ref (A) against the working tree (B),
side by side in one browser, picks alternated A B B A.

A pick writes a dozen controls of its column. How many hand-overs of the page's inputs follow
it (ui/run_route: `sync`), how long the browser's main thread is busy in the window after it,
and how long until the page's last Gradio request for it has answered, are measured per pick
from a Chromium trace of that page's own renderer (ui_main_thread.main_thread_work) and its
network events. Each round also traces an idle window of the same length on each page: the
floor, what the page costs when nothing happens (the live channel, timers, the machine).

    python benchmarks/ui_pick.py --base-url URL --ref HEAD~1 --picks 8 --out DIR

Both apps run from the same interpreter against the same vLLM server (a pick sends nothing to
it). B/A ratios come with the lab's permutation-test interval (`lab/calls`); a pick is the
independent unit.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import ui_fidelity as uf  # noqa: E402
import ui_main_thread as umt  # noqa: E402

from playground.lab import calls  # noqa: E402
from playground.server.managed import free_port  # noqa: E402

HANDLE = re.compile(r"[A-Za-z0-9_-]+:\d+")  # a hand-over's first value (static/live.js)
PRESETS = ("fixed-64-stream", "seed-default")  # picked in turn: each pick changes many controls
MEASURES = ("busy_ms", "settled_ms")  # tested; hand-overs are counted


def handover(post_data: str | None) -> bool:
    """Whether a request body is a hand-over of the page's inputs (its first value is the
    page's '<token>:<number>')."""
    try:
        data = json.loads(post_data or "{}").get("data")
    except (ValueError, AttributeError):
        return False
    return bool(data) and isinstance(data[0], str) and HANDLE.fullmatch(data[0]) is not None


def traced(browser: Any, page: Any, act: Any, window_s: float, path: Path) -> dict[str, Any]:
    """Trace `page` while `act()` runs and `window_s` after it: the main thread's work, the
    hand-overs sent, and when the last Gradio request sent in the window answered (ms after
    the act, from the browser's own request timing: Playwright's sync API delivers events
    late, when it is next called)."""
    finished: list[Any] = []

    def on_finished(r: Any) -> None:
        if "gradio_api" in r.url and r.method == "POST":
            finished.append(r)

    page.on("requestfinished", on_finished)
    browser.start_tracing(page=page, path=str(path), categories=umt.CATEGORIES)
    t0 = time.time()
    act()
    time.sleep(max(0.0, window_s - (time.time() - t0)))
    browser.stop_tracing()
    page.wait_for_timeout(100)  # the window's last events are delivered
    page.remove_listener("requestfinished", on_finished)
    work = umt.main_thread_work(json.loads(path.read_text("utf-8")), page.url)
    mine = [(r, r.timing) for r in finished if r.timing["startTime"] / 1000 >= t0]
    ends = [(t["startTime"] + t["responseEnd"]) / 1000 - t0 for _, t in mine
            if t["responseEnd"] > 0]
    return {"busy_ms": work["tasks"], "style_ms": work["style"], "layout_ms": work["layout"],
            "paint_ms": work["paint"], "posts": len(mine),
            "handovers": sum(handover(r.post_data) for r, _ in mine),
            "settled_ms": 1000 * max(ends) if ends else 0.0}


def compare(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """B against A per measure (picks only), and each arm's idle floor."""
    out = []
    for m in MEASURES:
        a = [r[m] for r in rows if r["arm"] == "A" and r["what"] == "pick"]
        b = [r[m] for r in rows if r["arm"] == "B" and r["what"] == "pick"]
        e = calls.compare(a, b)  # A the baseline: the call says whether B is lower
        verdict = calls.call(e)
        ci = e.ratio_ci  # of baseline / variant = A / B
        out.append({"measure": m, "A": e.baseline, "B": e.variant,
                    "B/A": 1 / e.ratio if e.ratio else None,
                    "interval": (1 / ci[1], 1 / ci[0]) if ci else None, "p": e.p_value,
                    "call": calls.too_few_text(e) if verdict == "too few samples" else verdict,
                    "n": [len(a), len(b)]})
    for arm in ("A", "B"):
        n = [r["handovers"] for r in rows if r["arm"] == arm and r["what"] == "pick"]
        out.append({"measure": f"hand-overs per pick, arm {arm}",
                    arm: statistics.median(n) if n else None,
                    "range": [min(n), max(n)] if n else None, "n": len(n)})
    for arm in ("A", "B"):
        idle = [r["busy_ms"] for r in rows if r["arm"] == arm and r["what"] == "idle"]
        out.append({"measure": f"floor: busy_ms of an idle window, arm {arm}",
                    arm: statistics.median(idle) if idle else None, "n": len(idle)})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--ref", required=True, help="git ref of arm A (B: the working tree)")
    ap.add_argument("--picks", type=int, default=8, help="picks per arm")
    ap.add_argument("--window-s", type=float, default=4.0, help="traced from each pick")
    ap.add_argument("--out", type=Path, default=None, help="write raw.jsonl and summary.json")
    a = ap.parse_args()
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="ui-pick-"))
    tree = tmp / "ref"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), a.ref],
                   check=True, capture_output=True)
    rev = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], check=True,
                         capture_output=True, text=True).stdout.strip()
    rows: list[dict[str, Any]] = []
    try:
        with ExitStack() as stack, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium",
                                         args=uf.CHROMIUM_ARGS)
            pages = {}
            for arm, app in (("A", tree / "app.py"), ("B", ROOT / "app.py")):
                port = free_port()
                url = f"http://127.0.0.1:{port}/"
                env = uf.app_env(a.base_url, port, tmp / f"runs-{arm}")
                stack.enter_context(uf.process([sys.executable, str(app)], env, url,
                                               tmp / f"app-{arm}.log"))
                page = uf.new_page(browser, url)
                page.wait_for_selector("div.wrap.full:not(.hide)", state="detached",
                                       timeout=120_000)
                pages[arm] = page
            for k in range(a.picks * 2):
                arm = "AB"[(k + (k // 2) % 2) % 2]  # A B B A ...: neither arm always first
                page = pages[arm]
                preset = PRESETS[(k // 2) % 2]
                time.sleep(1.5)  # what the last pick left behind has settled
                idle = traced(browser, page, lambda: None, a.window_s, tmp / f"idle-{k}.json")
                rows.append({"k": k, "arm": arm, "what": "idle", **idle})
                page.get_by_label("preset 1", exact=True).click()
                option = page.get_by_role("option", name=preset, exact=True)
                option.wait_for()
                work = traced(browser, page, option.click, a.window_s, tmp / f"pick-{k}.json")
                rows.append({"k": k, "arm": arm, "what": "pick", "preset": preset, **work})
                print(json.dumps(rows[-1]), flush=True)
            browser.close()
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                       capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}"
    result = compare(rows)
    print(f"\na preset pick, A = {a.ref} ({rev}), B = the working tree; {a.picks} picks each, "
          f"{a.window_s:.1f} s traced from each; {machine}")
    for r in result:
        if "B/A" in r:
            ci = r["interval"]
            iv = f" ({ci[0]:.2f}-{ci[1]:.2f})" if ci else ""
            ratio = f"{r['B/A']:.2f}x{iv}" if r["B/A"] is not None else "n/a"
            print(f"  {r['measure']:12} A {r['A']:8.0f}  B {r['B']:8.0f}  B/A {ratio}  "
                  f"{r['call']}")
        else:
            value = next(v for k, v in r.items() if k in ("A", "B"))
            span = f", {r['range'][0]}-{r['range'][1]}" if r.get("range") else " ms"
            print(f"  {r['measure']}: {value:.0f}{span} (n={r['n']})")
    if a.out is not None:
        a.out.mkdir(parents=True, exist_ok=True)
        with (a.out / "raw.jsonl").open("w", encoding="utf-8") as f:
            f.write(json.dumps({"machine": machine, "base_url": a.base_url, "ref": a.ref,
                                "ref_commit": rev, "window_s": a.window_s,
                                "created": time.strftime("%Y-%m-%d %H:%M:%S %Z")}) + "\n")
            for r in rows:
                f.write(json.dumps(r) + "\n")
        (a.out / "summary.json").write_text(json.dumps(result, indent=1) + "\n", "utf-8")
        print(f"\nwrote {a.out}/raw.jsonl and summary.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
