"""Faults, bad input and secrets, against the real test server (and the fault proxy in front of
it for what a real server cannot do on demand). Each test is one row of the
Reliability table (tests/reliability.py); `observed` records what the user actually saw."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from playground.core.measure_loop import MeasureLoop
from playground.errors import ValidationFailed
from playground.lab.bench import run_experiment
from playground.lab.store import read_run
from playground.server.managed import free_port
from playground.server.prom import running_requests
from playground.settings import REPO_ROOT, Settings
from playground.specs.experiments import load_experiment
from playground.specs.presets import MAX_SCHEMA_BYTES, PresetLibrary
from tests.conftest import Keyed
from tests.faultproxy import FaultProxy, serving
from tests.serverstate import IDLE_BOUND_S, idle

pytestmark = pytest.mark.server
R = pytest.mark.reliability
COLUMN = "the variant's row of the CLI's table; the other variants finish"
STDERR = "CLI stderr, exit code 2, nothing sent"
@pytest.fixture(scope="module")
def proxy(vllm_server: str) -> Iterator[FaultProxy]:
    yield from serving(vllm_server)


def cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
        ) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("PLAYGROUND_")}
    return subprocess.run([sys.executable, "-m", "playground.cli", *args], capture_output=True,
                          text=True, timeout=300, env={**base, **(env or {})},
                          cwd=cwd or REPO_ROOT)


def variant_file(tmp: Path, name: str, **fields: object) -> str:
    data = {"name": name, "stream": True, "max_tokens": 32, "ignore_eos": True,
            "thinking": False, "temperature": 0.0, **fields}
    path = tmp / f"{name}.yaml"
    path.write_text(json.dumps(data), "utf-8")  # JSON is YAML
    return str(path)


def presets_copy(tmp: Path) -> Path:
    """A copy of the shipped presets a test may add bad files to (PLAYGROUND_PRESETS_DIR)."""
    shutil.copytree(REPO_ROOT / "presets", tmp / "presets")
    return tmp / "presets"


def chats(p: FaultProxy, fault: str) -> list[dict]:
    return [s for s in p.seen if s["fault"] == fault and s["path"].endswith("completions")]


# --- the server is not there, not ready, or refuses us -----------------------------------

@R(case="server not running", where="CLI stderr, exit 2", order=1)
def test_server_not_running(observed: Callable[[str], None]) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    out = cli("run", "--base-url", url)
    observed(out.stderr)
    assert out.returncode == 2 and out.stdout == ""
    assert url in out.stderr and "cannot reach" in out.stderr and "playground serve" in out.stderr


@R(case="wrong port (another web server answers there)", where="CLI stderr, exit 2", order=2)
def test_wrong_port(proxy: FaultProxy, observed: Callable[[str], None]) -> None:
    # the proxy's root is not an OpenAI API: /x/models is not routed -> 404
    url = f"http://127.0.0.1:{proxy.port}"
    out = cli("run", "--base-url", url, "--variant", "fixed-64-stream")
    observed(out.stderr)
    assert out.returncode == 2
    assert "wrong port" in out.stderr and "HTTP 404" in out.stderr


@R(case="server starting (connection refused until ready)", where="CLI stderr, exit 2; "
   "the same command works once it is up", order=3)
def test_server_starting(vllm_server: str, tmp_path: Path,
                         observed: Callable[[str], None]) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/ok/v1"
    before = cli("run", "--base-url", url, "--variant", variant_file(tmp_path, "s"))
    assert before.returncode == 2 and "Connection refused" in before.stderr
    late = FaultProxy(vllm_server).start(port=port)  # the server is up now
    try:
        after = cli("run", "--base-url", url, "--variant", variant_file(tmp_path, "s"), "--json")
    finally:
        late.stop()
    observed(f"before: {before.stderr.strip()} / after: exit {after.returncode}")
    assert after.returncode == 0, after.stderr
    assert json.loads(after.stdout)[0]["metrics"]["completion_tokens"] == 32


@R(case="wrong API key (401)", where="CLI stderr, exit 2; the key is not echoed", order=4)
def test_wrong_api_key(keyed_vllm: Keyed, observed: Callable[[str], None]) -> None:
    out = cli("run", "--base-url", keyed_vllm.base_url, "--api-key", "WRONGKEY-123")
    observed(out.stderr)
    assert out.returncode == 2 and "HTTP 401" in out.stderr and "API key" in out.stderr
    assert "WRONGKEY-123" not in out.stderr + out.stdout


@R(case="unknown model (404)", where="CLI stderr, exit 2, with the served names", order=5)
def test_unknown_model(vllm_server: str, observed: Callable[[str], None]) -> None:
    out = cli("run", "--base-url", vllm_server, "--model", "nope")
    observed(out.stderr)
    assert out.returncode == 2
    assert "'nope' is not served" in out.stderr and "Qwen/Qwen3-0.6B" in out.stderr


# --- faults mid-stream: the faulty column says what happened, keeps its partial output, and the
# --- other column finishes

def msg(rec: dict) -> str:
    return rec["error"]["message"] if rec["error"] else ""


def faulty_run(proxy: FaultProxy, tmp: Path, fault: str,
               env: dict[str, str] | None = None) -> tuple[dict, dict, str, int]:
    bad = variant_file(tmp, "faulty", base_url=proxy.url(fault))
    good = variant_file(tmp, "good")
    out = cli("run", "--base-url", proxy.url("ok"), "--variant", bad, "--variant", good,
              "--json", env=env)
    faulty, fine = json.loads(out.stdout)
    assert fine["error"] is None and fine["metrics"]["completion_tokens"] == 32
    assert out.returncode == 1  # one variant failed: non-zero exit, every result printed
    return faulty, fine, out.stderr, out.returncode


@R(case="server killed mid-stream", where=COLUMN, order=10)
def test_killed_mid_stream(proxy: FaultProxy, tmp_path: Path,
                           observed: Callable[[str], None]) -> None:
    faulty, _, err, _ = faulty_run(proxy, tmp_path, "kill")
    observed(msg(faulty))
    assert "stream broke after it started" in msg(faulty)
    assert faulty["content"] and faulty["status"] == "error"  # partial output kept
    assert "faulty:" in err


@R(case="stream stalls (read timeout fires)", where=COLUMN, order=11)
def test_stream_stalls(proxy: FaultProxy, tmp_path: Path,
                       observed: Callable[[str], None]) -> None:
    faulty, _, _, _ = faulty_run(proxy, tmp_path, "stall",
                                 env={"PLAYGROUND_READ_TIMEOUT_S": "3"})
    observed(msg(faulty))
    assert "stalled" in msg(faulty) and faulty["content"]


@R(case="malformed SSE inside an HTTP 200 stream", where=COLUMN, order=12)
def test_malformed_sse(proxy: FaultProxy, tmp_path: Path,
                       observed: Callable[[str], None]) -> None:
    faulty, _, _, _ = faulty_run(proxy, tmp_path, "malformed")
    observed(msg(faulty))
    assert "stream broke" in msg(faulty) and "not JSON" in msg(faulty)
    assert faulty["content"]


@R(case="error event inside an HTTP 200 stream", where=COLUMN, order=13)
def test_error_event(proxy: FaultProxy, tmp_path: Path,
                     observed: Callable[[str], None]) -> None:
    faulty, _, _, _ = faulty_run(proxy, tmp_path, "error-event")
    observed(msg(faulty))
    assert "the engine failed while generating" in msg(faulty) and faulty["content"]


@R(case="500 from the engine", where=COLUMN, order=14)
def test_engine_500(proxy: FaultProxy, tmp_path: Path, observed: Callable[[str], None]) -> None:
    faulty, _, _, _ = faulty_run(proxy, tmp_path, "500")
    observed(msg(faulty))
    assert "HTTP 500" in msg(faulty) and "EngineCore" in msg(faulty)


@R(case="a fault during a benchmark", where="the benchmark's failure count (stderr, exit 1); "
   "the good variant's requests are all in the run file", order=15)
def test_fault_in_a_benchmark(proxy: FaultProxy, tmp_path: Path,
                              observed: Callable[[str], None]) -> None:
    presets = presets_copy(tmp_path)
    Path(variant_file(presets / "variants", "faulty", base_url=proxy.url("kill")))
    Path(variant_file(presets / "variants", "good"))
    (tmp_path / "exp.yaml").write_text("name: faulty-bench\nvariants: [faulty, good]\n"
                                       "examples: 2\nrepetitions: 1\nwarmup: 0\n")
    runs = tmp_path / "runs"
    out = cli("bench", str(tmp_path / "exp.yaml"), "--base-url", proxy.url("ok"),
              env={"PLAYGROUND_RUNS_DIR": str(runs), "PLAYGROUND_PRESETS_DIR": str(presets)})
    observed(out.stderr.strip().splitlines()[-1])
    assert out.returncode == 1 and "2 timed request(s) failed" in out.stderr
    (path,) = (runs / "bench").glob("*.jsonl")
    reqs = read_run(path).requests
    assert sorted((r.name, r.ok) for r in reqs) == [
        ("faulty", False), ("faulty", False), ("good", True), ("good", True)]


# --- bad parameters: caught before anything is sent ----------------------------------------

BAD_INPUT = [
    ("temperature < 0", {"temperature": -0.5}, None, "temperature"),
    ("top_p = 0", {"top_p": 0}, None, "top_p"),
    ("top_p > 1", {"top_p": 1.5}, None, "top_p"),
    ("max_tokens over the model length", {"max_tokens": 9000}, None, "max_tokens"),
    ("max_tokens + prompt over the model length", {"max_tokens": 8000}, "word " * 300,
     "max_tokens"),
    ("empty prompt", {}, "   ", "prompt"),
    ("prompt over the model length", {}, "word " * 9000, "prompt"),
    ("prompt over the size limit", {}, "x" * 200_001, "prompt"),
    ("invalid JSON Schema", {"guided_json": {"schema": {"type": "bogus"}}}, None,
     "guided_json.schema"),
    ("schema too large", {"guided_json": {"schema": {
        "type": "object", "properties": {f"p{i}": {"type": "string", "description": "d" * 40}
                                         for i in range(MAX_SCHEMA_BYTES // 40)}}}},
     None, "guided_json.schema"),
]


@pytest.mark.parametrize(("label", "fields", "prompt", "field"), [
    pytest.param(*b, id=b[0], marks=R(case=f"bad parameter: {b[0]}", where=STDERR, order=20))
    for b in BAD_INPUT])
def test_bad_input_is_caught_before_sending(proxy: FaultProxy, tmp_path: Path,
                                            observed: Callable[[str], None], label: str,
                                            fields: dict, prompt: str | None,
                                            field: str, request: pytest.FixtureRequest) -> None:
    tag = f"ok-{request.node.callspec.id.replace(' ', '')[:40]}"
    args = ["run", "--base-url", proxy.url(tag), "--variant",
            variant_file(tmp_path, "bad", **fields)]
    if prompt is not None:
        prompt_file = tmp_path / "prompt.txt"
        prompt_file.write_text(prompt, "utf-8")
        args += ["--prompt-file", str(prompt_file)]  # 200k chars: over one argv's limit
    out = cli(*args)
    observed(out.stderr)
    assert out.returncode == 2, out.stdout
    assert f"{field}:" in out.stderr, out.stderr
    assert chats(proxy, tag) == []  # nothing was sent


# --- bad files -------------------------------------------------------------------------------

@R(case="bad preset / experiment / server YAML", where="the app starts; each tab lists the "
   "file, field and reason; the good ones load", order=30)
def test_app_starts_with_bad_yaml(vllm_server: str, tmp_path: Path,
                                  observed: Callable[[str], None]) -> None:
    from playground.server import http
    from tests.apphelp import app

    presets = presets_copy(tmp_path)
    (presets / "variants" / "broken.yaml").write_text("name: broken\ntemprature: 0.2\n")
    (presets / "experiments" / "broken-exp.yaml").write_text("name: b\nvariants: [nope]\n")
    (presets / "servers" / "broken-srv.yaml").write_text("name: b\nmax_model_len: -4\n")
    env = {"PLAYGROUND_BASE_URL": vllm_server, "PLAYGROUND_PRESETS_DIR": str(presets),
           "PLAYGROUND_RUNS_DIR": str(tmp_path / "runs")}
    with app(env_extra=env, log=tmp_path / "app.log") as (url, _):
        config = http.get(url + "config", timeout_s=10).text
    text = json.dumps(json.loads(config), ensure_ascii=False)
    text = text.replace("\\\\", "")  # Markdown escapes (max\_model\_len renders max_model_len)
    found = [m for m in ("broken.yaml: temprature: unknown key", "broken-exp.yaml",
                         "broken-srv.yaml: max_model_len") if m in text]
    observed("; ".join(found))
    assert len(found) == 3, text[:2000]
    assert '"seed-default"' in text and '"seed-vs-optimized"' in text  # the good ones


@R(case="a preset name or schema path escaping the presets folders", where="the preset's "
   "error (file, field, reason); nothing read outside", order=31)
def test_path_escape_is_rejected(tmp_path: Path, observed: Callable[[str], None]) -> None:
    out = cli("run", "--variant", variant_file(tmp_path, "esc", prompt="../../etc/passwd"))
    out2 = cli("run", "--variant", variant_file(tmp_path, "esc2", guided_json="../../x"))
    observed(out.stderr.strip() + " / " + out2.stderr.strip())
    assert out.returncode == 2 and "prompt:" in out.stderr
    assert "'../../etc/passwd' is not a plain name" in out.stderr
    assert out2.returncode == 2 and "guided_json:" in out2.stderr
    lib = PresetLibrary(REPO_ROOT / "presets", tmp_path / "user")
    bad = ["../evil", "../../evil", str(tmp_path / "abs-evil"), "a\x00b", "x" * 200, "名字",
           "", ".hidden", "a/b"]
    for name in bad:  # (model_copy skips the model's own check: the save checks again)
        with pytest.raises(ValidationFailed, match="name"):
            lib.save_user_variant(lib.get("seed-default").model_copy(update={"name": name}))
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix == ".yaml"
               and p.name not in ("esc.yaml", "esc2.yaml")]  # (the test's own two files)
    assert written == [], written  # nothing written, inside user_presets/ or out of it


CLI_BAD = [  # (case, argv, the field the message must name)
    ("--timeout 0", ["run", "--timeout", "0"], "--timeout"),
    ("--timeout -1", ["run", "--timeout", "-1"], "--timeout"),
    ("--base-url 'not a url'", ["run", "--base-url", "not a url"], "--base-url"),
    ("--base-url file:///etc/passwd (a local file)", ["run", "--base-url",
                                                      "file:///etc/passwd"], "--base-url"),
    ("bench --out naming an existing file", ["bench", "stream-vs-nonstream-fixed", "--out",
                                             "{file}"], "--out"),
    ("bench --out in a missing folder", ["bench", "stream-vs-nonstream-fixed", "--out",
                                         "{tmp}/missing/parent/out"], "--out"),
]


@pytest.mark.parametrize("case,argv,field", [pytest.param(*c, id=c[0], marks=R(
    case=f"CLI {c[0]}", where="CLI stderr, exit 2, before anything is sent or run", order=22))
    for c in CLI_BAD])
def test_bad_cli_values_are_named_before_any_work(case: str, argv: list[str], field: str,
                                                  proxy: FaultProxy, tmp_path: Path,
                                                  observed: Callable[[str], None]) -> None:
    (tmp_path / "a-file").write_text("x")
    args = [a.format(file=tmp_path / "a-file", tmp=tmp_path) for a in argv]
    if "--base-url" not in args:
        args += ["--base-url", proxy.url(f"ok-cli{len(proxy.seen)}")]
    before = len(proxy.seen)
    out = cli(*args)
    observed(out.stderr.strip())
    assert out.returncode == 2 and out.stdout == "" and "Traceback" not in out.stderr
    assert field in out.stderr and out.stderr.startswith("error: ")
    assert len(proxy.seen) == before  # nothing sent
    assert "No such file" not in out.stderr  # a file:// URL reveals nothing about the file


# --- Stop, kill, and nothing lost ----------------------------------------------------------

@R(case="Stop during a benchmark", where="running requests on the server return to 0; "
   "finished results stay in the run file", order=41)
def test_stop_during_a_benchmark(vllm_server: str, tmp_path: Path,
                                 observed: Callable[[str], None]) -> None:
    assert idle(vllm_server)  # the gauge is about this test's requests
    settings = Settings(base_url=vllm_server, runs_dir=tmp_path / "runs")
    lib = PresetLibrary(REPO_ROOT / "presets")
    exp_file = tmp_path / "long.yaml"
    exp_file.write_text("name: long\nvariants: [fixed-64-stream]\nexamples: 5\n"
                        "repetitions: 20\nwarmup: 0\nconcurrency: 2\n")
    exp = load_experiment(exp_file, lib)
    seen: list[int] = []
    unwound = threading.Event()

    async def pump() -> None:  # what the Benchmark tab runs on its measuring loop
        try:
            async for ev in run_experiment(settings, exp):
                if ev.kind == "request":
                    seen.append(ev.done)
        finally:  # the benchmark's own cleanup (streams closed, pool shut) has run
            unwound.set()

    loop = MeasureLoop("test-measure")
    try:
        future = loop.submit(pump())
        for _ in range(3000):  # bounded: until 3 requests are finished
            if len(seen) >= 3:
                break
            if future.done():
                future.result()  # a failure to start surfaces here
            time.sleep(0.1)
        assert len(seen) >= 3
        future.cancel()  # what Stop does
        # the cancel lands on the measuring loop's thread, later on a loaded box: until it
        # has, the benchmark may send its next request (CI of cb3a4fb: the gauge read 0 in the
        # gap between two requests, then 1). Bounded as a failure guard only.
        assert unwound.wait(IDLE_BOUND_S), "the benchmark did not unwind after its cancel"
        assert idle(vllm_server)  # the engine drops the requests on its next step
        running = running_requests(vllm_server)
    finally:
        loop.stop()
    (path,) = (tmp_path / "runs" / "bench").glob("*.jsonl")
    reqs = read_run(path).requests
    observed(f"stopped after {len(seen)} requests; {len(reqs)} in the run file; "
             f"running on the server: {running}")
    assert running == 0
    assert len(reqs) >= 3 and all(r.metrics.completion_tokens == 64 for r in reqs)
    assert len(reqs) < 100


# --- secrets -------------------------------------------------------------------------------

@R(case="API key in every artifact of run / record / bench (and a 401)", where="nowhere: stdout, "
   "stderr, run files, exports, reports, recordings, logs are grepped", order=50)
def test_api_key_never_leaks(keyed_vllm: Keyed, tmp_path: Path,
                             observed: Callable[[str], None]) -> None:
    url, secret = keyed_vllm.base_url, keyed_vllm.key  # vLLM checks the key itself
    runs, out_dir, cwd = tmp_path / "runs", tmp_path / "out", tmp_path / "cwd"
    cwd.mkdir()
    env = {"PLAYGROUND_RUNS_DIR": str(runs), "PLAYGROUND_API_KEY": secret}
    (tmp_path / "exp.yaml").write_text("name: k\nvariants: [fixed-64-stream, seed-default]\n"
                                       "examples: 1\nrepetitions: 1\nwarmup: 0\n")
    status_before = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=REPO_ROOT,
                                   capture_output=True, text=True).stdout
    results = [
        cli("run", "--base-url", url, "--variant", "fixed-64-stream", "--json", env=env,
            cwd=cwd),
        cli("run", "--base-url", url, "--api-key", secret, "--variant", "fixed-64-stream",
            "--record", str(out_dir / "rec.json"), env={"PLAYGROUND_RUNS_DIR": str(runs)},
            cwd=cwd),
        cli("bench", str(tmp_path / "exp.yaml"), "--base-url", url, "--out",
            str(out_dir / "bench"), env=env, cwd=cwd),
        cli("run", "--base-url", url, "--api-key", secret[::-1], env=env,
            cwd=cwd),  # a 401 (the flag wins over the env): its message holds no key either
    ]
    # the first three were answered: the key arrived (vLLM answers 401 without it)
    assert [r.returncode for r in results] == [0, 0, 0, 2], [r.stderr for r in results]
    files = [p for p in (*runs.rglob("*"), *out_dir.rglob("*"), *cwd.rglob("*"))
             if p.is_file()]
    assert any(p.suffix == ".html" for p in files) and any(p.suffix == ".jsonl" for p in files)
    leaks = [str(p) for p in files if secret in p.read_text("utf-8", "replace")]
    leaks += [f"output of command {i}" for i, r in enumerate(results)
              if secret in r.stdout + r.stderr]
    status_after = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=REPO_ROOT,
                                  capture_output=True, text=True).stdout
    observed(f"{len(files)} files and 4 commands' output grepped: "
             f"{len(leaks)} contain the key; nothing written outside the run folders: "
             f"{status_after == status_before}")
    assert leaks == []
    assert status_after == status_before  # nothing from a request written into the repo
