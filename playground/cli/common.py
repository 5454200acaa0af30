"""What every command shares: Settings from flags and the environment, the default prompt."""

from __future__ import annotations

import argparse

from playground.settings import Settings

DEFAULT_PROMPT = "长沙市岳麓区桃花岭路189号润丰园B座1202室 | 电话021-17613435 | 联系人江雨桐"


def settings_of(args: argparse.Namespace) -> Settings:
    return Settings.from_env(base_url=getattr(args, "base_url", None),
                             api_key=getattr(args, "api_key", None),
                             model=getattr(args, "model", None),
                             timeout_s=getattr(args, "timeout", None))
