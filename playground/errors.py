"""The project's exception hierarchy: the only exceptions the UI and CLI show to a user.

Every error carries a message a person can act on (what failed, which field, and the fix).
"""

from __future__ import annotations


class PlaygroundError(Exception):
    """Base class. `str(err)` is the user-facing message."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} -- {self.hint}" if self.hint else self.message

    def __reduce__(self) -> tuple[object, ...]:
        # Subclasses take other constructor arguments: rebuild from the state, so an error
        # crosses a process boundary intact (the load path's Ray readers, lab/ray_readers).
        return (_rebuild, (type(self), self.args, self.__dict__))


def _rebuild(cls: type[PlaygroundError], args: tuple[object, ...], state: dict[str, object]
             ) -> PlaygroundError:
    err = cls.__new__(cls)
    Exception.__init__(err, *args)
    err.__dict__.update(state)
    return err


REDACTED = "[redacted]"


def redact(err: PlaygroundError, *secrets: str | None) -> PlaygroundError:
    """`err` with every secret cut from its text, in place: a server that echoes the API key
    it was sent ("Incorrect API key provided: sk-...") must not put it on the page, in a run
    file or in a log."""
    for key in {s for s in secrets if s and s != "EMPTY" and len(s) >= 4}:
        for attr in ("message", "hint", "detail", "reason"):
            value = getattr(err, attr, None)
            if isinstance(value, str) and key in value:
                setattr(err, attr, value.replace(key, REDACTED))
        err.args = tuple(a.replace(key, REDACTED) if isinstance(a, str) else a
                         for a in err.args)
    return err


NOT_SHOWN = ("the server's own words are not shown: the base URL was typed by a visitor of a "
             "shared page")
MAX_DETAIL = 300  # characters of a server's error text that are shown and stored


def opaque(err: PlaygroundError) -> PlaygroundError:
    """`err` with the server's own text replaced by its failure class, in place: what a server
    a visitor typed says (a 403 page, an internal error with a password in it) stays off a
    shared page; the class (HTTP status, "the stream broke", "cannot reach") is kept."""
    if isinstance(err, RequestRejected):
        err.detail = NOT_SHOWN
        err.message = f"server rejected the request: HTTP {err.status}: {NOT_SHOWN}"
    elif isinstance(err, StreamError):
        err.message = f"{err.message.split(':', 1)[0]} ({NOT_SHOWN})"
    else:
        return err
    err.args = (err.message,)
    return err


class ServerUnavailable(PlaygroundError):
    """Nothing answers at the base URL (refused, wrong port, DNS, server still starting)."""

    def __init__(self, base_url: str, reason: str) -> None:
        super().__init__(
            f"cannot reach the vLLM server at {base_url} ({reason})",
            hint="start one with `playground serve`, or pass --base-url of a running server",
        )
        self.base_url = base_url


class RequestTimeout(PlaygroundError):
    """The request (or the gap between two stream chunks) exceeded the configured timeout."""


class RequestRejected(PlaygroundError):
    """The server answered with an HTTP error status (400, 401, 404, 500...)."""

    def __init__(self, status: int, detail: str, *, param: str | None = None) -> None:
        if len(detail) > MAX_DETAIL:  # the server's words, shown and stored: a bounded excerpt
            detail = detail[:MAX_DETAIL] + f"… ({len(detail):,} characters in all)"
        where = f" (parameter: {param})" if param else ""
        super().__init__(f"server rejected the request: HTTP {status}{where}: {detail}",
                         hint=_HINTS.get(status))
        self.status = status
        self.detail = detail
        self.param = param


_HINTS = {
    401: "the API key is missing or wrong (set PLAYGROUND_API_KEY or --api-key)",
    404: "the model name is not served here; see `playground models` or /v1/models",
}


class StreamError(PlaygroundError):
    """The stream broke after it started (error event, malformed SSE, connection dropped)."""


class ValidationFailed(PlaygroundError):
    """Bad input caught before anything was sent. `field` names what to fix."""

    def __init__(self, field: str, reason: str, *, source: str | None = None) -> None:
        origin = f"{source}: " if source else ""
        super().__init__(f"{origin}{field}: {reason}")
        self.field = field
        self.reason = reason
        self.source = source


class PresetError(ValidationFailed):
    """A preset / experiment / server YAML file is invalid (file, field, reason)."""


class ServerStartError(PlaygroundError):
    """A managed vLLM server did not become healthy."""
