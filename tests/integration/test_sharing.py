"""Sharing: --share without internet keeps running locally, auth, warnings, replay mode."""

from __future__ import annotations

from pathlib import Path

import pytest

from playground.server import http
from playground.settings import Settings
from playground.ui.app import share_reachable
from tests.apphelp import app


@pytest.mark.reliability(case="shared mode (--share) with no auth; no internet for the link",
                         where="the app's log: a warning; the app keeps running locally",
                         order=52)
def test_share_without_internet_says_so_and_keeps_running_locally(tmp_path: Path,
                                                                  observed) -> None:
    log = tmp_path / "app.log"
    with app("--share", "--replay", env_extra={"PLAYGROUND_SHARE_CHECK": "127.0.0.1:1"},
             log=log) as (url, proc):
        assert http.get(url).status == 200
        assert proc.poll() is None
    text = log.read_text()
    assert "--share: no internet connection" in text and "keeps running locally" in text
    assert "has no authentication" in text  # shared mode with no auth warns
    observed(" / ".join(ln for ln in text.splitlines() if "no internet" in ln
                        or "no authentication" in ln))


@pytest.mark.reliability(case="a shared instance with --auth / PLAYGROUND_AUTH",
                         where="HTTP 401 without login; the password is never printed",
                         order=53)
def test_auth_protects_the_ui_and_the_password_is_never_printed(tmp_path: Path,
                                                               observed) -> None:
    log = tmp_path / "app.log"
    with app("--replay", "--host", "127.0.0.1", env_extra={
            "PLAYGROUND_AUTH": "demo:s3cret-pass"}, log=log) as (url, _):
        status = http.get(url + "config").status
        assert status == 401
    text = log.read_text()
    assert "s3cret-pass" not in text and "no authentication" not in text
    observed(f"GET /config without login: HTTP {status}; password in the log: "
             f"{'s3cret-pass' in text}")


def test_malformed_auth_is_rejected_before_start() -> None:
    with pytest.raises(Exception, match="auth: expected USER:PASSWORD"):
        Settings(auth="no-colon").auth_pairs()  # type: ignore[arg-type]
    assert Settings(auth="a:b,c:d").auth_pairs() == [("a", "b"), ("c", "d")]  # type: ignore[arg-type]


def test_share_check_reports_an_unreachable_host() -> None:
    assert share_reachable("127.0.0.1:1", timeout_s=1) is False


def test_on_a_space_with_no_server_the_app_starts_in_replay_mode(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    env = {"SPACE_ID": "team/qwen-latency-lab", "PLAYGROUND_BASE_URL": ""}
    with app("--host", "127.0.0.1", env_extra=env, log=log) as (url, _):
        reply = http.get(url + "config")
        status, body = reply.status, reply.text
        assert status == 200 and "Replay mode" in body
    assert "replay mode, no server" in log.read_text()
    assert "vllm" not in log.read_text().lower().replace("vllm server", "")
