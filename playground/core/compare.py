"""One comparison: resolve the model, build every variant's request, run them side by side."""

from __future__ import annotations

from collections.abc import Sequence

from playground.core import request
from playground.core.client import ClientPool, ServerInfo, fetch_server_info
from playground.core.preflight import check_prompt, preflight
from playground.core.runner import Recording, new_recording, run_to_end
from playground.errors import ValidationFailed
from playground.settings import Settings
from playground.specs.presets import Variant


def pick_model(settings: Settings, info: ServerInfo) -> str:
    """The configured model (checked against what the server serves) or its first one."""
    names = [m.id for m in info.models]
    if settings.model:
        if names and settings.model not in names:
            raise ValidationFailed("model", f"{settings.model!r} is not served at "
                                   f"{settings.base_url}; served: {', '.join(names)}")
        return settings.model
    if not names:
        raise ValidationFailed("model", f"the server at {settings.base_url} serves no model")
    return names[0]


def resolve_model(settings: Settings) -> tuple[str, str | None]:
    """(model name, server version): the configured model or the server's first one."""
    info = fetch_server_info(settings.base_url, settings.api_key_value())
    return pick_model(settings, info), info.version


async def compare(settings: Settings, variants: Sequence[Variant], prompt: str, *,
                  sequential: bool = False) -> list[Recording]:
    """Every variant checked against the server's limits first (nothing is sent when one
    cannot fit), then all of them run side by side."""
    check_prompt(prompt)
    info = fetch_server_info(settings.base_url, settings.api_key_value())
    model = pick_model(settings, info)
    limit = next((m.max_model_len for m in info.models if m.id == model), None)
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
