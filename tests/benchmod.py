"""A benchmark script (benchmarks/NAME.py) loaded as a module, for unit tests of its pure
parts. benchmarks/ is on sys.path while it loads: its scripts import their neighbours."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from playground.settings import REPO_ROOT


def load(name: str) -> ModuleType:
    sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "benchmarks" /
                                                      f"{name}.py")
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(REPO_ROOT / "benchmarks"))
