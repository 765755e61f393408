"""Helpers shared by CLI commands."""
from __future__ import annotations

import argparse
import os
import tempfile
from typing import Any


def add_stage_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--enable", action="append", default=[], metavar="STAGE",
                   help="switch a pipeline stage on (repeatable), e.g. --enable rerank")
    p.add_argument("--disable", action="append", default=[], metavar="STAGE",
                   help="switch a pipeline stage off (repeatable), e.g. --disable fold")


def stage_overrides(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in getattr(args, "enable", []) or []:
        out[name] = True
    for name in getattr(args, "disable", []) or []:
        out[name] = False
    return out


def write_text(path: str, text: str) -> None:
    """Write atomically: a temp file in the same folder, then rename."""
    folder = os.path.dirname(os.path.abspath(path)) or "."
    fd, tmp = tempfile.mkstemp(prefix=".odcf-", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
