"""What the UI handlers share: settings, presets, client pools, the run store. No globals."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playground.core.measure_loop import MeasureLoop
from playground.core.pool import ClientPool
from playground.core.port import Remembering, SharedLive
from playground.core.runner import Recording
from playground.core.warmup import WarmState, warm_server
from playground.errors import PlaygroundError, ValidationFailed, opaque
from playground.lab.store import RunStore
from playground.server import outbound
from playground.server.floor import server_floor
from playground.server.http import ServerInfo, aserver_info
from playground.server.managed import ManagedServer
from playground.server.series import interval_for
from playground.server.shared_series import SharedSamplers
from playground.settings import Settings, check_base_url
from playground.specs.experiments import load_dataset
from playground.specs.presets import PresetLibrary
from playground.ui.live_channels import Feeds
from playground.ui.quotas import PRESETS_PER_WINDOW, Quota
from playground.ui.readers import Readers
from playground.ui.run_log import RunLog
from playground.ui.run_route import Plans, Starter
from playground.ui.slots import Slots


def load_examples(presets_dir: Path, limit: int = 12) -> list[str]:
    """The prompt box's examples: the address data set's inputs (none when it cannot load)."""
    try:
        return [row["input"] for row in load_dataset(presets_dir, "address", limit)]
    except PlaygroundError:
        return []


def owner_of(request: Any) -> str:
    """A visitor's tag (run and recording file names end with it): 12 hex digits of a hash of
    the Gradio session, never the session id itself; "" without a session."""
    session = getattr(request, "session_hash", None) or ""
    return hashlib.sha256(f"owner:{session}".encode()).hexdigest()[:12] if session else ""


MAX_FLOORS = 64  # servers whose physical floor is remembered


def server_key(base_url: str) -> str:
    """One server however its URL is spelled: no user info, host lower-case, no trailing /."""
    from urllib.parse import urlsplit

    u = urlsplit(base_url)
    host = (u.hostname or "").lower()
    host = f"[{host}]" if ":" in host else host
    port = f":{u.port}" if u.port else ""
    return f"{u.scheme.lower()}://{host}{port}{u.path.rstrip('/')}"


def visitor_of(request: Any, trusted: Collection[str] = ()) -> str:
    """Whose share of the concurrency slots a run takes: the client's address. Behind a proxy
    the operator trusts (`--trusted-proxy`: the connection comes from it), the nearest address
    in X-Forwarded-For that is not itself a trusted proxy; behind a Space's proxy, the hop that
    proxy added (the last entry). Anyone else's X-Forwarded-For is ignored: a client cannot
    make itself a new visitor by writing a header."""
    headers = getattr(request, "headers", None) or {}
    client = getattr(request, "client", None)
    peer = str(getattr(client, "host", "") or "")
    forwarded = [a.strip() for a in headers.get("x-forwarded-for", "").split(",") if a.strip()]
    if forwarded and os.environ.get("SPACE_ID"):
        return forwarded[-1]
    if forwarded and peer in trusted:
        outside = [a for a in forwarded if a not in trusted]
        return outside[-1] if outside else forwarded[0]
    return peer


REPLAY_ONLY = ("Run needs a vLLM server, and this page has none (replay mode): replay a "
               "recording instead -- one click each, below Run")


@dataclass
class UIContext:
    settings: Settings
    library: PresetLibrary
    banner: str = ""  # e.g. "serving the random-weight demo model"
    server_note: str = ""  # the managed server's command line, for reports
    replay_only: bool = False  # no server configured (e.g. a CPU-only Space): replay mode
    # reachable by others (--share, a Space, --auth, non-loopback): operator powers stay theirs
    shared: bool = False
    examples: list[str] = field(default_factory=list)
    concurrency_limit: int = 16
    slots: Slots = field(default_factory=Slots)  # runs in flight: Run, replay, ladder, /compare
    measure: MeasureLoop = field(default_factory=MeasureLoop)
    servers: dict[int, ManagedServer] = field(default_factory=dict)  # Server tab, by port
    warm: WarmState = field(default_factory=WarmState)  # the warm-up of a server we started
    feeds: Feeds = field(default_factory=Feeds)  # live text of the runs in flight
    plans: Plans = field(default_factory=Plans)  # what each page's Run would run now
    start_run: Starter | None = None  # the Playground tab's Run (for the run route)
    port: Remembering = field(default_factory=Remembering)  # server facts, briefly cached
    logs: set[RunLog] = field(default_factory=set)  # the runs in flight, for a clean shutdown
    samplers: SharedSamplers = field(init=False)  # one /metrics sampler per server, shared
    bench_port: SharedLive = field(init=False)  # the Benchmark and Claims tabs': samplers above
    # presets saved per visitor an hour (a shared page only: the disk is the operator's)
    preset_saves: Quota = field(default_factory=lambda: Quota(PRESETS_PER_WINDOW))
    readers: Readers = field(default_factory=Readers)  # who reads each API call's results
    _pools: dict[str, ClientPool] = field(default_factory=dict)
    _floors: dict[str, float | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        every = self.settings.series_interval_s
        self.samplers = SharedSamplers(lambda url: interval_for(url, every))
        self.bench_port = SharedLive(self.samplers)

    @classmethod
    def create(cls, settings: Settings, banner: str = "", server_note: str = "",
               replay_only: bool = False, shared: bool = False) -> UIContext:
        library = PresetLibrary(settings.presets_dir, settings.user_presets_dir)
        examples = load_examples(settings.presets_dir)
        return cls(settings, library, banner=banner, server_note=server_note,
                   replay_only=replay_only, examples=examples, shared=shared,
                   feeds=Feeds(instrument=settings.ui_instrument,
                               address=lambda r: visitor_of(r, settings.proxies()),
                               gone_after_s=settings.gone_after_s))

    def routes(self) -> list[Any]:
        """The app's own routes: each page's live channel, the stage's Run and Stop (and, in
        an instrumented app only, the plain-page control of benchmarks/ui_fidelity)."""
        from playground.ui import run_route

        async def start(plan: run_route.Plan, token: str, who: str) -> str | None:
            if self.start_run is None:
                return "this page has no Playground tab"
            return await self.start_run(plan, token, who)

        out = [self.feeds.route(), *run_route.routes(self.plans, start, self.visitor,
                                                     REPLAY_ONLY if self.replay_only else "")]
        if self.settings.ui_instrument:  # benchmarks/ui_fidelity's plain-page control
            from playground.ui import plain_page

            out += plain_page.routes(self)
        return out

    def visitor(self, request: Any) -> str:
        """`visitor_of` with the operator's trusted proxies."""
        return visitor_of(request, self.settings.proxies())

    def transformers_url(self) -> str | None:
        """The base URL of a running Transformers server started from the Server tab."""
        return next((s.config.base_url for s in self.servers.values()
                     if s.running and s.config.engine == "transformers"), None)

    def listed(self, owner: str) -> str | None:
        """The owner whose runs a visitor's lists show (None: all, `--all-runs`)."""
        return None if self.settings.list_all_runs else owner

    def servers_refused(self) -> str:
        """Why a visitor may not start, stop or restart servers here ("" when they may): on a
        shared page that is the operator's, unless the operator allowed it."""
        if not self.shared or self.settings.allow_visitor_servers:
            return ""
        return ("starting, stopping and restarting servers (and benchmarks or claims that "
                "start them, and model directories) is the operator's on a shared page: each "
                "is a process on the operator's machine. The operator can allow it with "
                "`playground ui --allow-visitor-servers`")

    def known_urls(self) -> set[str]:
        """The base URLs the operator configured: the app's own, and the servers it runs."""
        urls = {self.settings.base_url, *(s.config.base_url for s in self.servers.values())}
        return {u.rstrip("/") for u in urls if u}

    def connection(self, url: str, typed_key: str | None) -> tuple[str, str]:
        """(base URL, API key) for one visitor's request: the URL must be http(s) (nothing is
        sent otherwise), and the operator's configured key goes to the operator's URL only --
        a URL a visitor typed gets the key that visitor typed, or none. On a shared page a
        visitor reaches the operator's servers only (unless --allow-visitor-urls): the app
        never becomes a way to send requests from the operator's machine to anywhere."""
        try:
            url = check_base_url(str(url or ""))
        except ValueError as e:
            raise ValidationFailed("base URL", str(e)) from None
        if (self.shared and not self.settings.allow_visitor_urls
                and url.rstrip("/") not in self.known_urls()):
            raise ValidationFailed(
                "base URL", "on a shared page only the operator's server can be used "
                f"({', '.join(sorted(self.known_urls())) or 'none configured'}): put that "
                "URL back. The operator can allow other URLs with `playground ui "
                "--allow-visitor-urls`")
        if self.hides_text(url) and not self.settings.allow_private_urls:
            why = outbound.refusal(url)
            if why:
                raise ValidationFailed(
                    "base URL", f"{why}: a visitor's URL must be a public address. The "
                    "operator can allow private ones with `playground ui --allow-private-urls`")
        return url, typed_key or self.settings.api_key_for(url)

    async def server_info(self, url: str, key: str) -> ServerInfo:
        """`aserver_info`, its error less the server's words where `hides_text` says so."""
        try:
            return await aserver_info(url, key)
        except PlaygroundError as e:
            raise (opaque(e) if self.hides_text(url) else e) from None

    def count_save(self, request: Any) -> None:
        """One more preset saved by this visitor (a shared page caps them: ValidationFailed)."""
        if self.shared:
            self.preset_saves.take(self.visitor(request), "new presets", "preset name")

    def hides_text(self, url: str) -> bool:
        """Whether what the server at `url` says in its errors stays off the page: a URL a
        visitor of a shared page typed (errors.opaque). The operator's servers are shown."""
        return self.shared and url.rstrip("/") not in self.known_urls()

    def pool(self, api_key: str) -> ClientPool:
        """One pool (one AsyncOpenAI per base URL) per API key; keyed by a hash, not the key.

        Pools are used only on the measuring loop (`self.measure`).
        """
        key = hashlib.sha256(api_key.encode()).hexdigest()
        if key not in self._pools:
            s = self.settings
            self._pools[key] = ClientPool(api_key, hides_text=self.hides_text,
                                          connect_timeout_s=s.connect_timeout_s,
                                          read_timeout_s=s.read_timeout_s,
                                          timeout_s=s.timeout_s)
        return self._pools[key]

    def floor_ms(self, base_url: str, api_key: str) -> float | None:
        """The physical floor (ms per decode step) of the server's model, cached per server
        (scheme, host, port and path: a URL spelled with a user name is the same server) and
        for at most MAX_FLOORS servers."""
        key = server_key(base_url)
        if key not in self._floors:
            while len(self._floors) >= MAX_FLOORS:
                del self._floors[next(iter(self._floors))]  # the oldest
            self._floors[key] = server_floor(self.settings, base_url, api_key)
        return self._floors[key]

    def start_warmup(self) -> None:
        """Warm the configured server in the background (measuring loop); the UI shows
        "warming up" until it is done, and labels a run made meanwhile as cold."""
        key = self.settings.api_key_value()
        self.warm.state = "warming"
        self.measure.submit(warm_server(self.pool(key), self.settings.base_url, key,
                                        self.settings.model, self.library, self.warm))

    def run_log(self, recs: list[Recording], owner: str = "") -> RunLog:
        """The file of a run about to start (each recording stored once it is final), and the
        server's series over the run: the operator's server its requests go to, sampled by
        the one sampler the app keeps per server, however many visitors run on it."""
        urls = [r.base_url.rstrip("/") for r in recs]
        url = max(set(urls), key=urls.count) if urls else ""
        lease = (self.samplers.hold(url) if url in self.known_urls()
                 and self.settings.series_interval_s != 0 else None)
        log = RunLog(RunStore(self.settings.runs_dir), recs, owner, lease=lease)
        self.logs.add(log)
        return log

    def close_log(self, log: RunLog) -> None:
        log.store_finished()
        log.store_series()
        self.logs.discard(log)

    def shutdown(self, grace_s: float = 5.0) -> None:
        """SIGTERM / Ctrl-C: stop the runs in flight (partial output kept, marked cancelled)
        and store them, then stop the servers this app started."""
        logs = list(self.logs)
        for log in logs:
            log.stop()
        deadline = time.monotonic() + grace_s
        while any(not r.finished for log in logs for r in log.recs) and \
                time.monotonic() < deadline:
            time.sleep(0.05)
        for log in logs:
            log.store_finished()
            log.store_series()
        self.samplers.stop()
        self.stop_servers()

    def stop_servers(self) -> None:
        for server in self.servers.values():
            server.stop()
