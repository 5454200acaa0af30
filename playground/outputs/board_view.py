"""PURE: the claims board document (claims.json) -> rows, environment lines, Markdown.

The board document is built from results alone (each check keeps its samples), so every view
of it -- CLI table, UI dataframe, Markdown, the stakeholder report -- can be redrawn from the
JSON without the run history.
"""

from __future__ import annotations

from typing import Any

from playground.outputs.fmt import DEMO_NOTICE
from playground.outputs.report_figures import primary_check

BOARD_HEADERS = ["claim", "article", "article's number", "ours (median, 95% CI)", "verdict",
                 "other checks"]


def _ours(x: dict[str, Any] | None) -> str:
    if x is None or x["change"] is None:
        return "-"
    lo, hi = x["change_ci"]
    unit = x["unit"]
    if unit == "pp":
        return (f"{x['baseline_value']:.0f}% -> {x['variant_value']:.0f}% "
                f"({x['change']:+.0f} pp [{lo:+.0f}, {hi:+.0f}])")
    return (f"{x['baseline_value']:,.0f} -> {x['variant_value']:,.0f} ms "
            f"({x['change']:+.0f}% [{lo:+.0f}, {hi:+.0f}])")


def board_rows(board: dict[str, Any]) -> list[list[str]]:
    rows = []
    for c in board["claims"]:
        p = primary_check(c)
        if c["status"] != "done":
            verdict = f"not run: {c['reason']}" if c["status"] == "skipped" else (
                f"failed: {c['reason']}")
            rows.append([c["title"], c["article"], p["claimed"] if p else "", "-", verdict, ""])
            continue
        others = "; ".join(f"{x['label']}: {x['verdict']}" if x["direction"] != "report"
                           else f"{x['label']}: {_ours(x)}" for x in c["checks"] if x is not p)
        rows.append([c["title"], c["article"], p["claimed"] if p else "",
                     f"{p['label']}: {_ours(p)}" if p else "-", c["verdict"], others])
    return rows


def env_lines(board: dict[str, Any]) -> list[str]:
    env = board["environment"]
    m = env["machine"]
    demo = env.get("demo_model")
    flags = env.get("server_flags") or "not known (server not started by this command)"
    model = ", ".join(env.get("models") or []) or "?"
    lines = [f"Accelerator: {m['accelerator']}", f"CPU: {m['cpu']} ({m['cores']} cores, "
             f"{m['memory_gib']} GiB)", f"vLLM: {env.get('vllm_version') or '?'} at "
             f"{env['base_url']}", f"Model: {model}" + (f" -- {DEMO_NOTICE}" if demo else ""),
             f"Server flags: {flags}", f"Measured: {env['measured_at']}"]
    return lines


METHOD = ("Each claim is an experiment: the article's 'before' and 'after' variants, sent "
          "interleaved (A B A B, rotated per example) with a cold prefix cache (a unique first "
          "line per request), after untimed warm-up requests. Times are client-side "
          "(docs/measurement.md): TTFT = first generated token, first visible character = TTFT "
          "when streaming and E2E when not. We compare medians: the change is the median of "
          "'after' relative to 'before', with a 95% bootstrap confidence interval. A claim is "
          "confirmed when the change goes the claimed way and its CI excludes zero, refuted "
          "when it goes the other way and its CI excludes zero, and otherwise there is no "
          "detectable difference. Rates (valid JSON, accuracy) are compared in percentage "
          "points. The article's own number is shown next to ours: it was measured on other "
          "hardware and is context, not a target.")


def markdown(board: dict[str, Any]) -> str:
    out = ["# Claims board -- qwen-latency-lab", ""]
    out += [f"- {line}" for line in env_lines(board)]
    out += ["", "| " + " | ".join(BOARD_HEADERS) + " |",
            "|" + "---|" * len(BOARD_HEADERS)]
    for row in board_rows(board):
        out.append("| " + " | ".join(cell.replace("|", "/") for cell in row) + " |")
    if board["api_checks"]:
        out += ["", "## API statements, tried on the live server", "",
                "| statement (article) | outcome | evidence | what works |", "|---|---|---|---|"]
        for a in board["api_checks"]:
            out.append(f"| {a['statement']} ({a['article']}) | {a['outcome']} | "
                       f"{a['evidence'].replace('|', '/')} | {a['instead']} |")
    out += ["", "## Method", "", METHOD, ""]
    for c in board["claims"]:
        if c["status"] == "done":
            out += [f"### {c['title']}", "", f"> {c['quote']} ({c['article']})", "",
                    *[f"- {x['verdict']}: {x['text']}" for x in c["checks"]],
                    f"- {c['n_requests']} timed requests, {c['n_failed']} failed, "
                    f"{c['wall_s']:.0f} s", "", c["note"], ""]
    return "\n".join(out)
