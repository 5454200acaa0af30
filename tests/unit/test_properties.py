"""Property-based tests (hypothesis): preset / experiment parsing and the request builder.

Any valid variant mapping parses and builds the request vLLM honours for each toggle; any
mapping with one invalid field is rejected with a PresetError naming that field. (That the
server accepts what the builder makes is checked against the real server in
tests/integration/test_properties_server.py.)
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from playground.core import request
from playground.errors import PresetError
from playground.settings import REPO_ROOT
from playground.specs.experiments import experiment_from_dict
from playground.specs.presets import PresetLibrary, variant_from_dict

PRESETS = REPO_ROOT / "presets"
LIB = PresetLibrary(PRESETS)
names = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,20}", fullmatch=True)


@st.composite
def variant_dicts(draw: st.DrawFn) -> dict[str, Any]:
    d: dict[str, Any] = {"name": draw(names)}
    max_tokens = draw(st.integers(1, 4096))
    optional = {
        "stream": st.booleans(), "thinking": st.booleans(), "ignore_eos": st.booleans(),
        "temperature": st.floats(0, 2, allow_nan=False),
        "top_p": st.floats(0, 1, exclude_min=True, allow_nan=False),
        "top_k": st.integers(-1, 200), "seed": st.integers(0, 2**31),
        "min_tokens": st.integers(0, max_tokens),
        "prompt": st.sampled_from([*LIB.prompt_names(), None]).map(
            lambda n: n if n else {"name": "inline", "text": "Extract the address as JSON."}),
        "guided_json": st.sampled_from(LIB.schema_names()),
        "description": st.text(max_size=40),
    }
    for key, strategy in optional.items():
        if draw(st.booleans()):
            d[key] = draw(strategy)
    d["max_tokens"] = max_tokens
    return d


INVALID = {
    "temperature": st.one_of(st.floats(max_value=-0.001), st.floats(min_value=2.001,
                                                                  allow_infinity=False)),
    "top_p": st.one_of(st.floats(max_value=0), st.floats(min_value=1.0001,
                                                         allow_infinity=False)),
    "max_tokens": st.integers(max_value=0),
    "top_k": st.integers(max_value=-2),
    "name": st.sampled_from(["", "bad name", "-x", "../up", "a/b", "x" * 65]),
    "prompt": st.sampled_from(["../../etc/passwd", "nope", "/abs"]),
    "guided_json": st.sampled_from(["../x", "missing-schema", {"schema": {"type": "bogus"}}]),
    "stream": st.sampled_from(["maybe", 3, [1]]),
}


@settings(max_examples=150, deadline=None)
@given(variant_dicts(), st.text(min_size=1, max_size=200))
def test_any_valid_variant_builds_the_request_its_toggles_say(data: dict[str, Any],
                                                             prompt: str) -> None:
    v = variant_from_dict(data, PRESETS, source="h.yaml")
    req = request.build(v, prompt, "m")
    body = req.body()
    assert body["model"] == "m" and body["max_tokens"] == data["max_tokens"]
    assert body["messages"][-1] == {"role": "user", "content": prompt}
    assert body["chat_template_kwargs"] == {"enable_thinking": data.get("thinking", False)}
    assert ("stream" in body) == data.get("stream", True)
    for key in ("temperature", "top_p", "seed", "top_k", "min_tokens"):
        assert body.get(key) == data.get(key)
    assert ("response_format" in body) == ("guided_json" in data)
    assert "enable_thinking" not in body and "guided_json" not in body  # never top-level
    assert body.get("ignore_eos") == (True if data.get("ignore_eos") else None)


@settings(max_examples=200, deadline=None)
@given(variant_dicts(), st.sampled_from(sorted(INVALID)), st.data())
def test_any_invalid_field_is_rejected_naming_it(data: dict[str, Any], field: str,
                                                 draw: st.DataObject) -> None:
    bad = {**data, field: draw.draw(INVALID[field])}
    try:
        variant_from_dict(bad, PRESETS, source="h.yaml")
    except PresetError as e:
        assert e.field.split(".")[0] == field, (e.field, field)
        assert e.reason and str(e).startswith("h.yaml: ")
    else:
        raise AssertionError(f"accepted {field}={bad[field]!r}")


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(sorted(LIB.variants)), min_size=1, max_size=4, unique=True),
       st.integers(1, 50), st.integers(1, 20), st.integers(0, 5), st.integers(1, 64),
       st.sampled_from(["interleaved", "random"]))
def test_any_valid_experiment_parses(variants: list[str], examples: int, reps: int,
                                     warmup: int, concurrency: int, order: str) -> None:
    exp = experiment_from_dict({"name": "e", "variants": variants, "examples": examples,
                                "repetitions": reps, "warmup": warmup,
                                "concurrency": concurrency, "order": order}, LIB, source="e")
    assert [v.name for v in exp.variants] == variants
    assert exp.baseline_name == variants[0] and exp.repetitions == reps


@settings(max_examples=100, deadline=None)
@given(st.sampled_from([
    ("repetitions", st.integers(max_value=0)), ("warmup", st.integers(max_value=-1)),
    ("concurrency", st.integers(min_value=257)), ("examples", st.integers(max_value=0)),
    ("order", st.text(max_size=8).filter(lambda s: s not in ("interleaved", "random"))),
    ("dataset", st.sampled_from(["../../etc/passwd", "nope/x"])),
    ("variants", st.sampled_from([[], ["no-such-preset"], "seed-default"])),
    ("colour", st.just("blue")),
]), st.data())
def test_any_invalid_experiment_field_is_rejected_naming_it(case: tuple[str, Any],
                                                            draw: st.DataObject) -> None:
    field, strategy = case
    data = {"name": "e", "variants": ["seed-default"], field: draw.draw(strategy)}
    try:
        experiment_from_dict(data, LIB, source="e.yaml")
    except PresetError as e:
        assert e.field.split(".")[0] == field, (e.field, field)
    else:
        raise AssertionError(f"accepted {field}={data[field]!r}")
