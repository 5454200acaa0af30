"""Two arms of benchmarks/ui_fidelity.py alternated run by run: does a change to how the app or
the browser runs move what the audience sees?

Each run is one whole `ui_fidelity.py --rows live` run: the Playground, the plain page of the
same app and the same comparison headless, round by round, so every run carries its own
control. The arms alternate A B B A A B ... (drift on the machine falls on both). From each
run's summary come the measures below; the arms are compared with `lab/calls` (the permutation
test, its 95% interval by inversion, Holm over the family of measures): "B/A x (interval)" and
"lower", "higher" or "no difference resolved at this n".

    python benchmarks/ui_fidelity_ab.py --base-url URL --pairs 8 --rounds 8 \\
        --b "--app-switch-interval-ms 0.5" --out DIR

Writes DIR/a-1 ... DIR/b-N (each run's summary.json and raw.jsonl.gz) and DIR/ab.json.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playground.lab import calls  # noqa: E402


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def measures(summary: dict) -> dict[str, float | None]:
    """One run's numbers: the Playground against its in-run headless control, the plain page
    (the control of the control), and what the audience sees."""
    w = summary.get("where_the_wait_goes") or {}
    live, hl, plain = w.get("live", {}), w.get("headless", {}), w.get("plain", {})
    rows = {r["row"]: r for r in summary["rows"]}
    pg = rows["playground, live vLLM"]
    return {
        "Playground TTFA / headless": summary["ui_vs_headless"]["ttfa_ms"]["ratio"],
        "Playground sent -> headers / headless": _ratio(live.get("headers_p50_ms"),
                                                        hl.get("headers_p50_ms")),
        "plain page TTFA / headless (control)": _ratio(plain.get("ttfa_p50_ms"),
                                                       hl.get("ttfa_p50_ms")),
        "click -> text - TTFA, p50 (ms)": pg["first_lag_p50_ms"],
        "click -> text - TTFA, p90 (ms)": pg["first_lag_p90_ms"],
        "render lag p50 (ms)": pg["lag_p50_ms"],
        "headless TTFA (ms)": hl.get("ttfa_p50_ms"),
    }


CONTEXT = ("plain page TTFA / headless (control)", "headless TTFA (ms)")  # shown, not tested


def compare(a_runs: list[dict], b_runs: list[dict]) -> list[dict]:
    """Each measure, B vs A, over the runs of each arm; Holm over the family of tested
    measures (the two CONTEXT measures are reported, not tested: they say whether the machine
    or the control moved between the arms)."""
    a_all, b_all = [measures(s) for s in a_runs], [measures(s) for s in b_runs]
    effects = []
    for name in a_all[0]:
        a, b = [m[name] for m in a_all], [m[name] for m in b_all]
        effects.append((name, a, b, calls.compare(b, a)))  # ratio = baseline / variant = B / A
    tested = [e.p_value if name not in CONTEXT else None for name, _, _, e in effects]
    family = sum(p is not None for p in tested)
    adjusted = calls.holm(tested)
    out = []
    for (name, a, b, e), p_adj in zip(effects, adjusted, strict=True):
        verdict = calls.call(e, p_adj)
        if name in CONTEXT:
            said = "context, not tested"
        elif verdict == "none" and e.min_p is not None and e.min_p * family > calls.ALPHA:
            said = (f"cannot be called at this n: {e.n_variant} vs {e.n_baseline} runs reach "
                    f"p >= {e.min_p:.3f} at best, x {family} measures (Holm) > {calls.ALPHA}")
        else:
            said = {"lower": "B higher", "higher": "B lower",  # calls: A vs baseline B
                    "none": "no difference resolved at this n",
                    "too few samples": calls.too_few_text(e) if e.min_p else "too few samples",
                    "not measurable": "not measurable"}[verdict]
        out.append({"measure": name, "a": a, "b": b, "a_median": e.variant,
                    "b_median": e.baseline, "b_over_a": e.ratio, "b_over_a_ci": e.ratio_ci,
                    "p": e.p_value, "p_holm": p_adj, "verdict": said})
    return out


def run_arm(args: argparse.Namespace, arm: str, k: int) -> dict:
    out = args.out / f"{arm}-{k}"
    extra = shlex.split(args.a if arm == "a" else args.b)
    cmd = [sys.executable, str(ROOT / "benchmarks" / "ui_fidelity.py"), "--base-url",
           args.base_url, "--rounds", str(args.rounds), "--rows", "live", "--out", str(out),
           *extra]
    t0 = time.time()
    with (args.out / f"{arm}-{k}.log").open("w") as log:
        rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT).returncode
    print(f"{arm}-{k}: rc {rc}, {time.time() - t0:.0f} s ({' '.join(extra) or 'as shipped'})",
          flush=True)
    if rc != 0:
        raise SystemExit(f"{arm}-{k} failed: see {args.out / f'{arm}-{k}.log'}")
    raw = out / "raw.jsonl"
    with raw.open("rb") as src, gzip.open(out / "raw.jsonl.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    raw.unlink()
    return json.loads((out / "summary.json").read_text("utf-8"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--pairs", type=int, default=6,
                    help="runs per arm; a call on the five measures needs at least 8")
    ap.add_argument("--rounds", type=int, default=8, help="rounds per ui_fidelity run")
    ap.add_argument("--a", default="", help="ui_fidelity.py options of arm A (default: none)")
    ap.add_argument("--b", required=True, help="ui_fidelity.py options of arm B")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    if args.out.exists() and any(args.out.iterdir()):
        raise SystemExit(f"--out: {args.out} is not empty; give a new or empty directory")
    args.out.mkdir(parents=True, exist_ok=True)
    runs: dict[str, list[dict]] = {"a": [], "b": []}
    for k in range(1, args.pairs + 1):
        for arm in ("ab" if k % 2 else "ba"):
            runs[arm].append(run_arm(args, arm, k))
    result = compare(runs["a"], runs["b"])
    print(f"\nA: {args.a or 'as shipped'}   B: {args.b}   ({args.pairs} runs each, "
          f"{args.rounds} rounds x 4 columns per run)")
    print(f"{'measure':42}{'A':>8}{'B':>8}{'B/A':>7}{'95% interval':>16}  verdict")
    for r in result:
        ci = r["b_over_a_ci"]
        print(f"{r['measure']:42}{r['a_median']:8.2f}{r['b_median']:8.2f}{r['b_over_a']:7.2f}"
              f"{'-' if ci is None else f'{ci[0]:.2f}-{ci[1]:.2f}':>16}  {r['verdict']}")
    (args.out / "ab.json").write_text(json.dumps({
        "a": args.a, "b": args.b, "pairs": args.pairs, "rounds": args.rounds,
        "machine": runs["a"][0]["machine"], "base_url": args.base_url,
        "created": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "measures": result}, indent=1) + "\n")
    print(f"\nwrote {args.out}/ab.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
