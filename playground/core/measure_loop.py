"""A private event loop in its own thread for the measuring tasks.

A UI framework does CPU work on its own loop (serialising figures, diffing outputs). If the
requests ran on that loop, every chunk read would wait behind that work and TTFT would grow
with the number of columns on screen. Here the streams are read and stamped on a loop that
does nothing else; the UI only reads the recordings (plain Python objects) from its side.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")


class MeasureLoop:
    def __init__(self, name: str = "measure") -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        """Schedule `coro` on the measuring loop; cancel the returned future to cancel it."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await `coro` from another loop; cancelling the caller cancels the coroutine."""
        fut = self.submit(coro)
        try:
            return await asyncio.wrap_future(fut)
        except asyncio.CancelledError:
            fut.cancel()
            raise

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
