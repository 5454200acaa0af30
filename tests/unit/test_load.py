"""The load path's pure parts: the split over worker processes, the engine hand-off rule, vllm
bench's rows on our definitions, the fidelity verdicts, the raw reader's parsing."""

from __future__ import annotations

import math
import pickle

import pytest
from pydantic import ValidationError

from playground.core import request, wire
from playground.core.runner import new_recording
from playground.errors import (
    RequestRejected,
    ServerUnavailable,
    StreamError,
    ValidationFailed,
)
from playground.lab.engine import BenchServe, _env, aligned, bench_row
from playground.lab.fidelity import level, spread, verdict
from playground.lab.load import auto_workers, deal, split
from playground.lab.paired import paired_ratio
from playground.lab.ray_readers import digest, rebase
from playground.lab.store import BackgroundRecord
from playground.lab.sweep import choose, holds, summarise
from playground.specs.experiments import Experiment
from playground.specs.presets import Variant


def test_ray_readers_move_only_a_foreign_clock_and_send_a_digest_not_the_key() -> None:
    v = Variant(name="x", stream=True)
    rec = new_recording(v, request.build(v, "hi", "m"), "http://127.0.0.1:1/v1")
    rec.raw.t_send, rec.raw.t_first_content, rec.raw.t_last = 10.0, 11.0, 12.0
    rec.raw.token_times = [11.0, 12.0]
    wall, perf = rec.clock_origin
    rebase(rec, 0.0)  # a reader on this machine: one CLOCK_MONOTONIC, nothing moves
    assert (rec.raw.t_send, rec.raw.token_times, rec.clock_origin) == (10.0, [11.0, 12.0],
                                                                      (wall, perf))
    rebase(rec, 5.0)  # elsewhere: every stamp moves by the release's offset, durations kept
    assert (rec.raw.t_send, rec.raw.t_first_content, rec.raw.t_last) == (15.0, 16.0, 17.0)
    assert rec.raw.token_times == [16.0, 17.0] and rec.clock_origin == (wall, perf + 5.0)
    assert rec.raw.t_due is None  # an unset stamp stays unset
    m = rec.metrics()
    assert m.ttft_ms == pytest.approx(1000.0) and m.e2e_ms == pytest.approx(2000.0)
    assert digest("EMPTY") is None and digest("") is None
    assert digest("sk-secret") == digest("sk-secret") != digest("sk-other")
    assert "sk-secret" not in (digest("sk-secret") or "") and len(digest("k") or "") == 64


def test_split_and_deal_keep_every_stream_and_request() -> None:
    assert split(128, 4) == [32, 32, 32, 32]
    assert split(10, 4) == [3, 3, 2, 2] and split(3, 8) == [1, 1, 1]
    shares = split(10, 4)
    dealt = deal(25, shares)
    assert sorted(i for d in dealt for i in d) == list(range(25))
    assert [len(d) for d in dealt] == [8, 7, 5, 5]  # in proportion to each worker's streams


def test_auto_workers_and_the_hand_off_rule() -> None:
    assert auto_workers(1, cpus=2) == 1 and auto_workers(64, cpus=2) == 1
    # one reader up to 32 streams; past that Ray readers of 16 (the H100's c256 evidence)
    assert auto_workers(32, cpus=16) == 1 and auto_workers(33, cpus=16) == 3
    assert auto_workers(128, cpus=16) == 8 and auto_workers(1024, cpus=16) == 8
    assert holds(32, cpus=2) and not holds(33, cpus=2) and not holds(64, cpus=2)
    assert holds(128, cpus=16) and not holds(129, cpus=16) and not holds(256, cpus=16)
    assert choose("auto", 32, True, cpus=2) == "playground"
    assert choose("auto", 512, True, cpus=16) == "vllm-bench"
    assert choose("auto", 512, False, cpus=16) == "playground"  # no vLLM: ours, not nothing
    assert choose("vllm-bench", 1, True) == "vllm-bench"


def test_vllm_bench_rows_move_the_role_chunk_gap_into_ttft() -> None:
    row = bench_row(0.020, [0.00001, 0.002, 0.003, 0.002], 4, "")
    assert row["ttft"] == pytest.approx(20.01) and row["itl"] == pytest.approx([2, 3, 2])
    assert row["tpot"] == pytest.approx(7 / 3) and row["e2e"] == pytest.approx(27.01)
    # the server merged tokens (2 gaps for 4 tokens): the first gap is still the role chunk's
    merged = bench_row(0.020, [0.00001, 0.005], 4, "")
    assert merged["ttft"] == pytest.approx(20.01) and merged["itl"] == pytest.approx([5])
    assert merged["tpot"] == pytest.approx(5 / 3)
    # every token in one chunk: TPOT 0, as vllm bench reports it -- not None, not dropped
    one = aligned(20.0, [0.02], 32)
    assert one["itl"] == [] and one["tpot"] == 0.0 and one["e2e"] == pytest.approx(20.02)
    assert summarise([one, merged], [1.0])["one_chunk"] == 1
    assert not bench_row(None, [], 4, "boom")["ok"]


def test_published_rows_are_aligned_by_how_they_were_written(tmp_path) -> None:
    """vllm bench rows in a results CSV: written raw (the first H200 runs), aligned by the old
    count rule (the first CPU runs: only rows with a gap per token were aligned), or aligned by
    the role chunk (now). Each is read back on the load path's definitions."""
    from playground.lab.sweep import RowWriter, read_rows

    raw = {"ok": True, "ttft": 20.0, "tpot": 1.0, "e2e": 25.02, "output_tokens": 4,
           "itl": [0.02, 5.0]}  # merged: 2 gaps for 4 tokens, the first the role chunk's
    counted = {**raw, "ttft": 20.02, "itl": [2.0, 1.0, 2.0]}  # a gap per token, aligned
    path = tmp_path / "rows.csv"
    w = RowWriter(path)
    w.write(8, 0, "vllm-bench", [raw, counted])
    w.write(8, 0, "load-path", [counted, {**counted, "tpot": None, "e2e": 20.02, "itl": []}])
    w.close()
    as_raw = read_rows(path, "raw")
    assert as_raw[0]["itl"] == [5.0] and as_raw[0]["ttft"] == pytest.approx(20.02)
    as_counted = read_rows(path, "count-aligned")
    assert as_counted[0]["itl"] == [5.0]  # fewer gaps than tokens - 1: never aligned
    assert as_counted[1]["itl"] == [2.0, 1.0, 2.0]  # already aligned: kept
    assert read_rows(path)[0]["itl"] == [0.02, 5.0]  # role-aligned when written: as is
    assert all(r[2]["itl"] == [2.0, 1.0, 2.0] for r in (as_raw, as_counted))  # ours: as is
    assert as_raw[3]["tpot"] == 0.0  # a one-chunk reply written without a TPOT: 0, kept
    with pytest.raises(ValueError, match="vllm_bench_rows"):
        read_rows(path, "sideways")


def test_fidelity_is_judged_on_paired_blocks_with_an_interval() -> None:
    def pairs(ratios: list[float]) -> tuple[list[float], list[float]]:
        ref = [10.0 + i for i in range(len(ratios))]
        return ref, [r * x for r, x in zip(ref, ratios, strict=True)]

    # 4 pairs: no sign-flip test can reject at 0.05 (best p 2/16): nothing is resolved, however
    # close the point ratio -- and the verdict says how many pairs would do
    four, _ = verdict("tpot_p50_ms", *pairs([1.01, 1.00, 1.02, 1.01]))
    assert four.startswith("not resolved at this n (4 pairs of blocks: no interval below 6")
    assert "pairs would resolve it" in four
    tight = [1.0 + 0.004 * ((-1) ** i) for i in range(8)]
    assert verdict("tpot_p50_ms", *pairs(tight))[0] == "within 5%"
    far, got = verdict("tpot_p50_ms", *pairs([1.2 + 0.01 * ((-1) ** i) for i in range(8)]))
    assert far == "outside 5%" and got.ci is not None and got.ci[0] > 1.05
    wide, got = verdict("tpot_p50_ms", *pairs([0.8, 1.3, 0.9, 1.25, 0.85, 1.2, 1.0, 1.1]))
    assert wide.startswith("not resolved at this n (interval") and got.ci is not None
    # a ratio a hair from the edge needs millions of pairs at its spread (H100 c128 TPOT p50:
    # 1.047, ~6,044,097): said as "more than 1,000", not as a plan
    edge, _ = verdict("tpot_p50_ms", *pairs([1.049 + 0.03 * ((-1) ** i) for i in range(12)]))
    assert edge.endswith("more than 1,000 pairs at this spread: the ratio sits near the edge)")
    # throughput is one-sided: at least 95% of vllm bench's
    assert verdict("req_per_s", *pairs([1.3 + 0.01 * ((-1) ** i) for i in range(8)]))[0] \
        == "within 5%"
    assert verdict("req_per_s", *pairs([0.85 + 0.01 * ((-1) ** i) for i in range(8)]))[0] \
        == "outside 5%"
    assert spread([{"k": 10.0}, {"k": 12.0}, {"k": 11.0}], "k") == pytest.approx(2 / 11)
    assert spread([{"k": 10.0}], "k") is None


def test_a_paired_interval_keeps_its_coverage() -> None:
    """Pairs whose true ratio is 1 (log-normal noise): the interval holds 1 in about 95% of
    runs, at 8 pairs (exact sign-flip test)."""
    import random

    rng = random.Random(5)
    covered = 0
    for _ in range(200):
        ref = [rng.uniform(10, 20) for _ in range(8)]
        got = paired_ratio(ref, [r * math.exp(rng.gauss(0, 0.05)) for r in ref])
        covered += got.ci is not None and got.ci[0] <= 1 <= got.ci[1]
    assert covered >= 180


def test_level_compares_pooled_rows_and_keeps_every_block() -> None:
    def rows(ttft: float, gap: float) -> list[dict]:
        return [{"ok": True, "ttft": ttft, "tpot": gap, "e2e": ttft + 3 * gap,
                 "itl": [gap] * 3, "output_tokens": 4}] * 5

    lv = level(8, {"vllm-bench": [(rows(10, 2), 1.0), (rows(11, 2), 1.0)],
                   "load-path": [(rows(10.2, 2), 1.0), (rows(11.2, 2), 1.0)]})
    assert lv["load-path_vs_vllm_bench"]["itl_p50_ms"] == pytest.approx(1.0)
    # two pairs of blocks resolve nothing, however close (the point ratio is shown, not judged)
    assert lv["load-path_verdicts"]["ttft_p50_ms"].startswith("not resolved at this n (2 pairs")
    assert len(lv["vllm-bench_blocks"]) == 2 and lv["vllm-bench"]["req_per_s"] == 5.0
    assert summarise([], [])["ttft_p50_ms"] is None


def test_the_engine_gets_the_key_through_its_environment_only() -> None:
    spec = BenchServe("http://h:1/v1", "m", "/tok", 8, dataset=__import__("pathlib").Path("d"),
                      num_prompts=16, output_len=32)
    cmd = spec.command("python3")
    assert "--max-concurrency" in cmd and cmd[cmd.index("--max-concurrency") + 1] == "8"
    assert cmd[cmd.index("--base-url") + 1] == "http://h:1"  # vllm bench adds the endpoint
    assert not any("sk-" in c for c in cmd)
    assert _env("sk-secret")["OPENAI_API_KEY"] == "sk-secret"
    assert "OPENAI_API_KEY" not in _env("EMPTY")


def test_background_limits_name_the_field() -> None:
    base = {"name": "x", "variants": [Variant(name="a")]}
    Experiment.model_validate({**base, "background": 200})
    with pytest.raises(ValidationError, match="at most 64"):
        Experiment.model_validate({**base, "background": 100,
                                   "background_engine": "playground"})
    with pytest.raises(ValidationError):
        Experiment.model_validate({**base, "background": 300})
    with pytest.raises(ValidationError):
        Variant(name="a", client="curl")  # type: ignore[arg-type]


def test_background_record_says_who_kept_the_load() -> None:
    ext = BackgroundRecord(requests_in_flight=64, completed=None, failed=None, max_tokens=256,
                           engine="vllm bench serve", running_at_start=64, ready_after_s=41.26)
    assert "kept in flight by vllm bench serve" in ext.describe()
    assert ("64 running when the probe began, 41.3 s after vllm bench serve was launched"
            in ext.describe())
    ours = BackgroundRecord(requests_in_flight=2, completed=5, failed=0, max_tokens=256)
    assert "5 completed, 0 failed" in ours.describe()


def test_errors_cross_a_process_boundary_intact() -> None:
    for e in (ServerUnavailable("http://x/v1", "refused"),
              RequestRejected(400, "bad", param="max_tokens"), StreamError("s", hint="h"),
              ValidationFailed("field", "reason")):
        back = pickle.loads(pickle.dumps(e))
        assert type(back) is type(e) and str(back) == str(e) and back.__dict__ == e.__dict__


def test_raw_reader_parses_vllm_events_and_errors() -> None:
    ev = wire._chunk_events({"choices": [{"delta": {"reasoning": "hm", "content": None},
                                          "finish_reason": None}]}, 1.0)
    assert ev[0].reasoning == "hm" and ev[0].content == ""
    usage = wire._chunk_events({"choices": [], "usage": {
        "prompt_tokens": 5, "completion_tokens": 7,
        "completion_tokens_details": {"reasoning_tokens": 3}},
        "metrics": {"queue_time_ms": 1.5, "x": "no"}}, 2.0)
    assert usage[0].kind == "usage" and usage[0].usage.completion_tokens == 7
    assert usage[0].usage.reasoning_tokens == 3 and usage[0].server_metrics == {
        "queue_time_ms": 1.5}
    nested = wire._rejected(400, b'{"error": {"message": "too long", "param": "max_tokens"}}')
    assert nested.status == 400 and nested.param == "max_tokens" and "too long" in str(nested)
    flat = wire._rejected(404, b'{"object": "error", "message": "no such model"}')
    assert "no such model" in str(flat) and wire._rejected(502, b"<html>").status == 502
    with pytest.raises(StreamError, match="not JSON"):
        wire._decode(b"{not json")


@pytest.mark.parametrize("machine", ["h200", "cpu"])
def test_published_fidelity_json_holds_what_its_readme_shows(machine: str) -> None:
    """The committed fidelity.json and sweep.json are the levels recomputed from their rows (the
    numbers the README's tables show), not the summaries written during the run."""
    import importlib.util
    import json

    from playground.settings import REPO_ROOT

    spec = importlib.util.spec_from_file_location(
        "load_report", REPO_ROOT / "benchmarks" / "load_report.py")
    assert spec is not None and spec.loader is not None
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    folder = REPO_ROOT / "docs" / "results" / machine / "load"
    doc = json.loads((folder / "fidelity.json").read_text("utf-8"))
    for got, kept in zip(report.fidelity(folder), doc["levels"], strict=True):
        for tool in got["tools"]:
            for k in [*report.KEYS, "one_chunk"]:
                assert kept[tool][k] == pytest.approx(got[tool][k]), (got["concurrency"], tool, k)
    readme = (folder / "README.md").read_text("utf-8")
    c1 = doc["levels"][0]
    assert f"| c1 | load path (raw reader) | TTFT p50 | {c1['vllm-bench']['ttft_p50_ms']:.2f} |" \
        in readme
    sweep = json.loads((folder / "sweep.json").read_text("utf-8"))
    for got, kept in zip(report.sweep(folder), sweep["levels"], strict=True):
        assert kept["tpot_p50_ms"] == pytest.approx(got["tpot_p50_ms"])
