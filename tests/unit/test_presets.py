from __future__ import annotations

import json
from pathlib import Path

import pytest

from playground.errors import PresetError, ValidationFailed
from playground.settings import REPO_ROOT
from playground.specs import schemas
from playground.specs.presets import PresetLibrary, Variant, variant_from_dict

PRESETS = REPO_ROOT / "presets"
REQUIRED = ["seed-default", "streaming", "thinking-off", "greedy", "minimal-prompt",
            "guided-json", "all-optimizations"]


def test_shipped_presets_load_without_errors() -> None:
    lib = PresetLibrary(PRESETS)
    assert lib.errors == []
    for name in REQUIRED:
        assert name in lib.variants


def test_seed_default_is_the_articles_default() -> None:
    v = PresetLibrary(PRESETS).get("seed-default")
    assert (v.stream, v.thinking, v.temperature, v.prompt.name) == (False, True, 0.5, "long")
    assert v.guided_json is None


def test_all_optimizations_combines_every_single_one() -> None:
    v = PresetLibrary(PRESETS).get("all-optimizations")
    assert v.stream and not v.thinking and v.temperature == 0.0
    assert v.prompt.name == "minimal" and v.guided_json is not None


def test_long_prompt_is_longer_than_minimal() -> None:
    lib = PresetLibrary(PRESETS)
    assert len(lib.get("seed-default").prompt.text) > 3 * len(lib.get("all-optimizations")
                                                              .prompt.text)


def test_address_schema_file_is_generated_from_the_model() -> None:
    on_disk = (PRESETS / "schemas" / "address.json").read_text("utf-8")
    assert on_disk == schemas.render("address")
    assert set(json.loads(on_disk)["required"]) == {
        "province", "city", "district", "specific_location", "name", "phone"}


@pytest.mark.parametrize(("data", "field", "fragment"), [
    ({"name": "x", "temprature": 0.1}, "temprature", "unknown key"),
    ({"name": "x", "temperature": -1}, "temperature", "greater than or equal to 0"),
    ({"name": "x", "top_p": 0}, "top_p", "greater than 0"),
    ({"name": "x", "max_tokens": 0}, "max_tokens", "greater than or equal to 1"),
    ({"name": "x", "prompt": "nope"}, "prompt", "unknown prompt 'nope'"),
    ({"name": "x", "prompt": "../../etc/passwd"}, "prompt", "not a plain name"),
    ({"name": "x", "guided_json": "../x"}, "guided_json", "not a plain name"),
    ({"name": "x", "guided_json": {"schema": {"type": "bogus"}}}, "guided_json.schema",
     "invalid JSON Schema"),
    ({"name": "bad name!"}, "name", "letters, digits"),
    ({"name": "x", "min_tokens": 9, "max_tokens": 4}, "(file)", "min_tokens"),
])
def test_bad_variant_names_field_and_reason(data: dict, field: str, fragment: str) -> None:
    with pytest.raises(PresetError) as exc:
        variant_from_dict(data, PRESETS, source="f.yaml")
    assert exc.value.field == field
    assert fragment in exc.value.reason
    assert str(exc.value).startswith("f.yaml: ")


def test_bad_file_does_not_hide_good_ones(tmp_path: Path) -> None:
    (tmp_path / "variants").mkdir()
    for sub in ("prompts", "schemas"):
        (tmp_path / sub).symlink_to(PRESETS / sub)
    (tmp_path / "variants" / "good.yaml").write_text("name: good\nstream: true\n")
    (tmp_path / "variants" / "bad.yaml").write_text("name: bad\nstreem: true\n")
    (tmp_path / "variants" / "broken.yaml").write_text("name: [unclosed\n")
    lib = PresetLibrary(tmp_path)
    assert list(lib.variants) == ["good"]
    messages = sorted(str(e) for e in lib.errors)
    assert any("bad.yaml: streem: unknown key" in m for m in messages)
    assert any("broken.yaml: line" in m and "not valid YAML" in m for m in messages)


def test_user_presets_never_overwrite_shipped(tmp_path: Path) -> None:
    lib = PresetLibrary(PRESETS, tmp_path)
    with pytest.raises(ValidationFailed, match="shipped preset"):
        lib.save_user_variant(Variant(name="seed-default"))
    path = lib.save_user_variant(Variant(name="mine", stream=True, temperature=0.2,
                                         guided_json=lib.get("guided-json").guided_json))
    assert path.parent == tmp_path / "variants"
    assert lib.get("mine").guided_json == lib.get("guided-json").guided_json
    assert lib.get("mine").temperature == 0.2


def test_unknown_preset_lists_known_ones() -> None:
    with pytest.raises(ValidationFailed, match=r"known presets: .*seed-default"):
        PresetLibrary(PRESETS).get("nope")


def test_preset_files_past_the_limits_get_named_errors(tmp_path: Path) -> None:
    from playground.specs.limits import MAX_SPEC_BYTES
    from playground.specs.presets import load_yaml

    bomb = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for k in range(1, 9):  # 10^9 values once expanded
        prev = chr(ord("a") + k - 1)
        bomb.append(f"{chr(ord('a') + k)}: &{chr(ord('a') + k)} [{', '.join(['*' + prev] * 10)}]")
    cases = {
        "alias.yaml": ("\n".join(bomb), "more than 20,000 values"),
        "deep.yaml": ("x: " + "[" * 5000 + "]" * 5000, "nests deeper"),
        "big.yaml": ("x: " + "y" * (MAX_SPEC_BYTES + 1), "the limit is"),
        "bytes.yaml": (b"\xff\xfe\x00garbage", "not UTF-8"),
    }
    for name, (text, words) in cases.items():
        p = tmp_path / name
        p.write_bytes(text if isinstance(text, bytes) else text.encode())
        with pytest.raises(PresetError) as e:
            load_yaml(p)
        assert e.value.field == "(file)" and words in e.value.reason, (name, str(e.value))
