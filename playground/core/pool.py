"""The pool of chat backends: one per (base URL, client), shared by every request to that server.

A variant's `client` picks the reader: "openai" (core/client, the SDK), "raw" (core/wire),
"langchain" (core/langchain_client); the last two are imported only when asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from playground.core.client import Backend
from playground.errors import PlaygroundError, opaque, redact
from playground.settings import same_server

ClientName = Literal["openai", "raw", "langchain"]


class ClientPool:
    """One backend per (base URL, client), shared by every request to that server.

    A variant's `client` picks the reader: "openai" (the SDK, what "View code" shows) or "raw"
    (core/wire: the same body, parsed the way vllm bench serve does) or "langchain"
    (core/langchain_client: langchain-openai's ChatOpenAI). "auto" is `auto_client`:
    the SDK in the Playground, the raw reader in the benchmark lab (docs/load.md)."""

    def __init__(self, api_key: str, *, auto_client: ClientName = "openai",
                 hides_text: Callable[[str], bool] | None = None, key_for: str | None = None,
                 **timeouts: float) -> None:
        self._api_key = api_key
        # the one base URL the key belongs to (None: every URL this pool is asked for); any
        # other server -- one an experiment or a server preset started -- gets no key
        self.key_for = key_for
        # base URL -> whether its server's own error text stays off the page (a URL typed by
        # a visitor of a shared page: errors.opaque)
        self.hides_text = hides_text
        self._timeouts = timeouts
        self.auto_client: ClientName = auto_client
        self._backends: dict[tuple[str, str], Any] = {}

    def redact(self, err: PlaygroundError, base_url: str = "") -> PlaygroundError:
        """A server's error, less this pool's API key (a server may echo it back), and less the
        server's own words where `hides_text` says so for its base URL."""
        if base_url and self.hides_text is not None and self.hides_text(base_url):
            opaque(err)
        return redact(err, self._api_key)

    def resolve(self, client: str) -> ClientName:
        return self.auto_client if client == "auto" else client  # type: ignore[return-value]

    def get(self, base_url: str, client: str = "auto") -> Any:
        name = self.resolve(client)
        key = (base_url.rstrip("/"), name)
        api_key = self._api_key if self.key_for is None or same_server(
            base_url, self.key_for) else "EMPTY"
        if key not in self._backends:
            if name == "raw":
                from playground.core.wire import RawBackend  # aiohttp: only when asked for

                self._backends[key] = RawBackend(key[0], api_key, **self._timeouts)
            elif name == "langchain":
                from playground.core.langchain_client import LangChainBackend

                self._backends[key] = LangChainBackend(key[0], api_key, **self._timeouts)
            else:
                self._backends[key] = Backend(key[0], api_key, **self._timeouts)
        return self._backends[key]

    async def aclose(self) -> None:
        for b in self._backends.values():
            await b.aclose()
        self._backends.clear()
