"""The login of a page shared with --auth: USER:PASSWORD pairs checked in constant time, and
repeated wrong logins slowed down.

Gradio awaits `SlowLogin(pairs).check` for each login. Per client address (`ClientAddress`
tells the check who is asking), every check waits its turn (one at a time), and each turn first
waits longer the more wrong logins that address made in the last minute: nothing for the first
few, then 0.25 s, doubling up to 8 s. So guessing from one address, in parallel or not, gets
about one try per 8 s, a person who mistypes once logs in at once, and the operator logging in
from elsewhere is not slowed by anyone's guessing. Nothing about the
attempts (user names, passwords) is logged.

The app's own routes (the live channel, the stage's Run and Stop) use `logged_in`: the same
rule as Gradio's own routes.
"""

from __future__ import annotations

import asyncio
import hmac
import time
from collections import deque
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

from starlette.requests import Request

FREE = 3  # wrong logins per minute (from one address) that cost nothing
FIRST_S, MAX_S, WINDOW_S = 0.25, 8.0, 60.0
MAX_ADDRESSES = 4096  # addresses whose recent wrong logins are remembered

# who is logging in: set by `ClientAddress` around Gradio's login route (Gradio hands `auth`
# the user name and password only)
CLIENT: ContextVar[str] = ContextVar("login_client", default="")


class ClientAddress:
    """ASGI middleware: around a login request, CLIENT holds the visitor's address (the app's
    visitor rule: the peer, or the address a trusted proxy names)."""

    def __init__(self, app: Any, address: Callable[[Request], str]) -> None:
        self.app, self.address = app, address

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") == "http" and str(scope.get("path", "")).rstrip("/").endswith(
                "/login"):
            token = CLIENT.set(self.address(Request(scope)))
            try:
                await self.app(scope, receive, send)
            finally:
                CLIENT.reset(token)
            return
        await self.app(scope, receive, send)


class SlowLogin:
    """The checks, throttled per address: one address's wrong logins slow that address only,
    so an attacker guessing from one place cannot lock the operator out."""

    def __init__(self, pairs: list[tuple[str, str]], *,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._pairs = dict(pairs)
        self._sleep, self._clock = sleep, clock
        self._wrong: dict[str, deque[float]] = {}
        self._turns: dict[str, asyncio.Lock] = {}

    def delay_s(self, who: str = "") -> float:
        """The wait before `who`'s next check (from that address's wrong logins of the last
        minute)."""
        now = self._clock()
        wrong = self._wrong.get(who)
        while wrong and now - wrong[0] > WINDOW_S:
            wrong.popleft()
        extra = (len(wrong) if wrong else 0) - FREE
        return 0.0 if extra < 0 else min(MAX_S, FIRST_S * 2 ** extra)

    def _forget(self) -> None:
        """Keep the table bounded: addresses with nothing recent (and no check running) go."""
        now = self._clock()
        for who in list(self._wrong):
            lock = self._turns.get(who)
            if (not self._wrong[who] or now - self._wrong[who][-1] > WINDOW_S) and not (
                    lock and lock.locked()):
                del self._wrong[who]
                self._turns.pop(who, None)

    async def check(self, username: str, password: str) -> bool:
        """Gradio's `auth` (a coroutine function: Gradio awaits only those -- an object with
        an async __call__ would be called without being awaited, and its coroutine is true)."""
        who = CLIENT.get()
        if len(self._turns) >= MAX_ADDRESSES:
            self._forget()
        async with self._turns.setdefault(who, asyncio.Lock()):  # one at a time per address
            wait = self.delay_s(who)
            if wait:
                await self._sleep(wait)
            want = self._pairs.get(username, "")
            ok = hmac.compare_digest(password.encode(), want.encode()) and bool(want)
            if not ok:
                self._wrong.setdefault(who, deque()).append(self._clock())
            return ok


def logged_in(request: Request) -> bool:
    """Is this request behind the app's login? (Gradio's own rule: with `auth`, the access
    cookie Gradio set at login must name a logged-in user; without `auth`, everyone is.)"""
    app: Any = request.app
    if getattr(app, "auth", None) is None and getattr(app, "auth_dependency", None) is None:
        return True
    cookie_id = getattr(app, "cookie_id", "")
    token = (request.cookies.get(f"access-token-{cookie_id}")
             or request.cookies.get(f"access-token-unsecure-{cookie_id}"))
    return token is not None and token in getattr(app, "tokens", {})
