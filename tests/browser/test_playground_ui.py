"""The Playground tab in real Chromium against the real vLLM test server."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from playground.server.prom import running_requests as running
from tests.apphelp import PENDING  # a preset's values on their way into the controls
from tests.procs import wait_for
from tests.serverstate import idle

pytestmark = [pytest.mark.browser, pytest.mark.server]
LONG = 120_000
LONG_RUN_TOKENS = "8000"  # the test server's window is 8,192 (tests/conftest.py)




def pick(page: Page, label: str, option: str) -> None:
    """Choose `option` in a dropdown and wait until the event it starts (a preset filling its
    column's controls) has finished."""
    page.get_by_label(label, exact=True).click()
    page.get_by_role("option", name=option, exact=True).click()
    expect(page.locator(PENDING)).to_have_count(0, timeout=LONG)


def settle(box, value: str) -> None:  # type: ignore[no-untyped-def]
    """Type `value` into a control (after `pick`, whose event has landed) and leave it."""
    box.fill(value)
    box.press("Tab")
    expect(box).to_have_value(value)


def set_number(page: Page, label: str, value: int) -> None:
    box = page.get_by_label(label, exact=True)
    box.fill(str(value))
    box.press("Tab")


def test_compare_seed_default_and_all_optimizations(page: Page) -> None:
    expect(page.locator("#server-status")).to_contain_text("vLLM 0.", timeout=LONG)
    expect(page.locator("#demo-banner")).to_contain_text("OFFLINE DEMO MODEL")
    pick(page, "preset 1", "seed-default")
    pick(page, "preset 2", "all-optimizations")
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.locator("#metrics-0")).to_contain_text("E2E", timeout=LONG)
    expect(page.locator("#metrics-1")).to_contain_text("E2E", timeout=LONG)
    expect(page.locator("#metrics-0")).to_contain_text("TTFT n/a (non-streaming)")
    expect(page.locator("#metrics-1")).to_contain_text("TTFA")
    expect(page.locator("#badge-1")).to_contain_text("schema-valid")
    expect(page.locator("#phases-1")).to_contain_text("prefill")
    expect(page.locator("#metrics-1")).to_contain_text("physical floor")
    expect(page.locator("#answer-1 textarea")).not_to_have_value("")
    expect(page.locator("#tl-live svg")).to_be_visible()
    expect(page.locator("#bars-live svg")).to_contain_text("E2E")
    # the headline counts what is on screen: the seed default's reply on the demo model is all
    # reasoning (its thinking never ends) in a collapsed panel -- "no answer", compared with
    # nothing; the other column is not "N x faster" than an answer that never came
    expect(page.locator("#hl-live")).to_contain_text("first answer character")
    expect(page.locator("#hl-live .hl-0 .hl-big")).to_have_text("no answer")
    expect(page.locator("#metrics-0")).to_contain_text("No answer")
    expect(page.locator("#hl-live .hl-1 .hl-big")).to_contain_text("ms")
    assert page.locator("#hl-live .hl-1 .hl-cmp").inner_text().strip() == ""
    page.get_by_text("View code").nth(1).click()
    code = page.locator("#code-py-1")
    expect(code).to_contain_text("chat.completions.create")
    expect(code).to_contain_text("'enable_thinking': False")
    expect(code).to_contain_text("json_schema")
    expect(page.locator("#code-curl-1")).to_contain_text("/chat/completions")
    # "show reasoning" opens the reasoning panels, and the next run's headline counts reasoning
    # as visible and says so: column 1 now has a first character, column 2 a comparison
    page.get_by_label("show reasoning").check()
    expect(page.locator("#reasoning-0 textarea")).to_be_visible()
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.locator("#hl-live .hl-0")).to_contain_text("first character (reasoning shown)",
                                                           timeout=LONG)
    expect(page.locator("#hl-live .hl-1 .hl-cmp")).to_contain_text("than column 1",
                                                                   timeout=LONG)
    expect(page.locator("#hl-live .hl-0 .hl-big")).to_contain_text("ms")


def test_stable_hooks_for_external_probes(page: Page) -> None:
    """The hooks docs/playground.md promises to scripts that drive the page, all in one run."""
    for i, preset in enumerate(("fixed-64-stream", "fixed-64-nonstream")):
        pick(page, f"preset {i + 1}", preset)  # the picker labelled "preset {i+1}"
    page.get_by_role("button", name="Run", exact=True).click()
    for i in range(2):
        expect(page.locator(f"#metrics-{i}")).to_contain_text("E2E", timeout=LONG)
        assert page.locator(f"#answer-{i} textarea").input_value() != ""
        page.get_by_text("View code").nth(i).click()  # the accordion under column i
        expect(page.locator(f"#code-curl-{i}")).to_contain_text("/chat/completions")
        expect(page.locator(f"#hl-live .hl-{i} .hl-big")).to_contain_text("ms")
    line = page.locator("#metrics-0").inner_text()
    assert re.search(r"TTFT [\d,.]+ ms", line) and re.search(r"TTFA [\d,.]+ ms", line), line
    assert "TTFT n/a (non-streaming)" in page.locator("#metrics-1").inner_text()


def test_run_goes_from_the_click_straight_to_the_app(page: Page, app_runs: Path) -> None:
    """A value typed just before the click is the one sent (the controls hand their values to
    the app as they change; the prompt's text goes with the click). And no Gradio event carries
    a run: clicked again right after a new prompt is typed, the page sends the stage's own route
    the hand-over's number and the prompt, and no other request carries the prompt -- typing in
    the prompt box sends nothing -- yet the run sent it (the run file's requests)."""
    from playground.lab.store import RunStore, read_run

    settle(page.get_by_label("prompt", exact=True), "straight to the app 7f3c")
    for i, preset in enumerate(("fixed-64-stream", "fixed-64-nonstream")):
        pick(page, f"preset {i + 1}", preset)
    # the preset's values have landed (on a busy box its event can end after `pick` returns:
    # a later fill would then be overwritten by the preset's 64)
    expect(page.get_by_label("max_tokens", exact=True).first).to_have_value("64")
    page.get_by_label("max_tokens", exact=True).first.fill("24")  # no Tab: the click leaves it
    page.get_by_role("button", name="Run", exact=True).click()
    for i in range(2):
        expect(page.locator(f"#metrics-{i}")).to_contain_text("E2E", timeout=LONG)
    expect(page.locator("#metrics-0")).to_contain_text("tokens 24")
    sent: list[tuple[str, str, str]] = []
    page.on("request", lambda r: sent.append((r.method, r.url, r.post_data or "")))
    before = set(RunStore(app_runs).list_runs("playground"))
    prompt = "typed right before the click 9d1e"
    page.get_by_label("prompt", exact=True).fill(prompt)  # and at once:
    page.get_by_role("button", name="Run", exact=True).click()

    def run_file() -> list | None:
        new = set(RunStore(app_runs).list_runs("playground")) - before
        recs = read_run(new.pop()).requests if new else []
        return recs if len(recs) == 2 else None

    assert wait_for(lambda: run_file() is not None, timeout=LONG / 1000)
    recs = run_file()
    assert recs and all(prompt in json.dumps(r.request, ensure_ascii=False) for r in recs)
    expect(page.locator(".stale")).to_have_count(0, timeout=LONG)  # the hand-over drew
    runs = [(m, url, body) for m, url, body in sent if "/stage/run/" in url]
    assert len(runs) == 1 and runs[0][0] == "POST"
    assert json.loads(runs[0][2]).keys() == {"seq", "prompt"}
    assert json.loads(runs[0][2])["prompt"] == prompt
    # no event carried the run, and typing the prompt handed nothing over
    assert not [url for _, url, body in sent if prompt in body and "/stage/run/" not in url]


HANDLE = re.compile(r"[A-Za-z0-9_-]+:\d+")  # a hand-over's first value (static/live.js)


def test_a_preset_pick_hands_its_column_over_once(page: Page) -> None:
    """A pick writes a dozen controls. Each used to hand all ~60 of the page's inputs over on
    its own change, and gathering them walks Gradio's component tree once per input: the page's
    main thread was busy ~2 s a pick. Now one hand-over follows the pick's event and carries the
    picked values, View code follows it, and a Run clicked at once runs the picked preset."""
    handovers: list[list[Any]] = []

    def seen(r: Any) -> None:
        try:
            data = json.loads(r.post_data or "{}").get("data") or []
        except ValueError:
            return
        if data and isinstance(data[0], str) and HANDLE.fullmatch(data[0]):
            handovers.append(data)

    page.on("request", seen)
    pick(page, "preset 1", "fixed-64-stream")  # (the page's load hand-overs are long done)
    page.get_by_text("View code").nth(0).click()
    expect(page.locator("#code-curl-0")).to_contain_text('"max_tokens": 64')
    handovers.clear()
    pick(page, "preset 1", "fixed-64-nonstream")
    expect(page.locator("#code-curl-0")).not_to_contain_text('"stream": true')
    assert wait_for(lambda: len(handovers) >= 1, timeout=LONG / 1000)
    page.wait_for_timeout(500)  # a stray hand-over still on its way would be counted
    assert len(handovers) == 1, [h[0] for h in handovers]
    assert 64 in handovers[0] and "fixed-64-nonstream" in handovers[0]
    # picked, and Run clicked at once: the picked preset runs, not the column as it was
    page.get_by_label("preset 2", exact=True).click()
    page.get_by_role("option", name="fixed-64-stream", exact=True).click()
    page.get_by_role("button", name="Run", exact=True).click()
    for i in range(2):
        expect(page.locator(f"#metrics-{i}")).to_contain_text("tokens 64", timeout=LONG)


def test_a_langchain_column_runs_next_to_the_sdk_and_shows_its_own_code(page: Page) -> None:
    pick(page, "preset 1", "client-openai-sdk")
    pick(page, "preset 2", "client-langchain")
    expect(page.locator("#client-1 input")).to_have_value("langchain")
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.locator("#metrics-0")).to_contain_text("E2E", timeout=LONG)
    expect(page.locator("#metrics-1")).to_contain_text("E2E", timeout=LONG)
    expect(page.locator("#error-1")).to_have_text("")
    page.get_by_text("View code").nth(1).click()
    code = page.locator("#code-py-1")
    expect(code).to_contain_text("from langchain_openai import ChatOpenAI")
    expect(code).to_contain_text("llm.stream(")
    page.get_by_text("View code").nth(0).click()
    expect(page.locator("#code-py-0")).to_contain_text("chat.completions.create")


def test_view_code_shows_what_the_cli_sends(page: Page) -> None:
    """The page builds a column's request from the preset itself: seed-default sends
    temperature 0.5 and leaves top_p to the server, as `playground run` does (the UI used to
    add top_p 1.0 of its own)."""
    pick(page, "preset 1", "greedy")
    pick(page, "preset 1", "seed-default")
    page.get_by_text("View code").nth(0).click()
    curl = page.locator("#code-curl-0")
    expect(curl).to_contain_text('"temperature": 0.5')
    expect(curl).to_contain_text('"enable_thinking": true')
    assert "top_p" not in curl.inner_text()


def test_invalid_pasted_schema_fails_its_column_only(page: Page) -> None:
    pick(page, "preset 1", "all-optimizations")
    pick(page, "preset 2", "fixed-64-stream")
    page.get_by_label("guided JSON", exact=True).first.click()
    page.get_by_role("option", name="custom", exact=True).click()
    editor = page.locator(".cm-content").first
    editor.click()
    page.keyboard.press("Control+a")
    page.keyboard.type('{"type": "bogus"')
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.locator("#error-0")).to_contain_text("not sent", timeout=LONG)
    expect(page.locator("#error-0")).to_contain_text("guided JSON schema")
    expect(page.locator("#metrics-1")).to_contain_text("E2E", timeout=LONG)
    expect(page.locator("#error-1")).to_have_text("")
    expect(page.locator("#metrics-0")).to_have_text("")


@pytest.mark.reliability(case="Stop during a run, in the browser", where="the UI column shows "
                         "'stopped (partial output kept)'; the run file keeps the partial text "
                         "(status cancelled); running requests on the server return to 0",
                         order=30)
def test_stop_ends_a_long_generation_on_the_server(page: Page, vllm_server: str,
                                                   app_runs: Path,
                                                   observed: Callable[[str], None]) -> None:
    # A generation that cannot end by itself in the window: 8,000 tokens at ignore_eos (~25 s at
    # the decode floor; 1,900 took ~6 s and ended inside a 6.4 s output stall, V26); Stop is
    # clicked as soon as both columns show text, and the run file must then hold fewer tokens
    # than were asked for -- a Stop that did nothing would end with all 8,000 ("finish: length")
    t0 = time.monotonic()
    assert idle(vllm_server)  # no other test's generation on the server: the gauge is ours
    waited_s = time.monotonic() - t0
    before = set(app_runs.glob("playground/*.jsonl"))
    pick(page, "preset 1", "fixed-64-stream")
    pick(page, "preset 2", "fixed-64-stream")
    for box in page.get_by_label("max_tokens", exact=True).all()[:2]:
        settle(box, LONG_RUN_TOKENS)
    page.get_by_role("button", name="Run", exact=True).click()
    for i in range(2):  # text has arrived in both columns: this run is the one in flight
        expect(page.locator(f"#answer-{i} textarea")).not_to_have_value("", timeout=LONG)
    clicked = time.monotonic()
    page.get_by_role("button", name="Stop", exact=True).click(force=True)
    assert idle(vllm_server)  # the engine dropped both requests
    quiet_s = time.monotonic() - clicked
    for i in range(2):  # the column says so, keeps what arrived, and shows no error
        expect(page.locator(f"#metrics-{i}")).to_contain_text("stopped (partial output kept)",
                                                              timeout=30_000)
        expect(page.locator(f"#error-{i}")).to_have_text("")
        expect(page.locator(f"#answer-{i} textarea")).not_to_have_value("")
    deadline = time.monotonic() + 30
    while not (new := set(app_runs.glob("playground/*.jsonl")) - before) \
            and time.monotonic() < deadline:
        time.sleep(0.2)
    rows = [r for f in new for line in f.read_text().splitlines()
            if (r := json.loads(line)).get("kind") == "request"]  # the server's series follows
    kept = [(r["status"], r["metrics"]["completion_tokens"] or 0, len(r["content"]))
            for r in rows]
    observed(f"column: stopped (partial output kept); run file: {kept}; running on the server: "
             f"{running(vllm_server)} ({quiet_s:.1f} s after the click; the server was busy "
             f"{waited_s:.1f} s before the test)")
    assert len(kept) == 2 and all(s == "cancelled" and n < int(LONG_RUN_TOKENS) and c > 0
                                  for s, n, c in kept), kept


def test_benchmark_tab_runs_an_experiment(page: Page) -> None:
    page.get_by_role("tab", name="Benchmark").click()
    pick(page, "experiment (presets/experiments)", "stream-vs-nonstream-fixed")
    page.get_by_label("examples (empty = experiment's)").fill("2")
    page.get_by_label("repetitions (empty = experiment's)").fill("1")
    page.get_by_role("button", name="Run benchmark", exact=True).click()
    expect(page.locator("#bench-progress")).to_contain_text("done", timeout=LONG)
    expect(page.locator("#bench-verdicts")).to_contain_text("first visible character")
    # what the server (and its GPUs: none here) did meanwhile
    expect(page.locator("#bench-verdicts")).to_contain_text(
        re.compile(r"The server during the timed trials: peak \d+ running.*no GPU telemetry"))
    expect(page.locator("#bench-table")).to_contain_text("fixed-64-stream")
    expect(page.locator("#bench-wait-plot .js-plotly-plot")).to_be_visible()
    expect(page.locator("#bench-files").get_by_role("cell", name="report.html")).to_be_visible()
    # ... drawn on the requests' time axis: each variant's requests above, the server below
    chart = page.locator("#bench-server-series svg.server-series")
    expect(chart).to_be_visible()
    expect(chart.locator("g.requests")).to_have_count(2)
    expect(chart.locator("polyline.running")).to_have_count(1)
    expect(chart.locator("text.caption")).to_contain_text("no GPU telemetry")


def test_report_opens_offline_in_chromium(browser, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from playground.lab.store import Run
    from playground.lab.summary import write_outputs
    from tests.records import make_record

    run = Run(requests=[make_record("a" if i % 2 else "b", 100.0 + i, 10.0, trial=i)
                        for i in range(12)])
    html = write_outputs(run, tmp_path)["html"]
    ctx = browser.new_context(offline=True)
    pg = ctx.new_page()
    pg.goto(html.as_uri())
    expect(pg.locator(".js-plotly-plot").first).to_be_visible(timeout=30_000)
    assert pg.locator(".js-plotly-plot").count() == 6
    ctx.close()


def test_server_tab_starts_and_stops_a_managed_server(page: Page, app_log: Path,
                                                      vllm_server: str) -> None:
    from playground.server.managed import free_port

    port = free_port()
    joins: list[dict] = []  # the page's Gradio events (queue joins)
    page.on("request", lambda r: joins.append(json.loads(r.post_data or "{}"))
            if "/queue/join" in r.url else None)
    page.get_by_role("tab", name="Server").click()
    # the tab names the server the page itself talks to (one started here is another one)
    connection = page.locator("#server-tab-connection")
    expect(connection).to_contain_text("This page is connected to")
    expect(connection).to_contain_text(f"at {vllm_server} · healthy: True")
    pick(page, "server preset", "eager")
    page.get_by_label("port", exact=True).fill(str(port))
    page.get_by_role("button", name="Start", exact=True).click()
    status = page.locator("#server-tab-status")
    expect(status).to_contain_text("running", timeout=600_000)
    expect(status).to_contain_text(f"127.0.0.1:{port}")
    expect(page.locator("#server-flags")).to_contain_text("--enforce-eager")
    expect(page.locator("#server-log")).to_contain_text("GET /health")
    # the status refresh is the tab's timer: an event whose only input is the port
    ticks = {j.get("fn_index") for j in joins if j.get("data") == [port]}
    assert len(ticks) == 1, joins
    page.get_by_role("button", name="Stop", exact=True).last.click()
    expect(status).to_contain_text("stopped", timeout=60_000)
    # the tab's 2 s timer ran all along, also for pages with no managed server: no errors
    assert "didn't return enough output values" not in app_log.read_text("utf-8", "replace")
    # ... and only while the tab is open: another tab's page sends no tick (a tick would come
    # every 2 s; five seconds without one)
    page.get_by_role("tab", name="Playground").click()
    page.wait_for_timeout(1000)  # a tick already on its way when the tab changed
    seen = len(joins)
    page.wait_for_timeout(5000)
    assert not [j for j in joins[seen:] if j.get("fn_index") in ticks], joins[seen:]


def test_benchmark_tab_monitors_p95_against_a_threshold(browser, page: Page, app_runs: Path,  # type: ignore[no-untyped-def]
                                                       tmp_path: Path) -> None:
    """The operator's app (--all-runs) checks every run; on a page whose lists are each
    visitor's own, "Check runs" listed every visitor's runs with their owner tags (issue
    4/7): there a visitor sees none of these (untagged, the CLI's) runs."""
    from playground.lab.imports import read_result
    from playground.lab.store import RunFile, RunMeta
    from tests.apphelp import app, open_page
    from tests.records import make_record

    runs = tmp_path / "runs"
    for where in (runs, app_runs):
        (where / "bench").mkdir(parents=True, exist_ok=True)
        for stem, slow in (("20200101-000000-monlow", 0), ("20200102-000000-monhigh", 3)):
            f = RunFile(where / "bench" / f"{stem}.jsonl")
            f.append(RunMeta())
            for i in range(20):  # p95 of 17 x 500 and 3 x 2500 ms: above 1800
                f.append(make_record("probe", 2500.0 if i < slow else 500.0, trial=i))
    imported = {}  # real GuideLLM and AIPerf files (tests/data/imports), imported
    for i, name in enumerate(("guidellm-benchmarks.json", "aiperf-profile_export.jsonl")):
        meta, records = read_result(Path(__file__).resolve().parents[1] / "data" / "imports"
                                    / name)
        imported[name] = runs / "imported" / f"2020010{i + 3}-000000-import.jsonl"
        imported[name].parent.mkdir(parents=True, exist_ok=True)
        RunFile(imported[name]).append(meta, *records)

    def check(pg: Page) -> Any:
        pg.get_by_role("tab", name="Benchmark").click()
        pg.get_by_text("Past runs", exact=True).first.click()
        pg.locator("#monitor-threshold input").fill("1800")
        pg.locator("#monitor-check").click()
        return pg.locator("#monitor-list")

    expect(check(page)).to_contain_text("0 of 0 runs above 1800 ms", timeout=30_000)
    with app("--replay", "--all-runs", env_extra={"PLAYGROUND_RUNS_DIR": str(runs)},
             log=tmp_path / "app.log") as (url, _):
        own = open_page(browser, url)
        listing = check(own)
        expect(listing).to_contain_text("ABOVE 20200102-000000-monhigh", timeout=30_000)
        expect(listing).to_contain_text("ok 20200101-000000-monlow")
        chart = own.locator("#monitor-chart svg")
        expect(chart.locator("line.threshold")).to_have_count(1)
        assert chart.locator("circle.above").count() >= 1
        assert chart.locator("circle.ok").count() >= 1
        # past runs: two runs imported from other tools (the operator's), judged A vs B with
        # the verdicts of `playground runs compare`
        for name, tool in (("guidellm-benchmarks.json", "A"), ("aiperf-profile_export.jsonl",
                                                               "B")):
            box = own.get_by_label(f"run {tool}", exact=True)
            box.click()
            # the option in this dropdown's own list (the other one keeps a list of its own)
            own.locator(f'[id="{box.get_attribute("aria-controls")}"] '
                        f'li[aria-label="{imported[name]}"]').click()
            expect(box).to_have_value(str(imported[name]))
        own.get_by_role("button", name="Show / compare", exact=True).click()
        past = own.locator("#bench-past")
        expect(past).to_contain_text("A vs B", timeout=60_000)
        expect(past).to_contain_text("imported from GuideLLM's benchmarks JSON")
        expect(past).to_contain_text("imported from AIPerf's profile_export.jsonl")
        judged = past.locator("tr", has_text="guidellm-concurrent-2 vs aiperf")
        for metric in ("TTFT p50", "TPOT p50", "E2E p50"):
            expect(judged.filter(has_text=metric)).to_contain_text("95% CI")
        expect(past).to_contain_text("Holm over the 3 comparisons")
        own.context.close()


