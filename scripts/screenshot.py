"""Retake docs/screenshot.png from a real run of the presenter view (1440x900, Chromium).

Starts the app against a running vLLM server, runs the seed articles' default call against
three optimizations, switches to the presenter view and saves the viewport.

    .venv/bin/python scripts/screenshot.py --base-url http://127.0.0.1:8000/v1
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from playground.server import http
from playground.server.managed import free_port
from playground.settings import REPO_ROOT

COLUMNS = ["seed-default", "streaming", "thinking-off", "all-optimizations"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--out", type=Path, default=REPO_ROOT / "docs" / "screenshot.png")
    a = ap.parse_args()
    from playwright.sync_api import expect, sync_playwright

    port = free_port()
    env = {**os.environ, "PLAYGROUND_BASE_URL": a.base_url, "GRADIO_SERVER_PORT": str(port),
           "PLAYGROUND_RUNS_DIR": tempfile.mkdtemp(prefix="screenshot-"),
           "GRADIO_ANALYTICS_ENABLED": "False", "PLAYGROUND_WARMUP": "always"}
    app = subprocess.Popen([sys.executable, str(REPO_ROOT / "app.py")], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    try:
        for _ in range(240):
            try:
                if http.get(url, timeout_s=1).status == 200:
                    break
            except OSError:
                time.sleep(0.5)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                        args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(url)
            page.wait_for_selector("text=Variant 1", timeout=60_000)
            expect(page.locator("#warmup-status")).to_contain_text("warm:", timeout=300_000)
            slider = page.get_by_label("number input for variants")
            slider.fill(str(len(COLUMNS)))
            slider.press("Enter")
            for i, name in enumerate(COLUMNS):
                page.get_by_label(f"preset {i + 1}", exact=True).click()
                page.get_by_role("option", name=name, exact=True).click()
            page.get_by_role("button", name="Presenter view").click()
            page.get_by_role("button", name="Run", exact=True).click()
            for i in range(len(COLUMNS)):
                expect(page.locator(f"#metrics-{i}")).to_contain_text("E2E", timeout=300_000)
            page.wait_for_timeout(1500)
            page.mouse.move(0, 0)
            page.screenshot(path=str(a.out))
            browser.close()
    finally:
        app.terminate()
        app.wait(timeout=30)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
