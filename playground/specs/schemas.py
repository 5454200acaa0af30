"""Pydantic models behind the shipped JSON Schemas (presets/schemas/*.json).

`python -m playground.specs.schemas` regenerates the files; a test checks they are up to date.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field


class AddressLabels(BaseModel):
    """The address-extraction task of the seed articles: six string fields."""

    model_config = ConfigDict(extra="forbid", title="AddressLabels")

    # Length bounds keep constrained generation finite: a field can never run to max_tokens.
    province: str = Field(max_length=16, description="省份全称；直辖市与 city 相同")
    city: str = Field(max_length=16, description="城市名称")
    district: str = Field(max_length=16, description="区县名称")
    specific_location: str = Field(max_length=64, description="街道、门牌号、小区、楼栋等详细信息")
    name: str = Field(max_length=16, description="收件人姓名")
    phone: str = Field(max_length=24, description="联系电话")


SCHEMAS: dict[str, type[BaseModel]] = {"address": AddressLabels}


def render(name: str) -> str:
    schema = SCHEMAS[name].model_json_schema()
    return json.dumps(schema, ensure_ascii=False, indent=2) + "\n"


def write_all(folder: Path) -> None:
    for name in SCHEMAS:
        (folder / f"{name}.json").write_text(render(name), "utf-8")


if __name__ == "__main__":
    write_all(Path(__file__).resolve().parents[2] / "presets" / "schemas")
