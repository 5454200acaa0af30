"""The wheel, not the checkout: built, installed into a fresh venv, and used against the real
test server -- presets come from package data, user data goes to the user's data dir."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from playground.settings import REPO_ROOT

pytestmark = pytest.mark.server


def _clean() -> dict[str, str]:
    """No PYTHONPATH or PLAYGROUND_* from the test run: the checkout must not leak in."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("PLAYGROUND_", "XDG_", "PYTHON"))}


def _run(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    kw.setdefault("env", _clean())
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)  # type: ignore[call-overload]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding only the wheel; its dependencies come from the test venv through
    a .pth line (so nothing is downloaded), which does not activate the checkout's editable
    install."""
    tmp = tmp_path_factory.mktemp("wheel")
    built = _run([sys.executable, "-m", "pip", "wheel", str(REPO_ROOT), "--no-deps",
                  "--no-build-isolation", "-q", "-w", str(tmp / "dist")])
    assert built.returncode == 0, built.stderr[-2000:]
    # a quiet build: every folder of package data is declared (no "Package would be ignored"
    # walls of text for a newcomer's first install)
    assert "Warning" not in built.stdout + built.stderr, (built.stdout + built.stderr)[-2000:]
    wheel = next((tmp / "dist").glob("qwen_latency_lab-*.whl"))
    venv = tmp / "venv"
    assert _run([sys.executable, "-m", "venv", "--without-pip", str(venv)]).returncode == 0
    py = venv / "bin" / "python"
    got = _run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "-q",
                str(wheel)])
    assert (venv / "bin" / "playground").is_file(), got.stdout + got.stderr
    assert got.returncode == 0, got.stderr[-2000:]
    site = _run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    (Path(site.stdout.strip()) / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


def _env(tmp: Path) -> dict[str, str]:
    return {**_clean(), "HOME": str(tmp / "home")}


def test_installed_wheel_runs_from_package_data(installed: Path, vllm_server: str,
                                                tmp_path: Path) -> None:
    bin_ = installed / "bin"
    where = _run([str(bin_ / "python"), "-c", "import playground, playground.settings as s; "
                  "print(playground.__file__); print(s.shipped_presets())"],
                 cwd=tmp_path, env=_env(tmp_path))
    module, presets = where.stdout.split()
    assert str(installed) in module and str(REPO_ROOT) not in module, where.stdout
    assert presets.endswith("playground/presets_data") and str(installed) in presets

    # the page script ships as package data too: the UI's <head> is built from it
    head = _run([str(bin_ / "python"), "-c", "from playground.ui.live_feed import SCRIPT, "
                 "head_js; print(SCRIPT); print(len(head_js()))"], cwd=tmp_path,
                env=_env(tmp_path))
    script, size = head.stdout.split()
    assert str(installed) in script and int(size) > 1000, head.stdout + head.stderr[-2000:]

    helped = _run([str(bin_ / "playground"), "--help"], cwd=tmp_path, env=_env(tmp_path))
    assert helped.returncode == 0 and "bench" in helped.stdout and "ui" in helped.stdout

    ran = _run([str(bin_ / "playground"), "run", "--base-url", vllm_server, "--variant",
                "streaming", "--variant", "seed-default", "--prompt", "[wheel] 你好"],
               cwd=tmp_path, env=_env(tmp_path))
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "streaming" in ran.stdout and "n/a (non-streaming)" in ran.stdout
    runs = list((tmp_path / "home/.local/share/qwen-latency-lab/runs/playground").glob("*.jsonl"))
    assert len(runs) == 1  # user data in the user's data dir ...
    assert not list(installed.rglob("runs"))  # ... never in site-packages


def test_installed_wheel_benchmarks_with_its_templates(installed: Path, vllm_server: str,
                                                      tmp_path: Path) -> None:
    exp = tmp_path / "tiny.yaml"
    exp.write_text("name: tiny\nvariants: [streaming]\nexamples: 1\nwarmup: 0\n", "utf-8")
    out = tmp_path / "out"
    ran = _run([str(installed / "bin" / "playground"), "bench", str(exp), "--base-url",
                vllm_server, "--out", str(out)], cwd=tmp_path, env=_env(tmp_path))
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "<h1>tiny</h1>" in (out / "report.html").read_text("utf-8")
