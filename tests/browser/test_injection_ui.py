"""Nothing a file or a model can inject: a recording and preset files full of markup
(`<img onerror>`, `<script>`, `javascript:` links) are shown as text, and no script runs.
Also: the upload limit, enforced by the page itself."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from playground.settings import REPO_ROOT
from tests.apphelp import app, open_page
from tests.browser.test_playground_ui import LONG

pytestmark = [pytest.mark.browser, pytest.mark.server]

IMG = "<img src=x onerror=window.__pwned=1>"
SCRIPT = "<script>window.__pwned=2</script>"
LINK = "[click me](javascript:window.__pwned=3)"
ALL = f"{IMG} {SCRIPT} {LINK}"

# what must be absent from the page: elements and handlers the markup would have made
NOTHING_RAN = """() => ({
  pwned: window.__pwned === undefined ? null : window.__pwned,
  imgs: document.querySelectorAll('img[src="x"], img[onerror]').length,
  scripts: [...document.scripts].filter((s) => s.text.includes('__pwned')).length,
  links: document.querySelectorAll('a[href^="javascript"]').length,
})"""


def evil_recording(path: Path) -> Path:
    data = json.loads((REPO_ROOT / "presets" / "recordings" / "cpu-demo-seed-vs-optimized.json")
                      .read_text("utf-8"))
    data["title"] = f"title {IMG}"
    data["created"] = "<b>now</b>"
    data["prompt"] = f"prompt {SCRIPT}"
    data["environment"]["note"] = f"note {LINK} {IMG}"
    first, second = data["columns"]
    first["variant"]["description"] = ALL
    first["content"] = f"answer {ALL}"
    first["reasoning"] = f"reasoning {ALL}"
    first["finish_reason"] = "<b>x</b>"
    second["status"] = "error"
    second["error"] = {"type": "StreamError", "message": f"server said {ALL}"}
    second["tokens"] = [[t, rs, f"{ct}{IMG}" if i == 0 else ct]
                        for i, (t, rs, ct) in enumerate(second["tokens"])]
    path.write_text(json.dumps(data, ensure_ascii=False), "utf-8")
    return path


@pytest.fixture(scope="module")
def evil_app(vllm_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An app whose user presets folder holds files named and filled with markup."""
    tmp = tmp_path_factory.mktemp("evil")
    variants = tmp / "user_presets" / "variants"
    variants.mkdir(parents=True)
    (variants / f"{IMG}.yaml").write_text("name: evil\nstream: yes\n", "utf-8")
    (variants / "keys.yaml").write_text(
        json.dumps({"name": "keys", LINK: 1, SCRIPT: 2}), "utf-8")
    (variants / "fine.yaml").write_text(json.dumps({"name": "fine", "description": ALL}),
                                        "utf-8")
    env = {"PLAYGROUND_BASE_URL": vllm_server, "PLAYGROUND_WARMUP": "off",
           "PLAYGROUND_RUNS_DIR": str(tmp / "runs"),
           "PLAYGROUND_USER_PRESETS_DIR": str(tmp / "user_presets")}
    with app(env_extra=env, log=tmp / "app.log") as (url, _):
        yield url


def upload(page: Page, path: Path) -> None:
    page.locator("#replay-panel").get_by_text("Replay a recording").first.click()
    page.locator("#replay-panel input[type=file]").set_input_files(str(path))


@pytest.mark.reliability(case="a recording and preset files full of markup (<img onerror>, "
                         "<script>, javascript: links), in the UI", where="shown as text in "
                         "every column, status line, note and error; no script runs, no image "
                         "or link is made", order=57)
def test_markup_in_files_is_shown_as_text(browser, evil_app: str, tmp_path: Path,  # type: ignore[no-untyped-def]
                                          observed: Callable[[str], None]) -> None:
    page = open_page(browser, evil_app)
    bad = page.locator("#bad-presets")  # the preset files' errors, named
    expect(bad).to_contain_text(f"{IMG}.yaml")
    expect(bad).to_contain_text("keys.yaml")
    upload(page, evil_recording(tmp_path / "evil.json"))
    page.locator("#replay-run").click()
    expect(page.locator("#error-1")).to_contain_text(f"server said {IMG}", timeout=LONG)
    expect(page.locator("#replay-info")).to_contain_text(f"title {IMG}")
    expect(page.locator("#replay-info")).to_contain_text(f"note {LINK}")
    expect(page.locator("#answer-0 textarea")).to_have_value(f"answer {ALL}", timeout=LONG)
    expect(page.locator("#metrics-0")).to_contain_text("<b>x</b>")
    page.get_by_label("preset 1", exact=True).click()  # the preset list, open
    found = page.evaluate(NOTHING_RAN)
    page.wait_for_timeout(500)  # an onerror would fire once the image failed to load
    found = page.evaluate(NOTHING_RAN)
    observed(f"error, note, title and answer show the markup as text; window.__pwned: "
             f"{found['pwned']}; images {found['imgs']}, scripts {found['scripts']}, "
             f"javascript: links {found['links']} on the page")
    assert found == {"pwned": None, "imgs": 0, "scripts": 0, "links": 0}


@pytest.mark.reliability(case="an uploaded recording over the size limit, in the UI",
                         where="the page refuses the upload (Gradio's limit, set to the "
                         "recording limit) with a message; nothing replays", order=32)
def test_upload_over_the_limit_is_refused_by_the_page(browser, evil_app: str,  # type: ignore[no-untyped-def]
                                                      tmp_path: Path,
                                                      observed: Callable[[str], None]
                                                      ) -> None:
    from playground.lab.replay import MAX_BYTES

    page = open_page(browser, evil_app)
    big = tmp_path / "big.json"
    with big.open("wb") as f:
        f.truncate(MAX_BYTES + 1)  # sparse: nothing written
    upload(page, big)
    toast = page.locator(".toast-body, [data-testid='toast-body']").first
    expect(toast).to_be_visible(timeout=LONG)
    text = toast.inner_text()
    observed(text)
    assert "size" in text.lower() or "large" in text.lower()
