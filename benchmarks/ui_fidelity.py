"""UI perturbation and render lag: does watching in a browser change what is measured?

Alternates rounds of the same 4-variant comparison (4 x fixed-64-stream, unique prompts)
through the UI -- Chromium driving the Playground tab, 4 columns streaming -- and headless
(the same runner, no UI). Prints median TTFT and E2E of each path and their ratio (target:
differ by under 2%), and the render lag: backend receipt of the first answer token vs its
appearance in the browser, both on this machine's wall clock (target: p50 under 100 ms).

    python benchmarks/ui_fidelity.py --base-url http://127.0.0.1:8000/v1 --rounds 8
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from playground.core.compare import compare
from playground.core.record import RequestRecord
from playground.lab.stats import median
from playground.lab.store import read_run
from playground.server import http
from playground.server.managed import free_port
from playground.settings import REPO_ROOT, Settings
from playground.specs.presets import PresetLibrary

ADDRESS = "北京市朝阳区建国路88号SOHO现代城A座2305 收件人：王建国 手机：13812345678"
WATCH_JS = """() => {
  window.__first = null;
  document.querySelector('#answer-0 textarea').value = '';
  const tick = () => {
    const box = document.querySelector('#answer-0 textarea');  // re-query: may be re-rendered
    if (box && box.value && window.__first === null) {
      window.__first = performance.timeOrigin + performance.now();
      return;
    }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}"""


def headless_run(settings: Settings, variants: list, prompt: str) -> list:
    """The same comparison without any UI (own thread: Playwright's sync API owns a loop)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, compare(settings, variants, prompt)).result()


def ui_round(page, prompt: str, runs_dir: Path) -> tuple[list[RequestRecord], float | None]:
    before = set(runs_dir.glob("playground/*.jsonl"))
    page.get_by_label("prompt", exact=True).fill(prompt)
    page.evaluate(WATCH_JS)
    page.get_by_role("button", name="Run", exact=True).click()
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        new = set(runs_dir.glob("playground/*.jsonl")) - before
        if new:
            recs = read_run(new.pop()).requests
            if len(recs) == 4:
                break
        time.sleep(0.2)
    else:
        raise SystemExit("UI run did not finish in 300 s")
    seen_ms = page.evaluate("() => window.__first")
    first = recs[0]
    assert first.clock_origin is not None
    wall, perf = first.clock_origin
    t = first.raw.t_first_content
    lag = None if seen_ms is None or t is None else seen_ms - (wall + (t - perf)) * 1000
    return recs, lag


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--rounds", type=int, default=8)
    a = ap.parse_args()

    from playwright.sync_api import sync_playwright

    runs_dir = Path(tempfile.mkdtemp(prefix="ui-fidelity-"))
    port = free_port()
    env = {**os.environ, "PLAYGROUND_BASE_URL": a.base_url, "GRADIO_SERVER_PORT": str(port),
           "PLAYGROUND_RUNS_DIR": str(runs_dir)}
    app = subprocess.Popen([sys.executable, str(REPO_ROOT / "app.py")], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    settings = Settings(base_url=a.base_url)
    variant = PresetLibrary(settings.presets_dir).get("fixed-64-stream")
    ui, headless, lags = [], [], []
    try:
        for _ in range(120):
            try:
                if http.get(url, timeout_s=1).status == 200:
                    break
            except OSError:
                time.sleep(0.5)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=[
                "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
            page = browser.new_page(viewport={"width": 1600, "height": 1400})
            page.goto(url)
            page.wait_for_selector("text=Variant 1", timeout=60_000)
            slider = page.get_by_label("number input for variants")
            slider.fill("4")
            slider.press("Enter")
            page.wait_for_selector("text=Variant 4", timeout=30_000)
            for i in range(4):
                page.get_by_label(f"preset {i + 1}", exact=True).click()
                page.get_by_role("option", name="fixed-64-stream", exact=True).click()
            ui_round(page, f"[warm-up ui] {ADDRESS}", runs_dir)
            headless_run(settings, [variant] * 4, f"[warm-up hl] {ADDRESS}")
            for k in range(a.rounds):
                recs, lag = ui_round(page, f"[ui {k:03d}] {ADDRESS}", runs_dir)
                ui += [r.metrics for r in recs]
                if lag is not None:
                    lags.append(lag)
                hl = headless_run(settings, [variant] * 4, f"[hl {k:03d}] {ADDRESS}")
                headless += [r.metrics() for r in hl]
            browser.close()
    finally:
        app.terminate()
        app.wait(timeout=20)

    def med(rows: list, key: str) -> float:
        vals = [getattr(r, key) for r in rows]
        return median([v for v in vals if v is not None]) or float("nan")

    print(f"\nUI perturbation: {a.rounds} rounds x 4 columns of fixed-64-stream, "
          f"n={len(ui)} per path, server {a.base_url}")
    print(f"{'':14}{'headless':>12}{'UI (4 cols)':>14}{'UI/headless':>13}")
    for key, label in (("ttft_ms", "median TTFT"), ("e2e_ms", "median E2E")):
        h, u = med(headless, key), med(ui, key)
        print(f"{label:14}{h:10.1f}ms{u:12.1f}ms{u / h:13.3f}")
    if lags:
        lags.sort()
        print(f"render lag (first answer token: backend receipt -> visible in the browser): "
              f"p50 {median(lags):.1f} ms, max {lags[-1]:.1f} ms, n={len(lags)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
