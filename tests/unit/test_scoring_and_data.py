from __future__ import annotations

import json

import pytest

from playground.core.scoring import badge, score
from playground.settings import REPO_ROOT
from playground.specs.schemas import AddressLabels

DATA = REPO_ROOT / "presets" / "data" / "address.jsonl"
SCHEMA = AddressLabels.model_json_schema()
MUNICIPALITIES = {"北京市", "上海市", "天津市", "重庆市"}


def rows() -> list[dict]:
    return [json.loads(line) for line in DATA.read_text("utf-8").splitlines() if line.strip()]


def test_data_set_shape() -> None:
    data = rows()
    assert len(data) >= 60
    assert len({r["input"] for r in data}) == len(data)
    for r in data:
        AddressLabels.model_validate(r["gold"])
        if r["gold"]["province"] in MUNICIPALITIES:
            assert r["gold"]["city"] == r["gold"]["province"]
    provinces = {r["gold"]["province"] for r in data}
    assert provinces >= MUNICIPALITIES
    assert sum("自治区" in p for p in provinces) >= 4
    assert any(r["gold"]["name"] == "" for r in data)
    assert any(r["gold"]["phone"] == "" for r in data)
    assert any("-" in r["gold"]["phone"] for r in data)  # landlines
    assert any(len(r["gold"]["phone"]) == 11 and r["gold"]["phone"].startswith("1")
               for r in data)  # mobiles
    for label in ("电话", "TEL", "手机", "联系人", "收件人", "姓名"):
        assert any(label in r["input"] for r in data), label


@pytest.mark.parametrize("example", rows()[:10])
def test_gold_as_prediction_scores_100(example: dict) -> None:
    s = score(json.dumps(example["gold"], ensure_ascii=False), SCHEMA, example["gold"])
    assert s.json_valid and s.schema_valid and s.field_accuracy == 1.0


def test_known_perturbation_scores_exactly() -> None:
    gold = rows()[0]["gold"]
    pred = {**gold, "phone": "000", "name": "someone else"}
    s = score(json.dumps(pred, ensure_ascii=False), SCHEMA, gold)
    assert s.schema_valid is True
    assert s.field_accuracy == pytest.approx(4 / 6)
    assert s.fields == {k: k not in ("phone", "name") for k in gold}


def test_invalid_json_and_schema_violations() -> None:
    gold = rows()[0]["gold"]
    bad = score('{"province": "湖南省",', SCHEMA, gold)
    assert not bad.json_valid and bad.schema_valid is False and bad.field_accuracy == 0.0
    missing = score('{"province": "湖南省"}', SCHEMA)
    assert missing.json_valid and missing.schema_valid is False
    assert "required" in (missing.schema_error or "")
    assert score("{}", None).schema_valid is None


def test_fenced_json_is_parsed_and_badges() -> None:
    s = score('```json\n{"a": 1}\n```')
    assert s.json_valid
    assert badge(s) == "JSON: valid"
    assert badge(score("nope")) == "JSON: invalid"
