"""What every command shares: Settings from flags and the environment, the default prompt."""

from __future__ import annotations

import argparse
from pathlib import Path

from playground.errors import ValidationFailed
from playground.settings import Settings

DEFAULT_PROMPT = "长沙市岳麓区桃花岭路189号润丰园B座1202室 | 电话021-17613435 | 联系人江雨桐"


def settings_of(args: argparse.Namespace) -> Settings:
    proxies = getattr(args, "trusted_proxy", None)
    return Settings.from_env(base_url=getattr(args, "base_url", None),
                             api_key=getattr(args, "api_key", None),
                             model=getattr(args, "model", None),
                             timeout_s=getattr(args, "timeout", None),
                             series_interval_s=getattr(args, "series_interval", None),
                             trusted_proxies=",".join(proxies) if proxies else None)


def out_folder(value: str | None, flag: str = "--out") -> Path | None:
    """An output folder, checked before any work starts (exit 2 names the fix): it may exist
    as a folder or not exist yet, but its parent must."""
    if not value:
        return None
    path = Path(value)
    if path.exists() and not path.is_dir():
        raise ValidationFailed(flag, f"{path} is an existing file -- give a folder (it is "
                               "created if missing)")
    parent = path.absolute().parent
    if not parent.is_dir():
        raise ValidationFailed(flag, f"the folder {parent} does not exist -- create it first, "
                               "or give another path")
    return path


def out_file(value: str, flag: str = "--out") -> Path:
    """An output file, checked the same way: not a folder, in a folder that exists."""
    path = Path(value)
    if path.is_dir():
        raise ValidationFailed(flag, f"{path} is a folder -- give a file name")
    if not path.absolute().parent.is_dir():
        raise ValidationFailed(flag, f"the folder {path.absolute().parent} does not exist -- "
                               "create it first, or give another path")
    return path
