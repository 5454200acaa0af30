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


PAGE = "p" * 24  # a well-formed page token


@pytest.mark.reliability(case="a shared instance with --auth / PLAYGROUND_AUTH",
                         where="HTTP 401 without login on /config, every API route "
                         "and the app's own routes (plain HTTP and gradio_client); the "
                         "password in no log or served HTML",
                         order=53)
def test_auth_protects_the_ui_and_the_api_and_the_password_is_never_printed(
        tmp_path: Path, observed) -> None:
    import httpx2
    from gradio_client import Client

    log = tmp_path / "app.log"
    secret = "s3cret-pass-9d4"
    with app("--replay", "--host", "127.0.0.1", env_extra={
            "PLAYGROUND_AUTH": f"demo:{secret}"}, log=log) as (url, _):
        anon = {path: http.request(method, url + path, body=body).status for method, path, body
                in (("GET", "config", None), ("GET", "gradio_api/info", None),
                    ("POST", "gradio_api/call/compare", {"data": ["x", ["fixed-64-stream"]]}),
                    ("POST", "gradio_api/run/predict", {"data": [], "fn_index": 0}),
                    ("GET", "gradio_api/upload_progress?upload_id=x", None),
                    # the app's own routes: the live channel, the stage's Run and Stop
                    ("GET", f"live/{PAGE}", None),
                    ("POST", f"stage/run/{PAGE}", {"seq": 1}),
                    ("POST", f"stage/stop/{PAGE}", {}))}
        with pytest.raises(Exception, match=r"(?i)401|auth|login|config"):  # no login: no client
            Client(url, verbose=False)
        Client(url, auth=("demo", secret), verbose=False)  # with one it can
        with httpx2.Client(base_url=url, follow_redirects=True) as browser_like:
            bad = browser_like.post("login", data={"username": "demo", "password": "nope"})
            good = browser_like.post("login", data={"username": "demo", "password": secret})
            pages = [browser_like.get(p).text for p in ("", "config", "gradio_api/info")]
            stop_logged_in = browser_like.post(f"stage/stop/{PAGE}", json={}).status_code
    text = log.read_text()
    leaks = sum(secret in t for t in (text, *pages))
    observed(f"without login: {anon}; wrong login HTTP {bad.status_code}, right login "
             f"HTTP {good.status_code}; password found in the log and 3 pages: {leaks}")
    assert all(code == 401 for code in anon.values()), anon
    assert bad.status_code >= 400 and good.status_code == 200
    assert stop_logged_in == 200  # the same route, logged in
    assert leaks == 0 and "no authentication" not in text


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


@pytest.mark.reliability(case="one visitor of a shared app (--auth) uploads file after file",
                         where="past the hourly count (30) the upload route answers 429 naming "
                         "the limit, before anything is stored; another visitor still uploads",
                         order=53)
def test_uploads_are_counted_per_visitor_on_a_shared_page(tmp_path: Path, observed) -> None:  # type: ignore[no-untyped-def]
    import httpx2

    from playground.ui.quotas import UPLOADS_PER_WINDOW

    secret = "upload-pass-5e1"
    with app("--replay", env_extra={"PLAYGROUND_AUTH": f"demo:{secret}"},
             log=tmp_path / "app.log") as (url, _):
        def client(visitor: str) -> httpx2.Client:
            c = httpx2.Client(base_url=url, follow_redirects=True,
                              headers={"X-Forwarded-For": visitor})
            assert c.post("login", data={"username": "demo", "password": secret}
                          ).status_code == 200
            return c

        one, other = client("198.51.100.7"), client("198.51.100.8")
        try:
            codes = [one.post("gradio_api/upload", files={"files": ("r.json", b"{}")}
                              ).status_code for _ in range(UPLOADS_PER_WINDOW + 2)]
            refused = one.post("gradio_api/upload", files={"files": ("r.json", b"{}")})
            theirs = other.post("gradio_api/upload", files={"files": ("r.json", b"{}")})
        finally:
            one.close()
            other.close()
    observed(f"{codes.count(200)} uploads accepted, then HTTP {refused.status_code}: "
             f"{refused.json()['detail']}; another visitor: HTTP {theirs.status_code}")
    assert codes == [200] * UPLOADS_PER_WINDOW + [429, 429]
    assert refused.status_code == 429 and "at most 30 uploads" in refused.json()["detail"]
    assert theirs.status_code == 200
