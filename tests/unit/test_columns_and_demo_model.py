from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from playground.core.request import build
from playground.errors import ValidationFailed
from playground.server import demo_model
from playground.settings import REPO_ROOT
from playground.specs.presets import PresetLibrary
from playground.ui.columns import controls_from_variant, variant_from_controls

LIB = PresetLibrary(REPO_ROOT / "presets")


@pytest.mark.parametrize("name", sorted(LIB.variants))
def test_controls_round_trip_every_preset(name: str) -> None:
    v = LIB.get(name)
    back = build(variant_from_controls(controls_from_variant(v), LIB), "p", "m").body()
    if v.top_p is None:  # the UI always shows (and sends) an explicit top_p
        assert back.pop("top_p") == 1.0
    assert back == build(v, "p", "m").body()


@pytest.mark.parametrize(("change", "field"), [
    ({"schema_choice": "custom", "custom_schema": '{"type": "bogus"}'}, "guided JSON schema"),
    ({"schema_choice": "custom", "custom_schema": "{not json"}, "guided JSON schema"),
    ({"schema_choice": "custom", "custom_schema": ""}, "guided JSON schema"),
    ({"schema_choice": "custom", "custom_schema": json.dumps(
        {"type": "object", "description": "x" * 40_000})}, "custom text"),
    ({"prompt_choice": "custom", "custom_prompt": "  "}, "system prompt"),
    ({"max_tokens": None}, "max_tokens"),
    ({"max_tokens": 0}, "max_tokens"),
])
def test_bad_controls_name_the_field(change: dict, field: str) -> None:
    c = replace(controls_from_variant(LIB.get("streaming")), **change)
    with pytest.raises(ValidationFailed) as exc:
        variant_from_controls(c, LIB)
    assert exc.value.field == field


def test_pasted_schema_is_used() -> None:
    schema = {"type": "object", "properties": {"x": {"type": "integer"}}}
    c = replace(controls_from_variant(LIB.get("streaming")), schema_choice="custom",
                custom_schema=json.dumps(schema))
    body = build(variant_from_controls(c, LIB), "p", "m").body()
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
