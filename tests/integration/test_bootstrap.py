"""scripts/bootstrap.sh heals: a venv broken by an interrupted install is detected, said so and
rebuilt; an install interrupted at any moment finishes on the next run. A tiny local wheel
stands in for the project (PLAYGROUND_BOOTSTRAP_SPEC), so each run takes seconds."""

from __future__ import annotations

import base64
import hashlib
import os
import signal
import subprocess
import zipfile
from pathlib import Path

import pytest

from playground.settings import REPO_ROOT
from tests.procs import cmdline, group, wait_for

BOOTSTRAP = REPO_ROOT / "scripts" / "bootstrap.sh"


def tiny_wheel(folder: Path) -> Path:
    """A valid pure-Python wheel with one module, written by hand (no build backend)."""
    files = {
        "tinypkg/__init__.py": "VALUE = 42\n",
        "tinypkg-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: tinypkg\nVersion: 0.1\n",
        "tinypkg-0.1.dist-info/WHEEL": ("Wheel-Version: 1.0\nGenerator: test\n"
                                        "Root-Is-Purelib: true\nTag: py3-none-any\n"),
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{name},sha256={digest.decode()},{len(text.encode())}")
    record.append("tinypkg-0.1.dist-info/RECORD,,")
    files["tinypkg-0.1.dist-info/RECORD"] = "\n".join(record) + "\n"
    path = folder / "tinypkg-0.1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return path


def run(venv: Path, wheel: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PLAYGROUND_VENV": str(venv), "PLAYGROUND_BOOTSTRAP_SPEC": str(wheel)}
    return subprocess.run(["bash", str(BOOTSTRAP)], capture_output=True, text=True, env=env,
                          timeout=timeout)


def imports(venv: Path) -> bool:
    return subprocess.run([str(venv / "bin" / "python"), "-c", "import tinypkg, pip"],
                          capture_output=True).returncode == 0


@pytest.fixture()
def wheel(tmp_path: Path) -> Path:
    return tiny_wheel(tmp_path)


def test_a_venv_whose_pip_broke_is_rebuilt_and_said_so(tmp_path: Path, wheel: Path) -> None:
    venv = tmp_path / "venv"
    first = run(venv, wheel)
    assert first.returncode == 0, first.stderr[-2000:]
    assert imports(venv) and list(venv.glob(".installed-*"))
    # a quiet install: one line saying what happens; pip's own output is in the log
    assert first.stdout.splitlines() == [f"== installing {wheel} into {venv} (first time: a "
                                         "few minutes)"], first.stdout
    assert first.stderr == "" and (venv / "install.log").is_file()
    again = run(venv, wheel)  # nothing to do: no reinstall, no rebuild
    assert again.returncode == 0 and "installing" not in again.stdout
    # the reported state: an interrupted `pip install --upgrade pip`
    utils = next(venv.glob("lib/python3*/site-packages/pip/_internal/utils"))
    for f in sorted(utils.rglob("*"), reverse=True):
        f.unlink() if f.is_file() else f.rmdir()
    utils.rmdir()
    healed = run(venv, wheel)
    assert healed.returncode == 0, healed.stderr[-2000:]
    assert "broken or half-built" in healed.stdout and "rebuilding" in healed.stdout
    assert imports(venv)


def in_group(pgid: int, pattern: str) -> bool:
    return any(pattern in cmdline(p) for p in group(pgid))


MOMENTS = {  # a moment of the first install -> how the test sees that it has come
    "while the venv is created": lambda venv, pgid: in_group(pgid, "-m venv"),
    "while pip upgrades itself": lambda venv, pgid: in_group(pgid, "--upgrade pip"),
    "while the package installs": lambda venv, pgid: in_group(pgid, "tinypkg-0.1"),
}


def test_an_install_interrupted_anywhere_finishes_on_the_next_run(tmp_path: Path,
                                                                  wheel: Path) -> None:
    """Ctrl-C (SIGINT to the whole group, as a terminal sends it) at each moment of a first
    install -- seen happening, not guessed from a clock: while the venv is created, while pip
    upgrades itself, while the package installs -- and each time the next run ends with a
    working venv."""
    env = {**os.environ, "PLAYGROUND_BOOTSTRAP_SPEC": str(wheel)}
    for i, (moment, came) in enumerate(MOMENTS.items()):
        venv = tmp_path / f"venv{i}"
        proc = subprocess.Popen(["bash", str(BOOTSTRAP)], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True,
                                env={**env, "PLAYGROUND_VENV": str(venv)})
        seen = wait_for(lambda: came(venv, proc.pid) or proc.poll() is not None,  # noqa: B023
                        timeout=120, step=0.02)
        assert seen and proc.poll() is None, f"{moment}: the install ended before it came"
        os.killpg(proc.pid, signal.SIGINT)
        proc.communicate(timeout=120)
        finished = bool(list(venv.glob(".installed-*")))
        assert not finished or imports(venv)  # a stamp only after a complete install
        done = run(venv, wheel)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        assert imports(venv), f"interrupted {moment}: the venv does not work"


def test_a_failing_install_shows_what_went_wrong(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    failed = run(venv, tmp_path / "no-such-package-1.0-py3-none-any.whl")
    assert failed.returncode != 0
    assert "error: the install failed" in failed.stderr and "install.log" in failed.stderr
    assert "no-such-package" in failed.stderr  # pip's own words, from the log's tail
    assert not list(venv.glob(".installed-*"))  # not marked finished
