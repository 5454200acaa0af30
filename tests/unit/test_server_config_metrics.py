from __future__ import annotations

import pytest

from playground.server import prom as sm
from playground.server.managed import ServerConfig
from playground.server.presets import load_server_presets
from playground.settings import REPO_ROOT

BEFORE = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="Qwen/Qwen3-0.6B"} 0.0
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{engine="0",le="0.3",model_name="Qwen/Qwen3-0.6B"} 1.0
vllm:e2e_request_latency_seconds_count{engine="0",model_name="Qwen/Qwen3-0.6B"} 4.0
vllm:e2e_request_latency_seconds_sum{engine="0",model_name="Qwen/Qwen3-0.6B"} 2.0
vllm:request_queue_time_seconds_count{engine="0",model_name="Qwen/Qwen3-0.6B"} 4.0
vllm:request_queue_time_seconds_sum{engine="0",model_name="Qwen/Qwen3-0.6B"} 0.004
vllm:request_prefill_time_seconds_count{engine="0",model_name="Qwen/Qwen3-0.6B"} 4.0
vllm:request_prefill_time_seconds_sum{engine="0",model_name="Qwen/Qwen3-0.6B"} 0.2
vllm:request_decode_time_seconds_count{engine="0",model_name="Qwen/Qwen3-0.6B"} 4.0
vllm:request_decode_time_seconds_sum{engine="0",model_name="Qwen/Qwen3-0.6B"} 1.79
vllm:time_to_first_token_seconds_count{engine="0",model_name="Qwen/Qwen3-0.6B"} 4.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="Qwen/Qwen3-0.6B"} 0.21
vllm:generation_tokens_total{engine="0",model_name="Qwen/Qwen3-0.6B"} 256.0
vllm:request_success_total{engine="0",finished_reason="length",model_name="Qwen/Qwen3-0.6B"} 4.0
"""


def after_text() -> str:
    # two more requests: e2e 0.9 s and 1.1 s; queue 1 ms each; prefill 50 ms each; decode rest
    repl = {"e2e_request_latency_seconds_count": "6.0", "e2e_request_latency_seconds_sum": "4.0",
            "request_queue_time_seconds_count": "6.0", "request_queue_time_seconds_sum": "0.006",
            "request_prefill_time_seconds_count": "6.0",
            "request_prefill_time_seconds_sum": "0.3", "request_decode_time_seconds_count": "6.0",
            "request_decode_time_seconds_sum": "3.692", "time_to_first_token_seconds_count": "6.0",
            "time_to_first_token_seconds_sum": "0.313", "num_requests_running": "1.0"}
    lines = []
    for line in BEFORE.splitlines():
        for key, value in repl.items():
            if line.startswith(f"vllm:{key}{{"):
                line = line.rsplit(" ", 1)[0] + " " + value
        lines.append(line)
    return "\n".join(lines)


def test_parse_labels_and_totals() -> None:
    snap = sm.parse(BEFORE)
    assert sm.total(snap, "vllm:e2e_request_latency_seconds_count") == 4.0
    assert sm.total(snap, "vllm:request_success_total", finished_reason="length") == 4.0
    assert sm.total(snap, "vllm:request_success_total", finished_reason="stop") == 0.0
    assert ("vllm:num_requests_running", (("engine", "0"), ("model_name", "Qwen/Qwen3-0.6B"))
            ) in snap


def test_histogram_deltas_give_means_over_a_run() -> None:
    before, after = sm.parse(BEFORE), sm.parse(after_text())
    d = sm.histogram_delta(before, after, "vllm:e2e_request_latency_seconds")
    assert d.count == 2.0 and d.mean_ms == pytest.approx(1000.0)
    means = {k: sm.histogram_delta(before, after, name).mean_ms
             for k, name in sm.HISTOGRAMS.items()}
    assert means["queue_ms"] == pytest.approx(1.0)
    assert means["prefill_ms"] == pytest.approx(50.0)
    assert means["decode_ms"] == pytest.approx(951.0)
    assert means["ttft_ms"] == pytest.approx(51.5)
    empty = sm.histogram_delta(before, before, "vllm:e2e_request_latency_seconds")
    assert empty.count == 0 and empty.mean_ms is None


@pytest.mark.parametrize(("kw", "expected"), [
    ({"enforce_eager": True}, ["--enforce-eager"]),
    ({"optimization_level": 0}, ["-O0"]),
    ({"enable_prefix_caching": False}, ["--no-enable-prefix-caching"]),
    ({"enable_chunked_prefill": True}, ["--enable-chunked-prefill"]),
    ({"max_num_seqs": 8}, ["--max-num-seqs", "8"]),
    ({"max_model_len": 2048}, ["--max-model-len", "2048"]),
    ({"gpu_memory_utilization": 0.5}, ["--gpu-memory-utilization", "0.5"]),
    ({"structured_outputs_backend": "guidance"},
     ["--structured-outputs-config", '{"backend": "guidance"}']),
    ({"disable_any_whitespace": True},
     ["--structured-outputs-config", '{"backend": "xgrammar", "disable_any_whitespace": true}']),
    ({"reasoning_parser": "qwen3"}, ["--reasoning-parser", "qwen3"]),
    ({"per_request_metrics": True}, ["--enable-per-request-metrics"]),
    ({"served_model_name": "x"}, ["--served-model-name", "x"]),
    ({"load_format": "dummy"}, ["--load-format", "dummy"]),
])
def test_server_flags(kw: dict, expected: list[str]) -> None:
    args = ServerConfig(model="m", **kw).args()
    i = args.index(expected[0])
    assert args[i:i + len(expected)] == expected


def test_cpu_kv_cache_and_api_key_env_never_on_the_command_line() -> None:
    cfg = ServerConfig(model="m", cpu_kv_cache_gib=2, api_key_env="MY_KEY")
    env = cfg.env({"MY_KEY": "s3cret"})
    assert env["VLLM_CPU_KVCACHE_SPACE"] == "2" and env["VLLM_API_KEY"] == "s3cret"
    assert "s3cret" not in " ".join(cfg.args())


def test_server_presets_load_and_keep_cpu_memory() -> None:
    presets, errors = load_server_presets(REPO_ROOT / "presets")
    assert errors == []
    assert {"seed-000", "seed-001", "recommended", "eager"} <= set(presets)
    cpu = ServerConfig(model="m", gpu_memory_utilization=0.3, cpu_kv_cache_gib=1)
    applied = presets["seed-000"].apply(cpu)
    assert applied.enforce_eager and applied.max_num_seqs == 256
    assert applied.gpu_memory_utilization == 0.3  # RAM fraction on CPU: not the article's 0.85
    gpu = presets["seed-000"].apply(ServerConfig(model="m"))
    assert gpu.gpu_memory_utilization == 0.85


def test_managed_server_uses_the_configured_python() -> None:
    import sys

    from playground.server.managed import ManagedServer
    from playground.settings import Settings

    s = Settings.from_env({"PLAYGROUND_VLLM_PYTHON": "/opt/gpu-venv/bin/python"})
    server = ManagedServer(ServerConfig(model="m"), REPO_ROOT / "x.log",
                           python=s.server_python())
    assert server.command()[:3] == ["/opt/gpu-venv/bin/python", "-m",
                                    "vllm.entrypoints.openai.api_server"]
    assert Settings.from_env({}).server_python() == sys.executable


def test_transformers_engine_is_its_own_command_in_a_folder_where_the_name_is_the_model(
        tmp_path) -> None:
    from playground.server.managed import ManagedServer

    model = tmp_path / "some-model"
    model.mkdir()
    presets, _ = load_server_presets(REPO_ROOT / "presets")
    c = presets["transformers"].apply(ServerConfig(model=str(model), port=8123,
                                                   reasoning_parser="qwen3",
                                                   per_request_metrics=True))
    assert c.engine == "transformers"
    s = ManagedServer(c, tmp_path / "logs" / "t.log", python="py")
    assert s.command() == ["py", "-m", "transformers.cli.transformers", "serve",
                           "Qwen/Qwen3-0.6B", "--host", "127.0.0.1", "--port", "8123",
                           "--log-level", "info"]  # none of vLLM's flags
    folder = s.workdir()
    assert folder is not None
    assert (folder / "Qwen" / "Qwen3-0.6B").resolve() == model.resolve()
    assert c.env({"X": "1"})["HF_HUB_OFFLINE"] == "1"
    assert ManagedServer(ServerConfig(model="m"), tmp_path / "v.log").workdir() is None


def test_a_local_model_directory_is_served_under_its_name_and_a_bad_path_is_named(
        tmp_path) -> None:
    from playground.errors import ValidationFailed
    from playground.server.embedded import server_config
    from playground.settings import Settings

    lora = tmp_path / "qwen3-address-lora"
    lora.mkdir()
    (lora / "config.json").write_text("{}")
    settings = Settings(cache_dir=tmp_path / "cache")
    config, demo = server_config(settings, 8124, str(lora))
    assert config.model == str(lora) and config.served_model_name == "qwen3-address-lora"
    assert not demo and config.load_format is None
    with pytest.raises(ValidationFailed, match="no such directory"):
        server_config(settings, 8124, str(tmp_path / "missing"))
    with pytest.raises(ValidationFailed, match=r"no config\.json"):
        server_config(settings, 8124, str(tmp_path))


def test_a_server_sample_reads_the_gauges_and_counters_of_every_engine() -> None:
    from playground.server.series import Series, ServerSample, describe

    page = "\n".join([
        "# TYPE vllm:num_requests_running gauge",
        'vllm:num_requests_running{engine="0"} 3.0', 'vllm:num_requests_running{engine="1"} 2.0',
        "# TYPE vllm:num_requests_waiting gauge", 'vllm:num_requests_waiting{engine="0"} 7.0',
        "# TYPE vllm:kv_cache_usage_perc gauge", 'vllm:kv_cache_usage_perc{engine="0"} 0.25',
        "# TYPE vllm:prefix_cache_queries counter",
        'vllm:prefix_cache_queries_total{engine="0"} 100.0',
        "# TYPE vllm:prefix_cache_hits counter", 'vllm:prefix_cache_hits_total{engine="0"} 40.0',
        "# TYPE vllm:generation_tokens counter",
        'vllm:generation_tokens_total{engine="0"} 1000.0', ""])
    first = ServerSample.of(sm.parse(page), t=10.0)
    assert (first.running, first.waiting, first.kv_usage) == (5.0, 7.0, 0.25)
    later = first.model_copy(update={"t": 12.0, "prefix_queries": 200.0, "prefix_hits": 90.0,
                                     "generation_tokens": 1500.0, "waiting": 1.0})
    s = Series(samples=[first, later], gaps=2, gpu_note="no GPU here").summary()
    no_gpu = {"gpu_note": "no GPU here", "peak_gpu_util_pct": None,
              "peak_gpu_mem_used_mib": None, "peak_gpu_power_w": None,
              "peak_gpu_sm_clock_mhz": None}
    assert s == {"samples": 2, "gaps": 2, "peak_running": 5.0, "peak_waiting": 7.0,
                 "peak_kv_usage": 0.25, "prefix_hit_rate": 0.5, "preemptions": 0.0,
                 "generation_tok_per_s": 250.0, **no_gpu}
    assert describe(s) == ("peak 5 running and 7 waiting, KV cache 25% (2 samples, 2 failed "
                           "scrapes); no GPU here")
    assert Series().summary() == {"samples": 0, "gaps": 0, **no_gpu, "gpu_note": None}
