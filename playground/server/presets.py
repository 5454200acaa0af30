"""Server presets (presets/servers/*.yaml): flags applied on top of the machine's base config.

A preset may name its model (`model:`, a path, hub id or "real-small") and its engine
(`engine: transformers`); every other key is a ServerConfig field.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from playground.server.managed import ServerConfig


class ServerPreset(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str = ""
    flags: dict[str, object] = {}

    @property
    def model(self) -> str | None:
        """A model the preset serves (a path, hub id or "real-small"), chosen by the caller's
        server_config rather than applied as a flag: it decides the whole base config."""
        found = self.flags.get("model")
        return str(found) if found is not None else None

    @property
    def engine(self) -> str:
        return str(self.flags.get("engine", "vllm"))

    def apply(self, base: ServerConfig) -> ServerConfig:
        flags = dict(self.flags)
        flags.pop("model", None)
        if base.cpu_kv_cache_gib is not None:
            # On the CPU backend the memory fraction is of system RAM: keep the base's setting
            flags.pop("gpu_memory_utilization", None)
        return ServerConfig.model_validate({**base.model_dump(), **flags})


def load_server_presets(presets_dir: Path) -> tuple[dict[str, ServerPreset], list[str]]:
    """All server presets, and readable errors (file, field, reason) for the bad ones."""
    from pydantic import ValidationError

    from playground.specs.presets import PresetError, first_error, load_yaml

    presets: dict[str, ServerPreset] = {}
    errors: list[str] = []
    for path in sorted((presets_dir / "servers").glob("*.yaml")):
        try:
            data = load_yaml(path)
            if not isinstance(data, dict):
                raise PresetError("(file)", "expected a mapping", source=str(path))
            flags = {k: v for k, v in data.items() if k not in ("name", "description")}
            preset = ServerPreset(name=data.get("name", path.stem),
                                  description=data.get("description", ""), flags=flags)
            preset.apply(ServerConfig(model="check"))  # validates every flag
            presets[preset.name] = preset
        except PresetError as e:
            errors.append(str(e))
        except ValidationError as e:
            field, reason = first_error(e)
            errors.append(str(PresetError(field, reason, source=str(path))))
    return presets, errors
