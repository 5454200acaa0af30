"""The load path's Ray readers against the real CPU server (lab/ray_readers, docs/load.md): an
embedded cluster, and a real two-node cluster on this machine -- `ray start --head` and a second
`ray start --address` (two raylets, two node ids), each started by the test in a process group of
its own. Runs are driven from a process of their own (tests/ray_driver), so this test process
never joins a cluster. The key reaches the readers through each node's environment only. No
durations are asserted."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from playground.lab.sweep import read_rows
from playground.server.http import server_info
from playground.server.managed import free_port
from tests.conftest import Keyed
from tests.faultproxy import FaultProxy, serving
from tests.procs import alive, cmdline, descendants, group, wait_for

KEY = "PLAYGROUND_API_KEY"


@dataclass
class Cluster:
    address: str
    temp: Path  # Ray's session files: every log of both nodes
    groups: dict[str, int]  # "head" / "second": the process group of its `ray start`


def _env(key: str | None, cluster: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PLAYGROUND_", "RAY_"))}
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    if cluster is not None:  # `ray start` clusters use Ray's token auth: the test's own token
        env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(cluster / "auth_token"))
    if key:
        env[KEY] = key
    return env


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    ray = Path(sys.executable).with_name("ray")
    with log.open("ab") as f:
        return subprocess.Popen([str(ray), "start", "--block", "--num-cpus=1",
                                 "--disable-usage-stats", *args], env=env, stdout=f,
                                stderr=subprocess.STDOUT, start_new_session=True)


@pytest.fixture(scope="module")
def cluster(keyed_vllm: Keyed) -> Iterator[Cluster]:
    temp = Path(tempfile.mkdtemp(prefix="qllray", dir="/tmp"))  # short: Ray's socket paths
    port = free_port()
    (temp / "auth_token").write_text(secrets.token_hex(32))  # not ~/.ray: nothing outside
    env = _env(keyed_vllm.key, temp)  # each node's own environment holds the server's key
    procs = [_start(["--head", f"--port={port}", "--include-dashboard=false",
                     f"--temp-dir={temp}"], env,
                    temp / "head.log")]
    try:
        def up() -> bool:
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", port)) == 0

        assert wait_for(up, 120), (temp / "head.log").read_text()[-2000:]
        procs.append(_start([f"--address=127.0.0.1:{port}",
                             '--resources={"second": 1}'], env, temp / "second.log"))
        yield Cluster(f"127.0.0.1:{port}", temp,
                      {"head": procs[0].pid, "second": procs[1].pid})
    finally:
        for p in procs:  # each node whole: its process group and its workers' sessions
            pids = sorted(set(group(p.pid)) | set(descendants(p.pid)))
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            p.wait(timeout=30)
            assert wait_for(lambda pids=pids: not alive(pids), 30)
        shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture(scope="module")
def model(keyed_vllm: Keyed) -> str:
    return server_info(keyed_vllm.base_url, keyed_vllm.key).models[0].id


def drive(job: dict, key: str | None, cluster: Cluster | None = None,
          **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "tests.ray_driver", json.dumps(job)],
                            env={**_env(key, cluster.temp if cluster else None), **env},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parents[2])


def finish(proc: subprocess.Popen[str]) -> dict:
    out, err = proc.communicate(timeout=600)
    lines = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
    assert lines and ("rows" in lines[-1] or "error" in lines[-1]), err[-3000:]
    return lines[-1]


@pytest.fixture(scope="module")
def proxy(vllm_server: str) -> Iterator[FaultProxy]:
    yield from serving(vllm_server)


def test_an_embedded_cluster_accounts_for_every_request_on_one_clock(
        proxy: FaultProxy, vllm_server: str) -> None:
    model = server_info(vllm_server, None).models[0].id
    urls = [proxy.url("500" if i in (3, 9) else "ok-ray") for i in range(12)]
    temp = tempfile.mkdtemp(prefix="qllray", dir="/tmp")  # the embedded cluster's files
    try:
        got = finish(drive({"urls": urls, "model": model, "tokens": 8, "concurrency": 4,
                            "workers": 2}, None, RAY_TMPDIR=temp))
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    res, rows = got["result"], got["rows"]
    assert res["workers"] == 2 and res["concurrency"] == 4
    assert sum(res["nodes"].values()) == 12  # every request dealt, to the one embedded node
    ok = [r for i, r in enumerate(rows) if i not in (3, 9)]
    assert all(r["status"] == "done" and r["error"] is None and r["client"] == "raw"
               and r["tokens"] == 8 for r in ok)
    for i in (3, 9):  # a failed request is data, with the server's reason
        assert rows[i]["status"] == "error" and "HTTP 500" in rows[i]["error"]
    # one machine, one CLOCK_MONOTONIC: the readers' stamps sit inside the driver's window
    assert all(got["t0"] < r["t_send"] < r["t_last"] < got["t1"] for r in ok)
    seen = [s for s in proxy.seen if s["path"].endswith("chat/completions")]
    assert sum(s["fault"] == "ok-ray" for s in seen) == 10


def test_a_sweep_level_split_over_two_nodes_with_rows_tagged_and_the_key_in_no_log(
        cluster: Cluster, keyed_vllm: Keyed, tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    run = subprocess.run(
        [sys.executable, "-m", "playground.cli", "sweep", "--base-url", keyed_vllm.base_url,
         "--concurrency", "4", "--engine", "playground", "--workers", "2",
         "--ray-address", cluster.address, "--output-len", "6", "--num-prompts", "8",
         "--out", str(out)],
        capture_output=True, text=True, timeout=600, env=_env(keyed_vllm.key, cluster.temp))
    assert run.returncode == 0, run.stderr[-3000:]
    (level,) = json.loads((out / "sweep.json").read_text("utf-8"))["levels"]
    assert level["workers"] == 2 and level["failed"] == 0 and level["n"] == 8
    assert sorted(level["nodes"].values()) == [4, 4]  # one reader on each node
    assert level["barrier_ms"] >= 0
    rows = read_rows(out / "sweep-requests.csv")
    assert len(rows) == 8 and all(r["ok"] and r["output_tokens"] == 6 for r in rows)
    by_node: dict[str, int] = {}
    for r in rows:
        by_node[r["node"]] = by_node.get(r["node"], 0) + 1
    assert by_node == level["nodes"]  # every row tagged with the node whose reader read it
    # vLLM checked the key (--api-key); it travelled in each node's environment, in no log
    key = keyed_vllm.key.encode()
    for f in [*cluster.temp.rglob("*"), *out.rglob("*")]:
        if f.is_file() and not f.is_symlink():
            assert key not in f.read_bytes(), f"the key is in {f}"


def test_a_node_without_the_key_refuses_before_anything_is_sent(
        cluster: Cluster, keyed_vllm: Keyed, model: str) -> None:
    # the driver holds another key than the nodes: each reader refuses, naming the fix
    got = finish(drive({"address": cluster.address, "nodes": 2, "urls": [keyed_vllm.base_url],
                        "model": model, "tokens": 4, "concurrency": 1, "workers": 1},
                       "sk-another-key", cluster))
    assert KEY in got["error"] and "ray start" in got["error"]
    assert "sk-another-key" not in got["error"] and keyed_vllm.key not in got["error"]


def test_a_node_killed_mid_level_loses_only_its_in_flight_requests(
        cluster: Cluster, keyed_vllm: Keyed, model: str) -> None:
    held = FaultProxy(keyed_vllm.base_url).start()
    try:
        proc = drive({"address": cluster.address, "nodes": 2, "urls": [held.url("hold")] * 6,
                      "model": model, "tokens": 4, "concurrency": 6, "workers": 2},
                     keyed_vllm.key, cluster)
        assert proc.stdout is not None
        nodes = json.loads(proc.stdout.readline())["nodes"]
        (second,) = [n for n, res in nodes.items() if "second" in res]

        def all_held() -> bool:  # every request held at the proxy: all six in flight
            return sum(s["fault"] == "hold" and s["path"].endswith("chat/completions")
                       for s in held.seen) == 6

        assert wait_for(all_held, 120)
        # the whole node: its `ray start` group (raylet, agents) and its workers, the readers
        # among them (children of its raylet, each in a session of its own)
        node = cluster.groups["second"]
        victims = set(group(node)) | set(descendants(node))
        for pid in victims:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        assert wait_for(lambda: not alive(sorted(victims)), 30)
        held.release()
        got = finish(proc)
    finally:
        held.stop()
    rows = got["rows"]
    lost = [r for r in rows if r["node"] == second]
    kept = [r for r in rows if r["node"] != second]
    assert len(lost) == 3 and len(kept) == 3  # every request accounted for, tagged
    assert all(r["status"] == "error" and "was lost" in r["error"]
               and "before this request finished" in r["error"] for r in lost), lost
    assert all(r["status"] == "done" and r["tokens"] == 4 for r in kept)


def test_a_killed_driver_leaves_no_ray_process_behind(vllm_server: str) -> None:
    # the embedded cluster (GCS, raylet, agents) and its readers share the driver's fate,
    # SIGKILL included: nothing of it keeps loading the server
    model = server_info(vllm_server, None).models[0].id
    temp = tempfile.mkdtemp(prefix="qllray", dir="/tmp")
    proc = drive({"urls": [vllm_server] * 4, "model": model, "tokens": 2000, "concurrency": 4,
                  "workers": 2}, None, RAY_TMPDIR=temp)
    try:
        def readers() -> list[int]:
            return [p for p in descendants(proc.pid) if "ray::Reader" in cmdline(p)]

        assert wait_for(lambda: len(readers()) == 2, 120)
        family = descendants(proc.pid)
        assert any("raylet" in cmdline(p) for p in family)
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)  # read to the end: the family holds the driver's pipes
        assert wait_for(lambda: not alive(family), 60), [cmdline(p) for p in alive(family)]
    finally:
        if proc.poll() is None:
            proc.kill()
        shutil.rmtree(temp, ignore_errors=True)
