"""The login of a page shared with --auth: USER:PASSWORD pairs checked in constant time, and
repeated wrong logins slowed down.

Gradio awaits `SlowLogin(pairs).check` for each login. Every check waits its turn (one at a
time), and each turn first waits longer the more wrong logins there were in the last minute:
nothing for the first few, then 0.25 s, doubling up to 8 s. So guessing, in parallel or not,
gets about one try per 8 s, while a person who mistypes once logs in at once. Nothing about the
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
from typing import Any

from starlette.requests import Request

FREE = 3  # wrong logins per minute that cost nothing
FIRST_S, MAX_S, WINDOW_S = 0.25, 8.0, 60.0


class SlowLogin:
    def __init__(self, pairs: list[tuple[str, str]], *,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._pairs = dict(pairs)
        self._sleep, self._clock = sleep, clock
        self._wrong: deque[float] = deque()
        self._turn = asyncio.Lock()

    def delay_s(self) -> float:
        """The wait before the next check (from the wrong logins of the last minute)."""
        now = self._clock()
        while self._wrong and now - self._wrong[0] > WINDOW_S:
            self._wrong.popleft()
        extra = len(self._wrong) - FREE
        return 0.0 if extra < 0 else min(MAX_S, FIRST_S * 2 ** extra)

    async def check(self, username: str, password: str) -> bool:
        """Gradio's `auth` (a coroutine function: Gradio awaits only those -- an object with
        an async __call__ would be called without being awaited, and its coroutine is true)."""
        async with self._turn:
            wait = self.delay_s()
            if wait:
                await self._sleep(wait)
            want = self._pairs.get(username, "")
            ok = hmac.compare_digest(password.encode(), want.encode()) and bool(want)
            if not ok:
                self._wrong.append(self._clock())
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
