"""Each visitor's lists: run files carry the visitor's tag; lists show one visitor's runs, or
everyone's for the operator (`--all-runs`, and the CLI's `runs list`)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from playground.errors import ValidationFailed
from playground.lab.store import RunStore
from playground.settings import REPO_ROOT, Settings
from playground.ui.context import UIContext, owner_of, visitor_of
from playground.ui.replay_panel import recording_choices


def test_lists_show_a_visitors_own_runs_or_all_for_the_operator(tmp_path: Path) -> None:
    a, b = (owner_of(SimpleNamespace(session_hash=h)) for h in ("session-a", "session-b"))
    assert a != b and len(a) == 12 and "session" not in a
    store = RunStore(tmp_path)
    for owner in (a, a, b):
        store.new_run("playground", owner).path.write_text("{}\n")
    shipped = len(list((REPO_ROOT / "presets" / "recordings").glob("*.json")))
    ctx = UIContext.create(Settings(runs_dir=tmp_path))
    assert len(recording_choices(ctx, a)) == shipped + 2
    assert len(recording_choices(ctx, b)) == shipped + 1
    assert len(recording_choices(ctx, "")) == shipped  # no session: nothing of anyone's
    everyone = UIContext.create(Settings(runs_dir=tmp_path, list_all_runs=True))
    assert len(recording_choices(everyone, "")) == shipped + 3
    assert len(store.list_runs("playground")) == 3  # the CLI: all of them
    assert store.list_runs("playground", "../x") == []  # not a tag: nothing


def test_a_visitor_is_their_address() -> None:
    req = SimpleNamespace(client=SimpleNamespace(host="10.0.0.7"),
                          headers={"x-forwarded-for": "1.2.3.4"})
    assert visitor_of(req) == "10.0.0.7"  # a header the client wrote is not trusted


def test_behind_a_trusted_proxy_the_visitor_is_the_forwarded_address() -> None:
    def req(peer: str, forwarded: str) -> SimpleNamespace:
        return SimpleNamespace(client=SimpleNamespace(host=peer),
                               headers={"x-forwarded-for": forwarded})

    proxy = Settings(trusted_proxies="127.0.0.1, 10.0.0.2").proxies()
    assert proxy == {"127.0.0.1", "10.0.0.2"}
    assert visitor_of(req("127.0.0.1", "198.51.100.7"), proxy) == "198.51.100.7"
    # a chain of trusted proxies: the nearest address that is not one of them; what the
    # visitor wrote in front of it (a spoofed first entry) is not believed
    assert visitor_of(req("127.0.0.1", "6.6.6.6, 198.51.100.7, 10.0.0.2"), proxy) == \
        "198.51.100.7"
    # from an address that is not a trusted proxy the header is the client's own words
    assert visitor_of(req("203.0.113.5", "198.51.100.7"), proxy) == "203.0.113.5"
    assert visitor_of(req("127.0.0.1", ""), proxy) == "127.0.0.1"


def test_a_trusted_proxy_must_be_an_address() -> None:
    with pytest.raises(ValidationFailed, match=r"trusted_proxies \(--trusted-proxy.*not an IP"):
        Settings.from_env({"PLAYGROUND_TRUSTED_PROXIES": "127.0.0.1,proxy.example"})


def test_on_a_shared_page_server_powers_and_other_urls_are_the_operators() -> None:
    """The attack of issue 4/7: any visitor started vLLM processes with any model name, and
    the app sent requests wherever a visitor typed. Locally nothing changes; shared, both are
    the operator's unless the operator opts in."""
    own = "http://127.0.0.1:8000/v1"
    local = UIContext.create(Settings(base_url=own))
    assert local.servers_refused() == ""
    assert local.connection("http://10.0.0.1:6379/v1", None)[0] == "http://10.0.0.1:6379/v1"
    shared = UIContext.create(Settings(base_url=own), shared=True)
    assert "--allow-visitor-servers" in shared.servers_refused()
    assert shared.connection(own + "/", None)[0].rstrip("/") == own  # the operator's: fine
    for url in ("http://169.254.169.254/v1", "http://10.0.0.1:6379/v1",
                "http://[::ffff:169.254.169.254]/v1", "http://u@127.0.0.1:8000/v1"):
        with pytest.raises(ValidationFailed, match="only the operator's server") as e:
            shared.connection(url, None)
        assert "--allow-visitor-urls" in str(e.value)
    opened = UIContext.create(Settings(base_url=own, allow_visitor_servers=True,
                                       allow_visitor_urls=True), shared=True)
    assert opened.servers_refused() == ""
    public = "http://93.184.216.34:8000/v1"
    assert opened.connection(public, None)[0] == public
    private = UIContext.create(Settings(base_url=own, allow_visitor_urls=True,
                                        allow_private_urls=True), shared=True)
    assert private.connection("http://10.0.0.1:6379/v1", None)[0] == "http://10.0.0.1:6379/v1"


@pytest.mark.parametrize(("url", "why"), [
    ("http://169.254.169.254/latest/meta-data", "link-local"),
    ("http://[::ffff:169.254.169.254]/v1", "link-local"),
    ("http://[::ffff:a9fe:a9fe]/v1", "link-local"),
    ("http://metadata.google.internal/v1", "metadata"),
    ("http://10.0.0.1:6379/v1", "private network"),
    ("http://192.168.1.1/v1", "private network"),
    ("http://127.0.0.1:8001/v1", "loopback"),
    ("http://[::1]:8001/v1", "loopback"),
    ("http://localhost:8001/v1", "loopback"),
    ("http://0.0.0.0:8001/v1", "reserved"),
    ("http://no-such-host.invalid/v1", "does not resolve"),
])
def test_a_visitors_url_may_not_reach_what_only_this_machine_can(url: str, why: str) -> None:
    """Issue 4/7, item 7: with --allow-visitor-urls any http(s) host passed -- the metadata
    service, [::ffff:169.254.169.254], 10.0.0.1:6379: a scanner of the operator's network."""
    opened = UIContext.create(Settings(base_url="http://127.0.0.1:8000/v1",
                                       allow_visitor_urls=True), shared=True)
    with pytest.raises(ValidationFailed, match=why) as e:
        opened.connection(url, None)
    assert str(e.value).startswith("base URL:") and "--allow-private-urls" in str(e.value)
    assert opened.connection("http://127.0.0.1:8000/v1", None)  # the operator's own: fine


async def test_what_a_visitors_server_says_stays_off_a_shared_page() -> None:
    """Error bodies were shown verbatim ("HTTP 403: internal-admin: db_password=..."): for a
    URL a visitor typed the error names its class only; the operator's server is shown, cut."""
    from aiohttp import web

    from tests.unit.test_timing import run_one, serving

    async def secret(request: web.Request) -> web.Response:
        return web.json_response({"error": {"message": "internal-admin: db_password=hunter2 "
                                            + "x" * 5000}}, status=403)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", secret)
    async with serving(app) as root:
        for typed in (True, False):
            own = "http://127.0.0.1:9/v1" if typed else f"{root}/v1"
            ctx = UIContext.create(Settings(base_url=own, allow_visitor_urls=True,
                                            allow_private_urls=True), shared=True)
            try:
                rec = await run_one(root, "openai", pool=ctx.pool("EMPTY"))
                with pytest.raises(Exception) as e:
                    await ctx.server_info(f"{root}/v1", "EMPTY")
            finally:
                ctx.measure.stop()
            for text in (str(rec.error), str(e.value)):
                assert "HTTP 403" in text
                assert ("hunter2" not in text) == typed and len(text) < 1000


def test_on_a_shared_page_replays_are_bounded() -> None:
    """Four addresses x 4 replays of a 60 s recording held all 16 slots; 0.25x stretched a
    600 s recording to 40 min."""
    from playground.ui.replay_panel import SHARED_REPLAY_S, replay_refused

    assert replay_refused(False, 0.25, 600.0) == ""  # on your own machine: as you like
    assert "1x or faster" in replay_refused(True, 0.25, 10.0)
    assert "raise the speed" in replay_refused(True, 1.0, SHARED_REPLAY_S + 1)
    assert replay_refused(True, 4.0, SHARED_REPLAY_S + 1) == ""


def test_the_floor_probe_runs_once_per_server_and_memory_is_measured_once(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """24 Runs whose URLs differed only in their user name made 24 floor probes of 512 MiB
    each (392 -> 3,098 MiB)."""
    from playground.server import floor
    from playground.ui import context

    probes: list[str] = []
    monkeypatch.setattr(context, "server_floor",
                        lambda _s, url, _k: probes.append(url) or 1.5)
    ctx = UIContext.create(Settings())
    for i in range(24):
        assert ctx.floor_ms(f"http://u{i}@127.0.0.1:9101/v1", "") == 1.5
    assert ctx.floor_ms("HTTP://127.0.0.1:9101/v1/", "") == 1.5
    assert len(probes) == 1
    for i in range(context.MAX_FLOORS + 10):  # many servers: the memo stays bounded
        ctx.floor_ms(f"http://127.0.0.1:{10000 + i}/v1", "")
    assert len(ctx._floors) == context.MAX_FLOORS
    first = floor.measure_cpu_bandwidth(1, 1)  # the machine's copy, measured once
    hits = floor.measure_cpu_bandwidth.cache_info().hits
    assert floor.measure_cpu_bandwidth(1, 1) == first
    assert floor.measure_cpu_bandwidth.cache_info().hits == hits + 1


def test_a_visitors_quota_counts_over_a_sliding_window(tmp_path: Path) -> None:
    """Uploads and saved presets had no count cap (40 x 4 MiB in 0.9 s; 200 presets in 30 s)."""
    from playground.ui.quotas import Quota

    now = [0.0]
    q = Quota(2, window_s=60.0, clock=lambda: now[0])
    q.take("a", "new presets", "preset name")
    q.take("a", "new presets", "preset name")
    with pytest.raises(ValidationFailed, match=r"preset name: at most 2 new presets .* 1 min"):
        q.take("a", "new presets", "preset name")
    q.take("b", "new presets", "preset name")  # another visitor: their own count
    now[0] = 60.0
    q.take("a", "new presets", "preset name")  # the first use left the window


def test_the_saved_presets_folder_is_bounded(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from playground.specs import presets
    from playground.specs.presets import PresetLibrary, Variant

    monkeypatch.setattr(presets, "MAX_USER_PRESETS", 2)
    lib = PresetLibrary(REPO_ROOT / "presets", tmp_path / "user")
    for name in ("mine-1", "mine-2"):
        lib.save_user_variant(Variant(name=name))
    with pytest.raises(ValidationFailed, match="the most kept"):
        lib.save_user_variant(Variant(name="mine-3"))
    lib.save_user_variant(Variant(name="mine-2", temperature=0.3), overwrite=True)  # replacing


async def test_the_operators_key_goes_to_the_operators_server_only() -> None:
    """The operator's key went to servers that a benchmark's server presets started (and to a
    variant's own base_url): the lab's pools sent it to every URL they were asked for."""
    from aiohttp import web
    from pydantic import SecretStr

    from playground.core.port import Live
    from tests.unit.test_timing import run_one, serving

    seen: dict[str, list[str]] = {}

    def recorder(name: str) -> web.Application:
        async def handle(request: web.Request) -> web.Response:
            seen.setdefault(name, []).append(request.headers.get("Authorization", ""))
            return web.json_response({"error": {"message": "no"}}, status=403)

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        return app

    async with serving(recorder("operator")) as op, serving(recorder("started")) as other:
        settings = Settings(base_url=f"{op}/v1", api_key=SecretStr("sk-operator-1234"))
        for client in ("openai", "raw"):
            pool = Live().pool(settings, auto_client="raw")
            await run_one(op, client, pool=pool)
            await run_one(other, client, pool=Live().pool(settings))
    assert seen["operator"] == ["Bearer sk-operator-1234"] * 2
    assert seen["started"] == ["Bearer EMPTY"] * 2
