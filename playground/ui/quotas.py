"""What one visitor of a shared page may store on the operator's disk: uploads and saved
presets, counted per visitor address over a sliding window (on your own machine: no caps).

- `UploadQuota`: ASGI middleware around Gradio's upload route. An address may upload
  UPLOADS_PER_WINDOW uploads per WINDOW_S (each is at most the recording limit, checked by
  Gradio); past that the route answers 429 naming the limit, before a byte is stored.
- `Quota`: the same count for the app's own writes (a saved preset); `take` raises a
  ValidationFailed naming the field and when to try again.

Only the last MAX_ADDRESSES addresses are remembered (the least recently seen are dropped).
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any

from starlette.requests import Request

from playground.errors import ValidationFailed

WINDOW_S = 3600.0
UPLOADS_PER_WINDOW = 30  # recordings a visitor may upload an hour (each at most the size cap)
PRESETS_PER_WINDOW = 12  # presets a visitor may save an hour (saving one's own again is free)
MAX_ADDRESSES = 4096


class Quota:
    """`limit` uses per address per `window_s` seconds."""

    def __init__(self, limit: int, window_s: float = WINDOW_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.limit, self.window_s, self.clock = limit, window_s, clock
        self._uses: OrderedDict[str, deque[float]] = OrderedDict()

    def wait_s(self, who: str) -> float:
        """0 when `who` may use one more now; otherwise the seconds until they may."""
        now = self.clock()
        uses = self._uses.get(who)
        if uses is None:
            return 0.0
        while uses and now - uses[0] >= self.window_s:
            uses.popleft()
        return 0.0 if len(uses) < self.limit else self.window_s - (now - uses[0])

    def use(self, who: str) -> None:
        uses = self._uses.setdefault(who, deque())
        uses.append(self.clock())
        self._uses.move_to_end(who)
        while len(self._uses) > MAX_ADDRESSES:
            self._uses.popitem(last=False)

    def take(self, who: str, what: str, field: str) -> None:
        """Count one use of `what`, or raise ValidationFailed(`field`) past the limit."""
        wait = self.wait_s(who)
        if wait > 0:
            raise ValidationFailed(field, f"at most {self.limit} {what} per visitor an hour "
                                   f"on this page -- try again in {wait / 60:.0f} min")
        self.use(who)


class UploadQuota:
    """ASGI middleware: Gradio's upload route, counted per visitor address."""

    def __init__(self, app: Any, address: Callable[[Request], str],
                 quota: Quota | None = None) -> None:
        self.app, self.address = app, address
        self.quota = quota or Quota(UPLOADS_PER_WINDOW)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if (scope.get("type") == "http" and scope.get("method") == "POST"
                and str(scope.get("path", "")).rstrip("/").endswith("/upload")):
            who = self.address(Request(scope))
            wait = self.quota.wait_s(who)
            if wait > 0:
                body = json.dumps({"detail": f"upload: at most {self.quota.limit} uploads per "
                                   f"visitor an hour on this page -- try again in "
                                   f"{wait / 60:.0f} min"}).encode()
                await send({"type": "http.response.start", "status": 429,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"retry-after", str(int(wait) + 1).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
            self.quota.use(who)
        await self.app(scope, receive, send)
