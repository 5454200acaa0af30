"""`playground sweep`: one fixed-length workload at several concurrencies -- the load path while
it holds on this machine, vllm bench serve past that (lab/sweep, docs/load.md)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from playground.core.results import ServerSummary
from playground.core.sweep_doc import SweepDoc, SweepLevel
from playground.errors import ValidationFailed
from playground.lab import sweep
from playground.lab.arrivals import parse_rates
from playground.lab.engine import available
from playground.outputs import html
from playground.server.http import server_info
from playground.server.machine import describe as machine
from playground.server.series import Sampler, Series, describe, interval_for, read_levels
from playground.settings import Settings


def parse_levels(text: str) -> list[int]:
    try:
        levels = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        levels = []
    if not levels or any(not 1 <= c <= 4096 for c in levels):
        raise ValidationFailed("--concurrency", f"{text!r}: give comma-separated numbers "
                               "from 1 to 4096, e.g. 1,8,32,128")
    return levels


def run_sweep(settings: Settings, levels_text: str, out: Path, *, engine: str = "auto",
              output_len: int = 64, num_prompts: int = 64, workers: int | None = None,
              ray_address: str | None = None) -> int:
    levels = parse_levels(levels_text)
    if workers is not None and not 1 <= workers <= 512:
        raise ValidationFailed("--workers", f"{workers}: give 1-512 reader processes (more "
                               "than one run on Ray: --ray-address or an embedded cluster)")
    if not 2 <= output_len <= 8192:
        raise ValidationFailed("--output-len", "must be 2-8192 tokens (TPOT needs two)")
    if num_prompts < 1:
        raise ValidationFailed("--num-prompts", "must be at least 1")
    if out.exists() and not out.is_dir():
        raise ValidationFailed("--out", f"{out} is a file; give a folder")
    key = settings.api_key_value()
    python = settings.server_python()
    has_vllm = engine != "playground" and available(python)
    if engine == "vllm-bench" and not has_vllm:
        raise ValidationFailed("--engine", f"vllm bench serve is not importable by {python}; "
                               "install vLLM there, or use --engine playground")
    info = server_info(settings.base_url, key)
    if not info.models:
        raise ValidationFailed("--base-url", f"{settings.base_url} serves no model")
    served = next((m for m in info.models if m.id == settings.model), info.models[0])
    model = served.id
    out.mkdir(parents=True, exist_ok=True)
    env = machine()
    doc = SweepDoc(base_url=settings.base_url, model=model, vllm=info.version,
                   date=time.strftime("%Y-%m-%d %H:%M"), machine=env, output_len=output_len,
                   engine=engine, vllm_bench_rows="role-aligned")
    # warm-up: a few requests through the load path, outside every timed level
    sweep.ours(settings.base_url, key, model, sweep.prompts("warm", 4), output_len, 2)
    (out / "server-series.jsonl").unlink(missing_ok=True)
    every = interval_for(settings.base_url, settings.series_interval_s)
    writer = sweep.RowWriter(out / "sweep-requests.csv")
    try:
        for c in levels:
            n = max(num_prompts, 2 * c)
            tool = sweep.choose(engine, c, has_vllm)  # type: ignore[arg-type]
            texts = sweep.prompts(f"sweep c{c}", n)
            ran: dict[str, Any] = {"workers": None}
            with Sampler(settings.base_url, every) as sampler:  # what the server was doing
                if tool == "playground":
                    rows, res = sweep.ours(settings.base_url, key, model, texts, output_len, c,
                                           workers=workers, ray_address=ray_address)
                    wall = res.wall_s
                    ran = {"workers": res.workers}
                    if res.nodes:  # Ray: requests per node; the start barrier's uncertainty
                        ran.update(nodes=res.nodes, barrier_ms=res.barrier_s * 1000)
                else:
                    rows, wall = sweep.vllm_bench(settings.base_url, key, model, served.root,
                                                  texts, output_len, c, python, out / "work")
            writer.write(c, 0, tool, rows)
            level = SweepLevel(concurrency=c, engine=tool, **ran,
                               **sweep.summarise(rows, [wall]),
                               server=keep_series(out, f"c{c}", sampler.series))
            doc.levels.append(level)
            _write(out, doc)
            print(f"c{c:<5} {tool:11} n={level.n:<5} failed={level.failed:<3} "
                  f"TTFT p50 {_ms(level.ttft_p50_ms)} p99 {_ms(level.ttft_p99_ms)}  "
                  f"TPOT p50 {_ms(level.tpot_p50_ms)}  ITL p99 {_ms(level.itl_p99_ms)}  "
                  f"{level.req_per_s or 0:.1f} req/s", flush=True)
    finally:
        writer.close()
    print(f"-> {out / 'sweep.json'}, {out / 'sweep.html'}, {out / 'sweep-requests.csv'}",
          file=sys.stderr)
    return 0 if all(lv.failed == 0 for lv in doc.levels) else 1


def _write(out: Path, doc: SweepDoc) -> None:
    """sweep.json (core/sweep_doc.SweepDoc), and its report sweep.html (the Pareto view and
    the server's series), after every level."""
    (out / "sweep.json").write_text(json.dumps(doc.model_dump(mode="json", exclude_none=True),
                                               indent=1), "utf-8")
    kept = out / "server-series.jsonl"
    levels = read_levels(kept.read_text("utf-8").splitlines()) if kept.is_file() else []
    (out / "sweep.html").write_text(html.sweep(doc, series=levels), "utf-8")


def keep_series(out: Path, level: str, series: Series) -> ServerSummary:
    """A level's server (and GPU) samples appended to server-series.jsonl (one typed record a
    line, tagged with the level); its summary (peaks, counter changes, gaps, why there is no
    GPU telemetry) for sweep.json."""
    with (out / "server-series.jsonl").open("a", encoding="utf-8") as f:
        for sample in [*series.samples, *series.gpu]:
            f.write(json.dumps({"level": level, **sample.model_dump()}) + "\n")
    found = series.summary()
    return ServerSummary(**found, text=describe(found))


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f} ms"


def run_rate_sweep(settings: Settings, rates_text: str, out: Path, *, arrival: str = "poisson",
                   burstiness: float = 1.0, seed: int = 0, max_concurrency: int | None = None,
                   output_len: int = 64, num_prompts: int = 64) -> int:
    """Open-loop levels at each rate, in this process (lab/arrivals, runner.run_at), until the
    server saturates (sweep.saturated). Each level's rows carry the send delay."""
    if not burstiness > 0 or (arrival != "gamma" and burstiness != 1.0):
        raise ValidationFailed("--burstiness", f"{burstiness:g}: give a number above 0, with "
                               "--arrival gamma (poisson and constant arrivals have none)")
    try:
        rates = parse_rates(rates_text, arrival, burstiness)  # type: ignore[arg-type]
    except ValueError as e:
        raise ValidationFailed("--rate", str(e)) from None
    if not 2 <= output_len <= 8192:
        raise ValidationFailed("--output-len", "must be 2-8192 tokens (TPOT needs two)")
    if num_prompts < 1:
        raise ValidationFailed("--num-prompts", "must be at least 1")
    if max_concurrency is not None and max_concurrency < 1:
        raise ValidationFailed("--max-concurrency", "must be at least 1 (or left out)")
    key = settings.api_key_value()
    info = server_info(settings.base_url, key)
    if not info.models:
        raise ValidationFailed("--base-url", f"{settings.base_url} serves no model")
    model = next((m for m in info.models if m.id == settings.model), info.models[0]).id
    out.mkdir(parents=True, exist_ok=True)
    doc = SweepDoc(base_url=settings.base_url, model=model, vllm=info.version,
                   date=time.strftime("%Y-%m-%d %H:%M"), machine=machine(),
                   output_len=output_len, engine="playground (open loop)", arrival=arrival,
                   burstiness=burstiness, seed=seed, max_concurrency=max_concurrency)
    sweep.ours(settings.base_url, key, model, sweep.prompts("warm", 4), output_len, 2)
    (out / "server-series.jsonl").unlink(missing_ok=True)
    every = interval_for(settings.base_url, settings.series_interval_s)
    writer = sweep.RowWriter(out / "sweep-requests.csv")
    try:
        for rate in rates:
            texts = sweep.prompts(f"sweep rate {rate.per_s:g}", num_prompts)
            with Sampler(settings.base_url, every) as sampler:
                rows, wall = sweep.ours_at(settings.base_url, key, model, texts, output_len,
                                           rate, seed=seed, max_concurrency=max_concurrency)
            writer.write(max_concurrency or 0, 0, "playground", rows, rate=rate.per_s)
            level = SweepLevel(rate_per_s=rate.per_s if rate.per_s != float("inf") else "inf",
                               profile=rate.label(), **sweep.summarise(rows, [wall]),
                               server=keep_series(out, f"rate {rate.per_s:g}", sampler.series))
            doc.levels.append(level)
            print(f"{rate.label():24} n={level.n:<5} failed={level.failed:<3} "
                  f"{level.req_per_s or 0:.2f} req/s  TTFT p50 {_ms(level.ttft_p50_ms)}"
                  f" (from schedule {_ms(level.ttft_from_due_p50_ms)})  send delay "
                  f"p50 {_ms(level.send_delay_p50_ms)} p99 {_ms(level.send_delay_p99_ms)}"
                  f"{'  CLIENT-BOUND' if level.client_bound else ''}", flush=True)
            if len(doc.levels) > 1 and (why := sweep.saturated(doc.levels[-2], level)):
                doc.stopped = why
                print(why, flush=True)
            _write(out, doc)
            if doc.stopped:
                break
    finally:
        writer.close()
    print(f"-> {out / 'sweep.json'}, {out / 'sweep.html'}, {out / 'sweep-requests.csv'}",
          file=sys.stderr)
    return 0 if all(lv.failed == 0 for lv in doc.levels) else 1
