"""Claims: verdict rules on synthetic samples, the shipped claim files, bad files."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from playground.claims.board import refamily
from playground.claims.run import ClaimResult, claim_experiment
from playground.claims.verdicts import judge
from playground.outputs.board_view import board_rows, markdown
from playground.outputs.html import board as html_report
from playground.outputs.tables import text_table
from playground.settings import REPO_ROOT
from playground.specs.claims import Check, load_claims
from playground.specs.presets import PresetLibrary

PRESETS = REPO_ROOT / "presets"
LOWER = Check(metric="e2e_ms", direction="lower", claimed="-50%", claimed_change_pct=-50)


def spread(center: float, n: int = 30, width: float = 0.05, seed: int = 0) -> list[float]:
    rng = random.Random(seed)
    return [center * (1 + rng.uniform(-width, width)) for _ in range(n)]


def test_clear_win_is_confirmed_with_our_magnitude_next_to_the_claim() -> None:
    r = judge(LOWER, spread(1000), spread(500, seed=1), names=("before", "after"))
    assert r.verdict == "confirmed"
    assert r.change is not None and -55 < r.change < -45
    assert r.change_ci is not None and r.change_ci[1] < 0
    assert "-50% claimed" in r.text and "before -> after" in r.text
    assert "confirmed in direction; consistent with the claim" in r.text


def test_clear_loss_is_refuted() -> None:
    r = judge(LOWER, spread(500), spread(800, seed=1))
    assert r.verdict == "refuted"
    assert r.change_ci is not None and r.change_ci[0] > 0


def test_noise_is_no_detectable_difference() -> None:
    rng = random.Random(7)
    same = [rng.gauss(1000, 100) for _ in range(60)]
    r = judge(LOWER, same[:30], same[30:])
    assert r.verdict == "no detectable difference"
    assert r.change_ci is not None and r.change_ci[0] <= 0 <= r.change_ci[1]


def test_higher_direction_and_rates_in_percentage_points() -> None:
    check = Check(metric="json_valid", direction="higher", claimed="82% -> 100%")
    r = judge(check, [0.0] * 10 + [1.0] * 10, [1.0] * 20)
    assert r.unit == "pp" and r.verdict == "confirmed"
    assert r.baseline_value == 50 and r.variant_value == 100 and r.change == 50
    same = judge(check, [1.0] * 10, [1.0] * 10)
    assert same.verdict == "no detectable difference"


def test_too_few_observations_is_not_measurable_with_the_reason() -> None:
    r = judge(Check(metric="ttfa_ms", direction="higher"), [100.0, 120.0], [],
              why_missing="thinking never ended")
    assert r.verdict == "not measurable"
    assert "thinking never ended" in r.text


def test_report_only_checks_carry_no_verdict() -> None:
    r = judge(Check(metric="tpot_ms", direction="report"), spread(20), spread(40))
    assert r.verdict == "reported"


def test_every_seed_claim_is_a_claim_file_and_builds() -> None:
    claims, errors = load_claims(PRESETS)
    assert errors == []
    assert set(claims) == {"streaming", "thinking", "greedy", "short-prompt", "guided-json",
                           "eager", "batching", "chunked-prefill", "sdk", "engine", "headline"}
    library = PresetLibrary(PRESETS, PRESETS / "no-user-presets")
    for claim in claims.values():
        exp = claim_experiment(claim, library)
        assert claim.variant in [v.name for v in exp.variants]
        assert exp.baseline != claim.variant
    assert claims["eager"].needs_servers() and not claims["streaming"].needs_servers()
    # vLLM vs Transformers: two managed servers, the Transformers side in its dialect
    engine = claim_experiment(claims["engine"], library)
    assert claims["engine"].needs_servers()
    assert {v.name: v.engine for v in engine.variants} == {"transformers": "transformers",
                                                           "vllm": "vllm"}
    # the overrides: --repetitions applies to every claim (a batch claim's samples are its
    # repetitions), --examples to the A/B claims (a batch always sends batch_size rows)
    quick = {c: claim_experiment(claims[c], library, examples=2, repetitions=1)
             for c in ("batching", "streaming")}
    assert (quick["batching"].repetitions, quick["batching"].examples) == (
        1, claim_experiment(claims["batching"], library).examples)
    assert (quick["streaming"].repetitions, quick["streaming"].examples) == (1, 2)
    sdk = claim_experiment(claims["sdk"], library)
    assert {v.name: v.client for v in sdk.variants} == {"langchain": "langchain",
                                                        "openai-sdk": "openai"}
    assert sdk.variants[0].model_dump(exclude={"name", "client"}) == sdk.variants[
        1].model_dump(exclude={"name", "client"})  # the client is the only difference


def test_langchain_claim_says_how_to_install_when_it_is_missing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from playground.claims.run import skip_reason
    from playground.core import langchain_client

    claims, _ = load_claims(PRESETS)
    assert skip_reason(claims["sdk"], with_servers=False) is None  # the test extras have it
    monkeypatch.setattr(langchain_client, "available", lambda: False)
    reason = skip_reason(claims["sdk"], with_servers=False)
    assert reason is not None and "qwen-latency-lab[langchain]" in reason
    assert "--with-servers" in (skip_reason(claims["engine"], with_servers=False) or "")


def test_bad_claim_file_is_named_and_the_good_ones_still_load(tmp_path: Path) -> None:
    (tmp_path / "claims").mkdir()
    shutil.copy(PRESETS / "claims" / "streaming.yaml", tmp_path / "claims")
    (tmp_path / "claims" / "bad.yaml").write_text(
        "id: bad\ntitle: t\narticle: '000'\nquote: q\nchecks:\n"
        "  - {metric: e2e_ms, direction: sideways}\nexperiment: {}\n", "utf-8")
    (tmp_path / "claims" / "broken.yaml").write_text("id: [unclosed\n", "utf-8")
    claims, errors = load_claims(tmp_path)
    assert list(claims) == ["streaming"]
    assert len(errors) == 2
    assert any("bad.yaml" in e and "checks.0.direction" in e for e in errors)
    assert any("broken.yaml" in e and "not valid YAML" in e for e in errors)


def test_unknown_variant_under_test_is_rejected() -> None:
    claims, _ = load_claims(PRESETS)
    claim = claims["greedy"].model_copy(update={"variant": "nope"})
    with pytest.raises(Exception, match=r"variant.*'nope'"):
        claim_experiment(claim, PresetLibrary(PRESETS, PRESETS / "none"))


def synthetic_board() -> dict:
    ok = ClaimResult("streaming", "Streaming helps", "001", "quote", "done",
                     checks=[judge(LOWER, spread(1000), spread(300, seed=2))],
                     verdict="confirmed", baseline="a", variant="b", n_requests=60,
                     wall_s=3.0)
    skipped = ClaimResult("eager", "Eager", "000", "q", "skipped", reason="needs servers")
    return {"format": "qwen-latency-lab/claims-board", "version": 1,
            "environment": {"base_url": "http://x/v1", "machine": {
                "accelerator": "none (CPU only)", "cpu": "cpu", "cores": 2, "memory_gib": 4},
                "server_flags": "--enforce-eager", "measured_at": "now",
                "vllm_version": "0.32.0", "models": ["Qwen/Qwen3-0.6B"], "demo_model": True},
            "claims": [ok.as_dict(), skipped.as_dict()],
            "api_checks": [{"id": "x", "article": "000", "statement": "s",
                            "outcome": "silently ignored", "evidence": "e", "instead": "i"}]}


def test_board_rows_markdown_and_report_from_results_alone() -> None:
    board = synthetic_board()
    rows = board_rows(board)
    assert rows[0][4] == "confirmed" and "-70%" in rows[0][3]
    assert rows[1][4] == "not run: needs servers"
    md = markdown(board)
    assert "| Streaming helps |" in md and "silently ignored" in md and "OFFLINE DEMO" in md
    page = html_report(board)
    assert "<script src=" not in page  # plotly is inlined: opens offline
    assert "Method, in plain words" in page and "RANDOM weights" in page


def test_times_below_10_ms_keep_a_decimal_so_the_implied_ratio_holds() -> None:
    """The H200 eager row read "TPOT 2 -> 25 ms" (12.5x) where the data say 2.29 -> 24.82."""
    board = synthetic_board()
    check = board["claims"][0]["checks"][0]
    check.update(baseline_value=2.29, variant_value=24.82, change=983.8)
    assert "2.3 -> 24.8 ms (+984%" in board_rows(board)[0][3]
    check.update(baseline_value=1000.4, variant_value=300.2, change=-70.0)
    assert "1,000 -> 300 ms" in board_rows(board)[0][3]


def test_a_compound_claim_is_confirmed_only_when_every_part_holds() -> None:
    """"Guided JSON costs ~15 ms and always gives valid JSON" read "confirmed" while its cost
    check said +1,005 ms per request vs +15 ms claimed: each part is judged now."""
    from playground.claims.verdicts import claim_verdict
    from playground.outputs.fmt import PARTLY_COLOR, verdict_color

    valid = judge(Check(metric="schema_valid", direction="higher", claimed="100% valid"),
                  [0.0] * 12, [1.0] * 12)
    cost = judge(Check(metric="tpot_ms", direction="higher", claimed="~15 ms per request",
                       claimed_diff_ms=15, per_request=True),
                 spread(10), spread(20, seed=3), tokens=96)
    assert valid.verdict == cost.verdict == "confirmed"  # both directions hold ...
    assert cost.magnitude == "larger than claimed"  # ... but ~1,000 ms is not ~15 ms
    verdict = claim_verdict([valid, cost])
    assert verdict.startswith("partly: ")
    assert "confirmed" in verdict and "larger than claimed" in verdict and "vs +15 ms" in verdict
    assert verdict_color(verdict) == PARTLY_COLOR
    fair = judge(Check(metric="tpot_ms", direction="higher", claimed="~15 ms per request",
                       claimed_diff_ms=15, per_request=True),
                 spread(10, width=0.002), spread(10.16, seed=3, width=0.002), tokens=96)
    assert claim_verdict([valid, fair]) == "confirmed", fair.text
    # one judged check (the size beside it): its verdict, as before
    assert claim_verdict([cost]) == "confirmed"
    lost = judge(LOWER, spread(500), spread(800, seed=1))
    assert claim_verdict([lost, lost]) == "refuted"


def test_the_thinking_verdict_says_the_budget_fixed_its_ratio() -> None:
    board = synthetic_board()
    board["claims"][0]["verdict_note"] = ("the budget fixed this ratio: 64 reasoning + 64 "
                                          "answer tokens at one TPOT predict 1.95x")
    cell = board_rows(board)[0][4]
    assert cell.startswith("confirmed -- the budget fixed this ratio")
    from playground.outputs.fmt import VERDICT_COLORS, verdict_color
    assert verdict_color(cell) == VERDICT_COLORS["confirmed"]


def test_report_escapes_what_a_file_or_a_model_wrote() -> None:
    board = synthetic_board()
    board["claims"][0]["quote"] = "<script>alert(1)</script>"
    board["api_checks"][0]["evidence"] = "<img src=x onerror=alert(1)>"
    page = html_report(board)
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)" in page
    assert "<img src=x" not in page


def test_a_claim_with_neither_experiment_nor_requires_is_named(tmp_path: Path) -> None:
    """Was a TypeError (PresetError's `source` is keyword-only) that stopped the board."""
    shutil.copytree(PRESETS / "claims", tmp_path / "claims")
    (tmp_path / "claims" / "zz-empty.yaml").write_text(
        "id: zz\ntitle: t\narticle: '000'\nquote: q\nchecks: [{metric: e2e_ms, "
        "direction: lower}]\n", "utf-8")
    claims, errors = load_claims(tmp_path)
    assert "zz" not in claims and len(claims) >= 9
    assert any("zz-empty.yaml" in e and "experiment: is required" in e for e in errors)


def test_text_table_of_no_rows_is_the_header() -> None:
    """Was a crash (max() of nothing) when no claim file loaded."""
    out = text_table([], ["claim", "verdict"])
    assert out.splitlines()[0].split() == ["claim", "verdict"]


def test_a_merged_board_is_one_holm_family() -> None:
    board = synthetic_board()
    rng = random.Random(4)
    base = [rng.gauss(1000, 60) for _ in range(12)]
    marginal = judge(LOWER, base, [x - 70 + rng.gauss(0, 60) for x in base])
    extra = ClaimResult("greedy", "Greedy", "000", "q", "done", checks=[marginal] * 12,
                        verdict=marginal.verdict, baseline="a", variant="b", n_requests=24,
                        wall_s=1.0)
    merged = refamily({**board, "claims": [*board["claims"], extra.as_dict()]})
    assert merged["policy"]["family_size"] == 13 and "Holm" in merged["policy"]["family_wise"]
    first = merged["claims"][0]["checks"][0]
    assert first["verdict"] == "confirmed" and first["p_adjusted"] >= first["p_value"]
    assert marginal.verdict == "confirmed"  # alone, p = 0.028
    assert merged["claims"][2]["verdict"] == "no detectable difference"  # one of 13: not
    assert "Verdicts: Holm-Bonferroni" in markdown(merged)


class MergingApi:
    """A server that streams a plain request one token per chunk, except where it merged what
    a slow reader had not taken yet (the suite's busy box: 32 tokens in 27 chunks)."""

    model = "m"

    def __init__(self, plain: int, with_param: int) -> None:
        self.counts = [plain, with_param]

    def stream_chunks(self, body: dict) -> tuple[int, int, int]:
        return 200, self.counts.pop(0), 32


def test_thinking_chunk_size_is_judged_by_grouping_not_by_a_count_that_load_moves() -> None:
    from playground.claims.api_checks import check_thinking_chunk_size

    def outcome(plain: int, with_param: int) -> str:
        return check_thinking_chunk_size(MergingApi(plain, with_param)).outcome  # type: ignore[arg-type]

    assert outcome(32, 27) == "silently ignored"  # merged by load: still not groups of 8
    assert outcome(32, 32) == "silently ignored"
    assert outcome(32, 4) == "works as written"  # 8 tokens per chunk
    assert outcome(4, 4) == "could not check"  # the server groups everything itself


def test_an_engine_claim_reports_service_and_queueing_apart() -> None:
    """"vLLM vs Transformers: -99%" at 10 concurrent mostly measured Transformers' queue (it
    serves one request at a time): the note says served and waiting apart, and the article's
    number beside them."""
    from playground.claims.explain import engine_split, service_and_queue
    from tests.records import make_record

    serial = [make_record("transformers", e2e) for e2e in (1000.0, 2000.0, 3000.0, 4000.0)]
    batched = [make_record("vllm", 300.0, server={"queue_time_ms": 0.5}) for _ in range(4)]
    assert service_and_queue(serial, True)[:2] == pytest.approx((1000.0, 1500.0))
    assert service_and_queue(batched, False)[:2] == pytest.approx((299.5, 0.5))
    assert service_and_queue(serial, False)[0] is None  # no queue time and not one at a time
    note = engine_split(serial, batched, ("transformers", "vllm"), {"transformers"},
                        "2812 -> 1124 ms P50 (2.5x)")
    assert note.startswith("served: transformers 1,000 ms vs vllm 300 ms per request (3.3x)")
    assert "waiting behind the others: 1,500 ms vs 0.5 ms" in note
    assert note.endswith("the article: 2812 -> 1124 ms P50 (2.5x)")
