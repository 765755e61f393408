"""The `odcf` command. Each subcommand lives in its own small module in this package
and exposes ``register(subparsers)``; the handler it sets returns an exit code.

User mistakes become one clear line on stderr and a non-zero exit code, never a traceback.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import logging
import sys
from collections.abc import Sequence

from odcf import __version__
from odcf.errors import OdcfError

#: Subcommand modules, in the order `odcf --help` lists them. A module not present in
#: this build is skipped (so a light install still has a working CLI).
COMMANDS = (
    "compress", "plan", "ontology", "analyze", "batch", "handoff",
    "replay", "verify", "train", "export", "eval",
)

EXIT_USAGE = 2
EXIT_ERROR = 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="odcf",
        description="Ontology-driven context compression for LLM agents.",
    )
    parser.add_argument("--version", action="version", version=f"odcf {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-v info, -vv debug)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        module_name = f"odcf.cli.{name}_cmd"
        if importlib.util.find_spec(module_name) is None:
            continue
        importlib.import_module(module_name).register(sub)
    return parser


class CliLogFormatter(logging.Formatter):
    """Log lines on stderr: a warning or error the library logs reads as the command's own lines do,
    ``odcf batch: warning: …``; the info and debug lines of ``-v``/``-vv`` keep the logger's name.

    QA s31: a batch job's warnings came out as ``WARNING odcf.batch.job: --query-field 'question': …``
    beside ``odcf batch: error: …`` and ``odcf compress: warning: …``.

    >>> import logging
    >>> f = CliLogFormatter("odcf batch")
    >>> f.format(logging.makeLogRecord({"levelno": logging.WARNING, "msg": "no record has %r", "args": ("q",)}))
    "odcf batch: warning: no record has 'q'"
    >>> f.format(logging.makeLogRecord({"levelno": logging.DEBUG, "levelname": "DEBUG", "name": "odcf.x", "msg": "m"}))
    'DEBUG odcf.x: m'
    """

    def __init__(self, prog: str) -> None:
        super().__init__("%(levelname)s %(name)s: %(message)s")
        self.prog = prog

    def format(self, record: logging.LogRecord) -> str:
        if record.levelno < logging.WARNING:
            return super().format(record)
        word = "warning" if record.levelno < logging.ERROR else "error"
        line = f"{self.prog}: {word}: {record.getMessage()}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def main(argv: Sequence[str] | None = None) -> int:
    from odcf.cli.common import utf8_output

    utf8_output()
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.WARNING - 10 * min(args.verbose, 2)
    handler = logging.StreamHandler()
    handler.setFormatter(CliLogFormatter(f"odcf {args.command}" if args.command else "odcf"))
    logging.basicConfig(level=level, handlers=[handler])
    if not getattr(args, "handler", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    old_term = _on_sigterm()
    try:
        return int(args.handler(args) or 0)
    except OdcfError as exc:
        print(f"odcf {args.command}: error: {exc}", file=sys.stderr)
        return getattr(exc, "exit_code", EXIT_ERROR)
    except BrokenPipeError:  # pragma: no cover - `odcf ... | head`
        return 0
    except KeyboardInterrupt as exc:
        how = getattr(exc, "how", "interrupted")
        hint = getattr(exc, "hint", "")
        print(f"odcf: {how}{'; ' + hint if hint else ''}", file=sys.stderr)
        return 143 if how == "terminated" else 130
    finally:
        if old_term is not None:
            import signal

            signal.signal(signal.SIGTERM, old_term)


def _on_sigterm() -> object:
    """Make SIGTERM stop a command as Ctrl-C does (cleanup runs, one line says so) instead of ending
    the process at once; the handler it replaces, or None where none can be set (not the main thread)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None

    def terminate(signum: int, frame: object) -> None:
        from odcf.errors import Interrupted

        raise Interrupted("terminated")

    return signal.signal(signal.SIGTERM, terminate)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
