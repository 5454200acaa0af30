"""PURE: the checks whose outcome the random-weight demo model decides, and why.

The demo model's latency mechanics are real, but what it *writes* is noise: it never stops on
its own, never closes `</think>`, and never writes JSON unless a grammar forces it. A check that
depends on what the model writes gets "not measurable on the demo model (random weights): why"
instead of a verdict. Fixed-length designs (ignore_eos + max_tokens, a thinking budget) and
per-token or first-token metrics do not depend on it and are judged.
"""

from __future__ import annotations

from playground.specs.claims import Check
from playground.specs.presets import Variant

DEMO_PREFIX = "not measurable on the demo model (random weights)"


def _length_left_to_model(v: Variant) -> bool:
    """The answer's length is decided by the model: EOS, or a grammar walking random tokens."""
    return not v.ignore_eos or v.guided_json is not None


def _open_thinking(v: Variant) -> bool:
    return v.thinking and v.thinking_budget is None


def demo_reason(check: Check, base: Variant, var: Variant) -> str:
    """Why the demo model cannot answer this check ("" when it can)."""
    sides = (base, var)
    metric = check.metric
    if metric == "field_accuracy":
        return ("its answers are random tokens, so field accuracy is 0 on both sides by "
                "construction")
    if metric in ("json_valid", "schema_valid") and any(v.guided_json is None for v in sides):
        return ("free generation from random weights is never JSON, so the free side's "
                "validity is 0% by construction")
    # the first visible (answer) character waits for the whole reply when not streaming, and
    # for the end of the reasoning when thinking is on: then it depends on lengths too
    length_metric = metric in ("e2e_ms", "batch_wall_ms", "ttfa_ms") or (
        metric == "visible_wait_ms" and any(not v.stream or v.thinking for v in sides))
    if not length_metric:
        return ""
    if any(_open_thinking(v) for v in sides):
        return ("random weights never close </think>, so the reasoning runs to max_tokens "
                "instead of the model's own length (a thinking budget fixes it)")
    if metric == "ttfa_ms":
        return ""
    judged = sides if metric != "visible_wait_ms" else tuple(v for v in sides if not v.stream)
    if any(_length_left_to_model(v) for v in judged):
        return ("the answer's length is left to the model (no ignore_eos, or a grammar), and "
                "random weights do not stop where a trained model would")
    return ""
