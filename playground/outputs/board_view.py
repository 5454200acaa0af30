"""PURE: the claims board document (claims.json) -> rows, environment lines, Markdown.

The board document is built from results alone (each check keeps its samples), so every view
of it -- CLI table, UI dataframe, Markdown, the stakeholder report -- can be redrawn from the
JSON without the run history.
"""

from __future__ import annotations

from typing import Any

from playground.outputs.fmt import DEMO_NOTICE, md_text
from playground.outputs.report_figures import primary_check

BOARD_HEADERS = ["claim", "article", "article's number", "ours (median, 95% CI)", "verdict",
                 "size vs the article", "ran on", "other checks"]


def _ours(x: dict[str, Any] | None) -> str:
    if x is None or x["change"] is None or x["verdict"] == "not measurable on the demo model":
        return "-"
    ci = "" if x["change_ci"] is None else (
        f" [{x['change_ci'][0]:+.0f}, {x['change_ci'][1]:+.0f}]")
    if x["unit"] == "pp":
        return (f"{x['baseline_value']:.0f}% -> {x['variant_value']:.0f}% "
                f"({x['change']:+.0f} pp{ci})")
    # below 10 ms one decimal: "2 -> 25" would read as 12.5x where the data say 10.8x
    pair = (x["baseline_value"], x["variant_value"])
    digits = 1 if min(abs(v) for v in pair) < 10 else 0
    return (f"{pair[0]:,.{digits}f} -> {pair[1]:,.{digits}f} ms "
            f"({x['change']:+.0f}%{ci})")


def _size(x: dict[str, Any] | None) -> str:
    """The magnitude next to the article's number, or why there is none."""
    if x is None:
        return ""
    if x.get("reason") and x["verdict"] != "no detectable difference":
        return x["reason"]
    size = x.get("magnitude") or ""
    if x.get("ours_in_claim_unit") and x.get("claimed_in_unit"):
        size += f": {x['ours_in_claim_unit']} vs {x['claimed_in_unit']} claimed"
    return size


def ran_on(c: dict[str, Any]) -> str:
    """The model, and what the server's queue and KV cache reached while the claim ran."""
    model = c.get("model") or "?"
    said = f"{model} (demo model, random weights)" if c.get("demo_model") else model
    server = (c.get("summary") or {}).get("server") or {}
    if server.get("samples"):
        kv = server.get("peak_kv_usage")
        said += (f"; server peak {server['peak_waiting']:.0f} waiting"
                 + (f", KV cache {kv:.0%}" if kv is not None else ""))
    return said


def _other(x: dict[str, Any]) -> str:
    if x["direction"] == "report" and x["verdict"] == "reported":
        return f"{x['label']}: {_ours(x)}"
    return f"{x['label']}: {x['verdict']}" + (f" ({_size(x)})" if _size(x) else "")


def board_rows(board: dict[str, Any]) -> list[list[str]]:
    rows = []
    for c in board["claims"]:
        p = primary_check(c)
        if c["status"] != "done":
            verdict = f"not run: {c['reason']}" if c["status"] == "skipped" else (
                f"failed: {c['reason']}")
            rows.append([c["title"], c["article"], p["claimed"] if p else "", "-", verdict,
                         "", "", ""])
            continue
        others = "; ".join(_other(x) for x in c["checks"] if x is not p)
        verdict = c["verdict"] + (f" -- {c['verdict_note']}" if c.get("verdict_note") else "")
        rows.append([c["title"], c["article"], p["claimed"] if p else "",
                     f"{p['label']}: {_ours(p)}" if p else "-", verdict, _size(p),
                     ran_on(c), others])
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
    policy = (board.get("policy") or {}).get("family_wise")
    if policy:
        lines.append(f"Verdicts: {policy} ({board['policy']['family_size']} judged checks)")
    if board.get("stopped"):
        lines.append(f"Stopped: {board['stopped']}")
    return lines


METHOD = ("Each claim is an experiment: the article's 'before' and 'after' variants, sent "
          "interleaved (A B A B, rotated per example) with a cold prefix cache (a unique first "
          "line per request), after untimed warm-up requests. Times are client-side "
          "(docs/measurement.md): TTFT = first generated token, first visible character = the "
          "first answer character (TTFA) when streaming and E2E when not. Direction: a "
          "two-sided permutation test of the "
          "medians (log scale; means for rates), exact when all splits can be enumerated; a "
          "check is confirmed when the change goes the claimed way and its Holm-adjusted "
          "p-value over all judged checks of the board is at most 0.05, refuted when it goes "
          "the other way, and otherwise shows no detectable difference. When no data of the "
          "sample's size could reach p <= 0.05 (2 vs 2, 3 vs 3, 4 vs 4 values) the verdict is "
          "'too few samples'. Size: the change's 95% interval (the effects the same test does "
          "not reject) in the article's unit -- %, ms per request, x, or percentage points -- "
          "and whether the article's number lies inside it (consistent), above or below it "
          "(smaller / larger than claimed). A claim without a number is judged on its "
          "direction only. A check whose outcome the random-weight demo model decides "
          "(accuracy, JSON validity of free text, lengths left to the model) is 'not "
          "measurable on the demo model' with the reason. The article's numbers come from "
          "other hardware: they are context, not a target.")


def raw_file(c: dict[str, Any]) -> str:
    """Where the row's requests are: its raw run file, or why it was not kept."""
    return c.get("run_file") or c.get("run_path") or "not recorded"


def markdown(board: dict[str, Any]) -> str:
    """The board as a Markdown report; every value from the board (claim files, the server's
    answers, error text) is written as text (fmt.md_text), never as markup."""
    t = md_text
    out = ["# Claims board -- qwen-latency-lab", ""]
    out += [f"- {t(line)}" for line in env_lines(board)]
    out += ["", "| " + " | ".join(BOARD_HEADERS) + " |",
            "|" + "---|" * len(BOARD_HEADERS)]
    for row in board_rows(board):
        out.append("| " + " | ".join(t(" ".join(cell.split())) for cell in row) + " |")
    if board["api_checks"]:
        out += ["", "## API statements, tried on the live server", "",
                "| statement (article) | outcome | evidence | what works |", "|---|---|---|---|"]
        for a in board["api_checks"]:
            out.append(f"| {t(a['statement'])} ({t(a['article'])}) | {t(a['outcome'])} | "
                       f"{t(' '.join(a['evidence'].split()))} | {t(a['instead'])} |")
    out += ["", "## Method", "", METHOD, ""]
    for c in board["claims"]:
        if c["status"] == "done":
            out += [f"### {t(c['title'])}", "", f"> {t(c['quote'])} ({t(c['article'])})", "",
                    f"- ran on: {t(ran_on(c))}",
                    *[f"- {t(x['verdict'])}: {t(x['text'])}" for x in c["checks"]],
                    *([f"- {t(c['explanation'])}"] if c.get("explanation") else []),
                    f"- {c['n_requests']} timed requests, {c['n_failed']} failed, "
                    f"{c['wall_s']:.0f} s; every request: {t(raw_file(c))}", "",
                    t(c["note"]), ""]
    return "\n".join(out)
