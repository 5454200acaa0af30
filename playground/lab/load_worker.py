"""One worker process of the load path (lab/load): `python -m playground.lab.load_worker`.

Reads its job from stdin (one length-prefixed pickle: worker number, requests, concurrency,
client settings), says "ready", waits for the start byte, runs its requests with the core runner
and writes each finished recording back on stdout at once, then "end". Anything printed goes to
stderr: stdout carries only the frames. When the parent goes away (stdin closes) it exits, so a
killed parent never leaves a worker loading the server.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import struct
import sys
import threading
from typing import Any, BinaryIO

from playground.core.runner import Recording, new_recording, run_many
from playground.lab.load import LoadClient, frame, payload


def _read(stream: BinaryIO) -> Any:
    head = stream.read(4)
    if len(head) < 4:
        raise SystemExit(2)
    return pickle.loads(stream.read(struct.unpack("!I", head)[0]))


def _exit_when_parent_leaves(stream: BinaryIO) -> None:
    stream.read()  # blocks until the parent closes our stdin (it exited or was killed)
    os._exit(3)


def main() -> int:
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # stray prints go to stderr, never into the frames
    stdin = sys.stdin.buffer
    w, items, concurrency, client = _read(stdin)
    assert isinstance(client, LoadClient)
    recs = [new_recording(v, req, url) for _, v, req, url in items]
    index = {id(r): i for (i, *_), r in zip(items, recs, strict=True)}
    lock = threading.Lock()

    def send(obj: object) -> None:
        with lock:
            out.write(frame(obj))

    def done(rec: Recording) -> None:
        send(("done", index[id(rec)], payload(rec)))

    async def run() -> None:
        pool = client.pool()
        try:
            await run_many(pool, recs, concurrency=concurrency, timeout_s=client.timeout_s,
                           on_done=done)
        finally:
            await pool.aclose()

    send(("ready", w, None))
    if stdin.read(1) != b"g":
        return 2
    threading.Thread(target=_exit_when_parent_leaves, args=(stdin,), daemon=True).start()
    asyncio.run(run())
    send(("end", w, None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
