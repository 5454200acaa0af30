"""Shared by tests that start the app as a subprocess."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from playground.client import http_get


def wait_listening(url: str, proc: subprocess.Popen[bytes], log: Path,
                   ok: tuple[int, ...] = (200,), tries: int = 240) -> None:
    """Bounded wait until `url` answers with one of `ok`; fails with the app's log tail."""
    for _ in range(tries):
        try:
            if http_get(url, timeout_s=1)[0] in ok:
                return
        except OSError:
            pass
        if proc.poll() is not None:
            raise RuntimeError(f"app exited: {log.read_text()[-2000:]}")
        time.sleep(0.5)
    raise RuntimeError(f"app did not answer at {url}: {log.read_text()[-2000:]}")
