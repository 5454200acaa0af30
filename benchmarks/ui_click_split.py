"""Where the Playground's extra TTFA starts: in the page's click, or in the app's stage path?

One app (as the Playground runs, with the live feed instrumented), one Chromium page with 4
streaming columns (4 x fixed-64-stream, unique prompts), and five ways to start the same
comparison, rotated round by round (every way takes every place in the round equally often),
with `--settle-s` between them so that what one leaves behind (its page's end, its hand-over)
does not fall on the next:

- **click**: Playwright clicks Run (a real mouse click: the page's handler, then its own POST,
  sent once the browser has drawn what the click changed -- the page as shipped);
- **click-now**: the same click with the POST sent at the click (`window.qllSendAtClick`, the
  page before 2026-12-07), side by side with the shipped page;
- **jsclick**: the page's Run button clicked from script (the handler and the page's own POST,
  no mouse, hover or focus change);
- **post**: the page's own work for a click done first (`qllFollow`: the columns cleared), then
  the same `stage/run/<page token>` route POSTed from this process; the page follows the run
  and paints it as usual;
- **headless**: the same comparison with no UI at all (what the CLI measures): the control.

TTFA and sent -> response headers come from the run files (the app's own reader) and the
headless records; each way's median is compared with headless (`lab/calls`: ratio with its 95%
interval, "within 5%" only when the whole interval is).

    python benchmarks/ui_click_split.py --base-url URL --rounds 25 --out DIR
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ui_fidelity as uf

from playground.core.record import RequestRecord
from playground.lab.store import read_run
from playground.server.managed import free_port
from playground.settings import Settings
from playground.specs.presets import PresetLibrary

WAYS = ("click", "click-now", "jsclick", "post", "headless")


def orders() -> list[tuple[str, ...]]:
    """A cyclic Latin square: round k runs the ways in orders()[k % len(WAYS)]."""
    return [tuple(WAYS[(i + j) % len(WAYS)] for j in range(len(WAYS)))
            for i in range(len(WAYS))]


def summarise(rows: list[dict]) -> dict[str, Any]:
    """Per way: medians of TTFA and sent -> headers, and each against headless."""
    def of(way: str, key: str) -> list[float]:
        return [r[key] for r in rows if r["way"] == way and r.get(key) is not None]

    out: dict[str, Any] = {}
    for way in WAYS:
        out[way] = {"n": len(of(way, "ttfa_ms")), "ttfa_p50_ms": uf.p(of(way, "ttfa_ms"), 50),
                    "headers_p50_ms": uf.p(of(way, "headers_ms"), 50)}
        if way != "headless":
            out[way]["ttfa_vs_headless"] = uf.within_5(of("headless", "ttfa_ms"),
                                                       of(way, "ttfa_ms"))
            out[way]["headers_vs_headless"] = uf.within_5(of("headless", "headers_ms"),
                                                          of(way, "headers_ms"))
    if "click" in out and "click-now" in out:  # the shipped page against the page before
        out["click"]["ttfa_vs_click_now"] = uf.within_5(of("click-now", "ttfa_ms"),
                                                        of("click", "ttfa_ms"))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--rounds", type=int, default=25,
                    help=f"a multiple of {len(WAYS)} puts every way in every place equally often")
    ap.add_argument("--settle-s", type=float, default=1.0, help="pause between two ways")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    if a.out.exists() and any(a.out.iterdir()):
        raise SystemExit(f"--out: {a.out} is not empty; give a new or empty directory")
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="ui-click-split-"))
    runs_dir, port = tmp / "runs", free_port()
    env = uf.app_env(a.base_url, port, runs_dir)
    url = f"http://127.0.0.1:{port}/"
    settings = Settings(base_url=a.base_url)
    variant = PresetLibrary(settings.presets_dir).get(uf.PRESET)
    rows: list[dict] = []

    def new_run(before: set[Path]) -> list[RequestRecord]:
        for _ in range(3000):
            new = set(runs_dir.glob("playground/*.jsonl")) - before
            if new:
                recs = read_run(new.pop()).requests
                if len(recs) == uf.N_COLS and all(r.metrics.e2e_ms is not None for r in recs):
                    return recs
            time.sleep(0.1)
        raise SystemExit("a run did not finish in 300 s")

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=uf.CHROMIUM_ARGS)
        with uf.process(uf.app_command(None), env, url, tmp / "app.log"):
            page = uf.new_page(browser, url)
            uf.four_columns(page, uf.PRESET)
            token = page.evaluate("() => window.qllFollow()")

            def in_page(prompt: str, how: str) -> list[RequestRecord]:
                before = set(runs_dir.glob("playground/*.jsonl"))
                page.get_by_label("prompt", exact=True).fill(prompt)
                if how in ("click", "now"):
                    now = "true" if how == "now" else "false"
                    page.evaluate(f"() => {{ window.qllSendAtClick = {now}; }}")
                    page.get_by_role("button", name="Run", exact=True).click()
                else:
                    page.evaluate("() => { window.qllSendAtClick = false; "
                                  "document.getElementById(window.qllIds.run).click(); }")
                return new_run(before)

            def post(prompt: str) -> list[RequestRecord]:
                before = set(runs_dir.glob("playground/*.jsonl"))
                page.evaluate("() => window.qllFollow()")  # the page's own part of a click
                time.sleep(0.1)
                req = urllib.request.Request(
                    f"{url}stage/run/{token}", method="POST",
                    data=json.dumps({"seq": 0, "prompt": prompt}).encode(),
                    headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(req, timeout=30) as r:
                    r.read()
                return new_run(before)

            def headless(prompt: str) -> list[RequestRecord]:
                return uf.headless(settings, [variant] * uf.N_COLS, prompt)

            start = {"click": lambda pr: in_page(pr, "click"),
                     "click-now": lambda pr: in_page(pr, "now"),
                     "jsclick": lambda pr: in_page(pr, "js"), "post": post, "headless": headless}
            in_page(f"[warm-up] {uf.ADDRESS}", "click")
            time.sleep(a.settle_s)
            for k in range(a.rounds):
                for place, way in enumerate(orders()[k % len(WAYS)]):
                    for c, rec in enumerate(start[way](f"[{way} {k:03d}] {uf.ADDRESS}")):
                        rows.append({"way": way, "round": k, "place": place, "column": c,
                                     "ttfa_ms": rec.metrics.ttfa_ms, **uf.server_side(rec)})
                    time.sleep(a.settle_s)
        browser.close()

    s = summarise(rows)
    print(f"\nwhere the extra TTFA starts: {a.rounds} rounds x {uf.N_COLS} columns per way, "
          f"{a.settle_s:.1f} s between ways; server {a.base_url}")
    print(f"{'way':10}{'TTFA p50':>10}{'headers p50':>13}{'TTFA / headless (95%)':>30}"
          f"{'headers / headless (95%)':>32}")
    for way in WAYS:
        w = s[way]
        cols = ""
        for key in ("ttfa_vs_headless", "headers_vs_headless"):
            r = w.get(key)
            ci = r and r["ratio_ci"]
            cols += (f"{'':>30}" if r is None else
                     f"{r['ratio']:>8.2f} ({ci[0]:.2f}-{ci[1]:.2f}) {r['verdict'][:12]:>12}"
                     if ci else f"{r['ratio']:>8.2f} {r['verdict']:>20}")
        print(f"{way:10}{uf.fmt(w['ttfa_p50_ms']):>10}{uf.fmt(w['headers_p50_ms']):>13}  {cols}")
    r = s["click"].get("ttfa_vs_click_now")
    if r and r["ratio_ci"]:
        lo, hi = r["ratio_ci"]
        said = ("no difference resolved at this n" if lo <= 1 <= hi else
                "lower, resolved" if hi < 1 else "higher, resolved")
        print(f"\nclick (shipped) TTFA / click-now TTFA: {r['ratio']:.2f} ({lo:.2f}-{hi:.2f}): "
              f"{said}")
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "summary.json").write_text(json.dumps({
        "machine": f"{uf.platform.machine()}, {os.cpu_count()} CPUs, {uf.platform.platform()}",
        "base_url": a.base_url, "rounds": a.rounds, "settle_s": a.settle_s, "ways": s,
        "created": time.strftime("%Y-%m-%d %H:%M:%S %Z")}, indent=1) + "\n")
    with gzip.open(a.out / "raw.jsonl.gz", "wt", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    print(f"\nwrote {a.out}/summary.json and raw.jsonl.gz")
    return 0


if __name__ == "__main__":
    sys.exit(main())
