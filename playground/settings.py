"""One Settings object, read from the environment (prefix PLAYGROUND_) and passed down.

No module keeps mutable global state; callers receive a Settings and pass it on.

Where things live: the shipped presets are the repository's presets/ in a source checkout and
package data (playground/presets_data) in an installed wheel. User data -- runs/,
user_presets/ and .cache/ -- goes next to the checkout when running from one (as the README's
commands do), and otherwise to PLAYGROUND_HOME or the user's data and cache directories
(XDG_DATA_HOME / XDG_CACHE_HOME), never into site-packages.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent  # a source checkout's root (meaningless in an installed wheel)
APP = "qwen-latency-lab"


def is_checkout() -> bool:
    return (REPO_ROOT / "pyproject.toml").is_file() and (REPO_ROOT / "presets").is_dir()


def shipped_presets() -> Path:
    return REPO_ROOT / "presets" if is_checkout() else PACKAGE_DIR / "presets_data"


def _xdg(var: str, fallback: str) -> Path:
    base = os.environ.get(var)
    return Path(base) if base else Path.home() / fallback


def data_home() -> Path:
    """Where runs and user presets go."""
    if os.environ.get("PLAYGROUND_HOME"):
        return Path(os.environ["PLAYGROUND_HOME"])
    return REPO_ROOT if is_checkout() else _xdg("XDG_DATA_HOME", ".local/share") / APP


def cache_home() -> Path:
    if os.environ.get("PLAYGROUND_HOME"):
        return Path(os.environ["PLAYGROUND_HOME"]) / ".cache"
    return REPO_ROOT / ".cache" if is_checkout() else _xdg("XDG_CACHE_HOME", ".cache") / APP
DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"
DEFAULT_MODEL = "Qwen/Qwen3-0.6B"


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = DEFAULT_BASE_URL
    api_key: SecretStr | None = None
    # "user:password" (comma-separated for several) protecting a shared UI; never logged
    auth: SecretStr | None = None
    # None = ask the server (/v1/models) and take the first served model.
    model: str | None = None
    timeout_s: float = Field(default=120.0, gt=0, description="whole-request timeout")
    connect_timeout_s: float = Field(default=5.0, gt=0)
    # Gap allowed between two stream chunks before the request counts as stalled.
    read_timeout_s: float = Field(default=60.0, gt=0)
    # A Playground run that no page follows, or a /compare call whose results no stream reads,
    # for this long is stopped (its visitor left): the server and the run slot are freed.
    gone_after_s: float = Field(default=20.0, gt=0)
    presets_dir: Path = Field(default_factory=shipped_presets)
    user_presets_dir: Path = Field(default_factory=lambda: data_home() / "user_presets")
    cache_dir: Path = Field(default_factory=cache_home)
    runs_dir: Path = Field(default_factory=lambda: data_home() / "runs")
    # The Python whose `vllm` managed servers run with (another venv, a GPU install);
    # None = this interpreter.
    vllm_python: str | None = None
    # The GPU a (remote) server runs on, e.g. "H200", for the physical floor; None = this
    # machine's GPU (or CPU) when the server is local.
    accelerator: str | None = None
    # Warm-up (each preset's path and each schema's grammar once) of the server: "auto" = one
    # that the embedded default or `playground serve` started, "always" = also one reused,
    # "off" = never.
    warmup: Literal["auto", "always", "off"] = "auto"
    # On a shared page each visitor's lists (replay recordings, past runs) show that visitor's
    # own runs only; True (`playground ui --all-runs`, the operator's own machine) shows all.
    list_all_runs: bool = False
    # Reverse proxies in front of the app (comma-separated addresses; `--trusted-proxy`): a
    # request that comes from one of them is the visitor named in its X-Forwarded-For. From
    # any other address that header is the client's own words, and ignored.
    trusted_proxies: str = ""
    # A shared page (--share, a Space, --auth, a non-loopback host) keeps server powers and
    # other base URLs with the operator; these let its visitors have them (the flags of the
    # same names): start, stop and restart servers, model directories, benchmarks and claims
    # that start servers -- and type a base URL other than the configured ones.
    allow_visitor_servers: bool = False
    allow_visitor_urls: bool = False
    # ... and those URLs may be private: loopback, private networks, link-local (cloud
    # metadata) -- refused by default, since the app sends from the operator's machine
    allow_private_urls: bool = False
    # How often a benchmark or sweep samples the server's /metrics (and GPUs), in seconds;
    # 0 = not at all; None = 0.25, or 2 where the server shares a small machine with us
    # (server/series.interval_for says why)
    series_interval_s: float | None = Field(default=None, ge=0)
    # benchmarks/ui_fidelity only: stamp every live message with its send time and log each
    # one's arrival in the page (window.qllFeedLog); off in normal use
    ui_instrument: bool = False

    def proxies(self) -> frozenset[str]:
        return frozenset(a.strip() for a in self.trusted_proxies.split(",") if a.strip())

    @field_validator("trusted_proxies")
    @classmethod
    def _addresses(cls, value: str) -> str:
        import ipaddress

        for a in value.split(","):
            if a.strip():
                try:
                    ipaddress.ip_address(a.strip())
                except ValueError:
                    raise ValueError(f"{a.strip()[:60]!r} is not an IP address -- give the "
                                     "proxy's address, e.g. 127.0.0.1") from None
        return value

    def server_python(self) -> str:
        import sys

        return self.vllm_python or sys.executable

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, **overrides: object) -> Settings:
        """Build from PLAYGROUND_* variables; explicit overrides (e.g. CLI flags) win."""
        env = dict(os.environ if env is None else env)
        values: dict[str, object] = {}
        for name in cls.model_fields:
            raw = env.get(f"PLAYGROUND_{name.upper()}")
            if raw:
                values[name] = raw
        values.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls.model_validate(values)
        except ValidationError as e:  # the first bad field, named as the user set it
            from playground.errors import ValidationFailed

            err = e.errors()[0]
            name = str(err["loc"][0]) if err["loc"] else "settings"
            where = FLAGS.get(name, f"PLAYGROUND_{name.upper()}")
            raise ValidationFailed(f"{name} ({where})", str(err["msg"]).removeprefix(
                "Value error, ")) from None

    def auth_pairs(self) -> list[tuple[str, str]]:
        """PLAYGROUND_AUTH / --auth as (user, password) pairs; ValidationFailed if malformed."""
        from playground.errors import ValidationFailed

        if self.auth is None:
            return []
        pairs = []
        for item in self.auth.get_secret_value().split(","):
            user, sep, password = item.strip().partition(":")
            if not sep or not user or not password:
                raise ValidationFailed("auth", "expected USER:PASSWORD (several separated by "
                                       "commas)")
            pairs.append((user, password))
        return pairs

    def api_key_value(self) -> str:
        """The key for the HTTP header only; never log or display the result."""
        return self.api_key.get_secret_value() if self.api_key else "EMPTY"

    def api_key_for(self, base_url: str) -> str:
        """The configured key, for the server it was configured for only: any other base URL
        (one a visitor typed into a shared UI) gets "EMPTY", never the operator's key."""
        return self.api_key_value() if same_server(base_url, self.base_url) else "EMPTY"

    @field_validator("base_url")
    @classmethod
    def _http_only(cls, value: str) -> str:
        return check_base_url(value) if value else value  # "" = no server (replay mode)


FLAGS = {"base_url": "--base-url / PLAYGROUND_BASE_URL", "timeout_s": "--timeout / "
         "PLAYGROUND_TIMEOUT_S", "api_key": "--api-key / PLAYGROUND_API_KEY",
         "model": "--model / PLAYGROUND_MODEL",
         "trusted_proxies": "--trusted-proxy / PLAYGROUND_TRUSTED_PROXIES",
         "series_interval_s": "--series-interval / PLAYGROUND_SERIES_INTERVAL_S"}


def check_base_url(url: str) -> str:
    """An http(s) URL with a host, stripped; ValueError naming the fix otherwise (file://,
    a bare host, text with spaces: nothing is ever sent there)."""
    url = str(url).strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or any(
            c.isspace() for c in url):
        raise ValueError(f"{url[:80]!r} is not an http(s) URL -- use e.g. "
                         f"{DEFAULT_BASE_URL}")
    try:
        parts.port  # noqa: B018 (raises on a port that is not a number)
    except ValueError:
        raise ValueError(f"{url[:80]!r} has a bad port -- use e.g. {DEFAULT_BASE_URL}") from None
    return url


def same_server(a: str, b: str) -> bool:
    """The same scheme, host, port and path (a trailing slash aside)."""
    def norm(url: str) -> tuple[str, str, int | None, str]:
        p = urlsplit(url.strip())
        try:
            port = p.port or {"http": 80, "https": 443}.get(p.scheme)
        except ValueError:
            port = -1
        return p.scheme.lower(), (p.hostname or "").lower(), port, p.path.rstrip("/")
    return bool(a and b) and norm(a) == norm(b)
