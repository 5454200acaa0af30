"""What a file may hold before it is used: its size, how deep it nests, how many values it has.

Presets, experiments, ladders, server presets (YAML) and replay recordings (JSON, JSONL) come
from files someone hands over -- on a shared page, a stranger's upload. Each is read through
here first, so random bytes, a 100,000-deep nesting, a YAML alias bomb or a recording with a
million tokens becomes an error that names the file and the limit, not a crash, a hung handler
or a gigabyte of memory.
"""

from __future__ import annotations

import json
from pathlib import Path

from playground.errors import PresetError

MAX_DEPTH = 32  # no preset, experiment or recording nests deeper than ~8
MAX_SPEC_BYTES = 256 * 2**10  # a preset / experiment / ladder / server YAML
MAX_SPEC_VALUES = 20_000


def read_text(path: Path, max_bytes: int) -> str:
    """The file's text; PresetError naming the file when it is too large, unreadable or not
    UTF-8 (random bytes)."""
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise PresetError("(file)", f"is {size:,} bytes; the limit is {max_bytes:,} "
                              f"({max_bytes / 2**20:g} MiB)", source=str(path))
        data = path.read_bytes()
    except OSError as e:
        raise PresetError("(file)", f"cannot read: {e.strerror}", source=str(path)) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise PresetError("(file)", f"is not UTF-8 text (byte {e.start:,}) -- is it the right "
                          "file?", source=str(path)) from None


def parse_json(text: str, source: str) -> object:
    try:
        return json.loads(text)
    except RecursionError:
        raise PresetError("(file)", f"nests deeper than {MAX_DEPTH} levels",
                          source=source) from None
    except ValueError as e:
        raise PresetError("(file)", f"not valid JSON: {e}", source=source) from None


def check_tree(data: object, source: str, *, max_values: int, max_depth: int = MAX_DEPTH
               ) -> None:
    """Walk the parsed data (without recursion) and stop at the first limit crossed."""
    todo: list[tuple[object, int]] = [(data, 1)]
    seen = 0
    while todo:
        node, depth = todo.pop()
        seen += 1
        if seen > max_values:
            raise PresetError("(file)", f"holds more than {max_values:,} values", source=source)
        if depth > max_depth:
            raise PresetError("(file)", f"nests deeper than {max_depth} levels", source=source)
        if isinstance(node, dict):
            todo.extend((v, depth + 1) for v in node.values())
            seen += len(node)  # the keys
        elif isinstance(node, list | tuple):
            todo.extend((v, depth + 1) for v in node)
