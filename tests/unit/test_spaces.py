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


def test_wrong_logins_are_slowed_and_a_right_one_still_passes() -> None:
    import asyncio
    import inspect

    from playground.ui.login import FREE, MAX_S, SlowLogin

    waits: list[float] = []
    now = [0.0]

    async def sleep(s: float) -> None:  # a scripted clock: the waits asked for, no real time
        waits.append(s)
        now[0] += s

    login = SlowLogin([("demo", "s3cret")], sleep=sleep, clock=lambda: now[0])
    assert inspect.iscoroutinefunction(login.check)  # what Gradio checks before awaiting

    async def main() -> list[bool]:
        tries = [login.check("demo", f"guess{i}") for i in range(12)]
        return [*await asyncio.gather(*tries), await login.check("demo", "s3cret"),
                await login.check("nobody", "")]

    results = asyncio.run(main())
    assert results[:12] == [False] * 12 and results[12] is True and results[13] is False
    assert len(waits) == 12 - FREE + 1 + 1  # every check after the free ones waited
    assert waits == sorted(waits[:-2]) + waits[-2:] and max(waits) == MAX_S  # doubling, capped
    now[0] += 120  # a minute later the slate is clean
    assert login.delay_s() == 0.0
