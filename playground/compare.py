"""One comparison: resolve the model, build every variant's request, run them side by side."""

from __future__ import annotations

from collections.abc import Sequence

from . import request
from .client import ClientPool, fetch_server_info
from .errors import PlaygroundError, ValidationFailed
from .preflight import check_prompt, preflight
from .presets import Variant
from .runner import Recording, new_recording, run_to_end
from .settings import Settings


def resolve_model(settings: Settings) -> tuple[str, str | None]:
    """(model name, server version): the configured model or the server's first one."""
    info = fetch_server_info(settings.base_url, settings.api_key_value())
    names = [m.id for m in info.models]
    if settings.model:
        if names and settings.model not in names:
            raise ValidationFailed("model", f"{settings.model!r} is not served at "
                                   f"{settings.base_url}; served: {', '.join(names)}")
        return settings.model, info.version
    if not names:
        raise ValidationFailed("model", f"the server at {settings.base_url} serves no model")
    return names[0], info.version


def context_length(settings: Settings, model: str) -> int | None:
    """The served model's max_model_len, when the server states it."""
    try:
        info = fetch_server_info(settings.base_url, settings.api_key_value())
    except PlaygroundError:
        return None
    return next((m.max_model_len for m in info.models if m.id == model), None)


async def compare(settings: Settings, variants: Sequence[Variant], prompt: str, *,
                  sequential: bool = False) -> list[Recording]:
    """Every variant checked against the server's limits first (nothing is sent when one
    cannot fit), then all of them run side by side."""
    if not prompt.strip():
        raise ValidationFailed("prompt", "is empty; pass --prompt TEXT")
    check_prompt(prompt)
    model, _ = resolve_model(settings)
    limit = context_length(settings, model)
    for v in variants:
        preflight(v.base_url or settings.base_url, settings.api_key_value(), model, limit, v,
                  prompt)
    recs = [new_recording(v, request.build(v, prompt, model), v.base_url or settings.base_url)
            for v in variants]
    pool = ClientPool(settings.api_key_value(), connect_timeout_s=settings.connect_timeout_s,
                      read_timeout_s=settings.read_timeout_s, timeout_s=settings.timeout_s)
    try:
        await run_to_end(pool, recs, mode="sequential" if sequential else "concurrent",
                         timeout_s=settings.timeout_s)
    finally:
        await pool.aclose()
    return recs
