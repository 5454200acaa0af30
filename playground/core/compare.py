"""One comparison: resolve the model, check and build every variant's request, run them side by
side. `prepare` is shared by the CLI, the API endpoint and the Playground tab, so all of them
check the served model, the prompt and the context length the same way."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from playground.core import request
from playground.core.port import LIVE, Port
from playground.core.preflight import check_prompt, preflight
from playground.core.runner import Mode, Recording, new_recording, run_to_end
from playground.errors import ValidationFailed
from playground.server.http import ServerInfo
from playground.settings import Settings
from playground.specs.presets import Variant


def pick_model(wanted: str | None, info: ServerInfo) -> str:
    """The wanted model (checked against what the server serves) or its first one."""
    names = [m.id for m in info.models]
    if wanted:
        if names and wanted not in names:
            raise ValidationFailed("model", f"{wanted!r} is not served at {info.base_url}; "
                                   f"served: {', '.join(names)}")
        return wanted
    if not names:
        raise ValidationFailed("model", f"the server at {info.base_url} serves no model")
    return names[0]


@dataclass
class Prepared:
    """Per variant, in order: its Recording ready to run, or why it was not sent."""

    info: ServerInfo
    model: str
    slots: list[Recording | ValidationFailed]

    @property
    def recordings(self) -> list[Recording]:
        return [s for s in self.slots if isinstance(s, Recording)]

    def first_error(self) -> ValidationFailed | None:
        return next((s for s in self.slots if isinstance(s, ValidationFailed)), None)


async def prepare(base_url: str, api_key: str, model: str | None, variants: Sequence[Variant],
                  prompt: str, *, port: Port = LIVE) -> Prepared:
    """Ask the server once, then check each variant against its limits; a variant that cannot
    fit is reported in its slot and nothing is sent for it."""
    check_prompt(prompt)
    info = await port.info(base_url, api_key)
    chosen = pick_model(model, info)
    found = info.model(chosen)
    limit = found.max_model_len if found else None
    slots: list[Recording | ValidationFailed] = []
    for v in variants:
        url = v.base_url or base_url
        try:
            await preflight(url, api_key, chosen, limit, v, prompt,
                            token_count=port.token_count)
        except ValidationFailed as e:
            slots.append(e)
            continue
        slots.append(new_recording(v, request.build(v, prompt, chosen), url))
    return Prepared(info, chosen, slots)


async def compare(settings: Settings, variants: Sequence[Variant], prompt: str, *,
                  sequential: bool = False, port: Port = LIVE) -> list[Recording]:
    """Every variant checked against the server's limits first (nothing is sent when one
    cannot fit), then all of them run side by side."""
    prepared = await prepare(settings.base_url, settings.api_key_value(), settings.model,
                             variants, prompt, port=port)
    error = prepared.first_error()
    if error is not None:
        raise error
    recs = prepared.recordings
    pool = port.pool(settings)
    mode: Mode = "sequential" if sequential else "concurrent"
    try:
        await run_to_end(pool, recs, mode=mode, timeout_s=settings.timeout_s)  # type: ignore[arg-type]
    finally:
        await pool.aclose()
    return recs


async def resolve_model(settings: Settings, port: Port = LIVE) -> tuple[str, str | None]:
    """(model name, server version): the configured model or the server's first one."""
    info = await port.info(settings.base_url, settings.api_key_value())
    return pick_model(settings.model, info), info.version
