"""A server that accepts connections and then never answers (`hang`), or answers one byte a
second (`trickle`): what a real vLLM server cannot be made to do on demand. It notes, on the
test's clock (time.monotonic), when each connection arrived and when the client gave up on it,
so a test can order events without asserting durations."""

from __future__ import annotations

import select
import socket
import threading
import time


class SlowServer:
    def __init__(self, mode: str) -> None:
        assert mode in ("hang", "trickle")
        self.mode = mode
        self.arrived: list[float] = []
        self.closed: list[float] = []
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self.port = self._sock.getsockname()[1]
        self._stop = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> SlowServer:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._sock.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self.arrived.append(time.monotonic())
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            if self.mode == "hang":
                while not self._stop.is_set() and conn.recv(4096):
                    pass  # reads the request, answers nothing; b"" = the client gave up
            else:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Content-Length: 100000\r\n\r\n")
                while not self._stop.is_set():
                    conn.sendall(b" ")
                    ready, _, _ = select.select([conn], [], [], 1.0)  # one byte a second
                    if ready and not conn.recv(4096):
                        break  # the client gave up (noticed at once, not at the next send)
        except OSError:
            pass
        finally:
            self.closed.append(time.monotonic())
            conn.close()
