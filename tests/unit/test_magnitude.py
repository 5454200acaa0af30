"""Magnitude wording on synthetic claims (the article's unit: %, ms per request, x, before ->
after, pp) and the checks the random-weight demo model cannot answer."""

from __future__ import annotations

import random

from playground.claims.honesty import demo_reason
from playground.claims.magnitude import (
    CONSISTENT,
    DIRECTION_ONLY,
    LARGER,
    NOT_JUDGED,
    SMALLER,
    judge_magnitude,
)
from playground.claims.verdicts import adjust, judge
from playground.lab.calls import compare
from playground.specs.claims import Check
from playground.specs.presets import GuidedJson, Variant


def around(center: float, n: int = 20, width: float = 0.04, seed: int = 0) -> list[float]:
    rng = random.Random(seed)
    return [center * (1 + rng.uniform(-width, width)) for _ in range(n)]


BEFORE, AFTER = around(1000), around(790, seed=1)  # about -21%


def test_relative_change_consistent_smaller_and_larger() -> None:
    def outcome(pct: float) -> str:
        check = Check(metric="e2e_ms", direction="lower", claimed=f"{pct}%",
                      claimed_change_pct=pct)
        return judge(check, BEFORE, AFTER).magnitude
    assert outcome(-21) == CONSISTENT
    assert outcome(-60) == SMALLER  # we measured less of a speed-up than claimed
    assert outcome(-5) == LARGER
    r = judge(Check(metric="e2e_ms", direction="lower", claimed="-18%",
                    claimed_change_pct=-18), BEFORE, AFTER)
    assert r.text.endswith("confirmed in direction; larger than claimed (-18% claimed)")


def test_before_after_is_judged_as_the_relative_change_it_implies() -> None:
    check = Check(metric="visible_wait_ms", direction="lower", claimed="1.8 s -> 0.3 s",
                  claimed_before_after_ms=(1800, 300))
    r = judge(check, around(120), around(16, seed=2))
    assert r.magnitude == CONSISTENT or r.magnitude in (SMALLER, LARGER)
    assert "1,800 -> 300 ms, -83%" in r.text
    assert r.claimed_change_pct is not None and round(r.claimed_change_pct) == -83


def test_ms_per_request_from_a_per_token_cost() -> None:
    check = Check(metric="tpot_ms", direction="higher", claimed="~15 ms per request",
                  claimed_diff_ms=15, per_request=True)
    tpot_free, tpot_guided = around(2.0), around(2.3, seed=3)  # +0.3 ms per token
    r = judge(check, tpot_free, tpot_guided, tokens=50)  # x 50 tokens = ~+15 ms per request
    assert r.verdict == "confirmed" and r.magnitude == CONSISTENT
    assert "/token x 50 tokens = +15 ms per request" in r.text and "+15 ms claimed" in r.text
    small = judge(check, tpot_free, tpot_guided, tokens=5)  # ~1.5 ms per request
    assert small.magnitude == SMALLER


def test_a_factor_is_compared_as_a_factor() -> None:
    check = Check(metric="e2e_ms", direction="higher", claimed="about 2x", claimed_factor=2.0)
    assert judge(check, around(500), around(1000, seed=4)).magnitude == CONSISTENT
    r = judge(check, around(500), around(600, seed=4))
    assert r.magnitude == SMALLER and "2.00x claimed" in r.text and "1.2" in r.text
    faster = Check(metric="e2e_ms", direction="lower", claimed="2.5x faster",
                   claimed_factor=0.4)
    assert judge(faster, around(2800), around(400, seed=5)).magnitude == LARGER


def test_rates_in_percentage_points() -> None:
    check = Check(metric="json_valid", direction="higher", claimed="82% -> 100%",
                  claimed_change_pct=18)
    r = judge(check, [1.0] * 8 + [0.0] * 12, [1.0] * 20)  # 40% -> 100%: +60 pp
    assert r.verdict == "confirmed" and r.magnitude == LARGER and r.unit == "pp"


def test_no_number_is_direction_only_and_too_few_is_not_judged() -> None:
    r = judge(Check(metric="ttft_ms", direction="lower", claimed="lower (no number given)"),
              BEFORE, AFTER)
    assert r.magnitude == DIRECTION_ONLY and "direction only" in r.text
    few = judge(Check(metric="e2e_ms", direction="lower", claimed_change_pct=-50),
                [1000.0, 1010.0], [500.0, 505.0])
    assert few.verdict == "too few samples" and "too few samples (n=2 vs 2" in few.text
    assert judge_magnitude(Check(metric="e2e_ms", direction="lower", claimed_change_pct=-5),
                           compare([1.0, 2.0], [1.0, 2.0])).outcome == NOT_JUDGED


def test_holm_over_a_family_can_take_back_a_marginal_call() -> None:
    check = Check(metric="e2e_ms", direction="lower")
    clear = judge(check, around(1000), around(500, seed=6))
    rng = random.Random(9)
    base = [rng.gauss(1000, 60) for _ in range(12)]
    marginal = judge(check, base, [x - 60 + rng.gauss(0, 60) for x in base])
    family = adjust([clear] + [marginal] * 14)
    assert family[0].verdict == "confirmed"
    assert marginal.verdict == "confirmed"  # alone, p = 0.004
    assert family[1].verdict == "no detectable difference"  # x 14 checks: 0.056
    assert "Holm-adjusted" in family[1].text


FREE = Variant(name="free", ignore_eos=False)
FIXED = Variant(name="fixed", ignore_eos=True, max_tokens=64)
GUIDED = Variant(name="guided", guided_json=GuidedJson.model_validate(
    {"name": "a", "schema": {"type": "object"}}))
THINK = Variant(name="think", thinking=True, ignore_eos=True)
BUDGET = Variant(name="budget", thinking=True, ignore_eos=True, thinking_budget=64,
                 think_prefill=True, max_tokens=130)


def test_the_demo_model_cannot_answer_what_its_text_decides() -> None:
    def why(metric: str, a: Variant, b: Variant) -> str:
        return demo_reason(Check(metric=metric, direction="higher"), a, b)  # type: ignore[arg-type]
    assert "accuracy" in why("field_accuracy", FIXED, FIXED)
    assert "never JSON" in why("json_valid", FREE, GUIDED)
    assert why("schema_valid", GUIDED, GUIDED) == ""  # the grammar decides: measurable
    assert "</think>" in why("e2e_ms", FIXED, THINK)
    assert "</think>" in why("ttfa_ms", FIXED, THINK)
    assert why("e2e_ms", FIXED, BUDGET) == ""  # a thinking budget fixes the length
    assert "length is left to the model" in why("e2e_ms", FREE, FIXED)
    assert why("e2e_ms", FIXED, FIXED) == "" and why("ttft_ms", FREE, GUIDED) == ""
    assert why("tpot_ms", FREE, GUIDED) == ""  # a per-token cost: the length does not matter
    stream_free = Variant(name="s", stream=True)
    assert why("visible_wait_ms", FIXED.model_copy(update={"stream": False}), stream_free) == ""
    nonstream_free = Variant(name="n", stream=False)
    assert "length" in why("visible_wait_ms", nonstream_free, stream_free)


def test_a_demo_check_says_so_instead_of_a_verdict() -> None:
    check = Check(metric="field_accuracy", direction="higher", claimed_change_pct=84)
    r = judge(check, [0.0] * 8, [0.0] * 8, demo="its answers are random tokens")
    assert r.verdict == "not measurable on the demo model"
    assert "not measurable on the demo model (random weights): its answers" in r.text
    assert adjust([r])[0].verdict == "not measurable on the demo model"
