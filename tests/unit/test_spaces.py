"""The repository is a Hugging Face Space: README front matter and requirements.txt."""

from __future__ import annotations

import tomllib

import yaml

from playground.settings import REPO_ROOT


def test_readme_front_matter_declares_a_gradio_space_on_app_py() -> None:
    text = (REPO_ROOT / "README.md").read_text("utf-8")
    assert text.startswith("---\n")
    meta = yaml.safe_load(text.split("---\n")[1])
    assert meta["sdk"] == "gradio" and meta["app_file"] == "app.py"
    assert str(meta["sdk_version"]).startswith("6.")


def test_space_requirements_are_the_core_dependencies_without_vllm() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    lines = [line.strip() for line in (REPO_ROOT / "requirements.txt").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    assert sorted(lines) == sorted(project["dependencies"])
    assert not any("vllm" in line for line in lines)
