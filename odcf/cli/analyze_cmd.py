"""`odcf analyze FILE... --ontology ONT [--role R] [--query Q] [--budget N] [--json] [--html FILE]` —
the context health report: tokens per source and layer, entity density, repeated structure,
noise, and what each stage would save. Also adds ``--html FILE`` to ``odcf compress``."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from odcf.cli.common import (
    TOKENIZER_HELP,
    add_stage_flags,
    refuse_overwrites,
    stage_overrides,
    text_arg,
)
from odcf.document import LAYERS
from odcf.fileio import write_text


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "analyze",
        help="health report: where the tokens are and what compression would do",
        description="Measure FILE... under an ontology's plan: tokens per source and layer, entity density, "
                    "repeated structure, noise, and per-stage savings.",
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="input files; `-` reads stdin")
    p.add_argument("--ontology", "-O", default=None, metavar="ONT",
                   help="a task_ontology.yaml path or a bundled name (default: general)")
    p.add_argument("--plan", default=None, metavar="FILE",
                   help="measure under this compiled plan (the JSON `odcf plan --format json` writes) instead of "
                        "compiling --ontology")
    p.add_argument("--role", "-r", type=text_arg, default=None, help="role contract to apply")
    p.add_argument("--query", "-q", type=text_arg, default=None, help="what the reader needs")
    p.add_argument("--budget", "-b", type=int, default=None, help="token budget (default: the role's)")
    p.add_argument("--tokenizer", default=None, metavar="NAME", help=TOKENIZER_HELP)
    p.add_argument("--layer", default="fact", choices=LAYERS,
                   help="the layer every input file belongs to (default: fact), as in `odcf compress --layer`: "
                        "the role's contract and the stages treat each layer differently")
    p.add_argument("--no-entities", action="store_true", help="do not run spaCy NER for the density count")
    p.add_argument("--low-density", type=float, default=None, metavar="X",
                   help="flag segments under X entities per 100 tokens (default 1.0)")
    shape = p.add_mutually_exclusive_group()  # stdout holds one of them: `[--json | --table]`
    shape.add_argument("--json", action="store_true", help="print the report as JSON")
    shape.add_argument("--table", action="store_true", help="print the tables even when stdout is not a terminal")
    p.add_argument("--html", default=None, metavar="FILE", help="also write the HTML report of the run here")
    add_stage_flags(p)
    p.set_defaults(handler=run)


def load_plan(args: argparse.Namespace) -> Any:
    """The plan named by ``--plan FILE`` or ``--ontology ONT`` (default: the bundled general ontology)."""
    if getattr(args, "plan", None):
        from pathlib import Path

        from odcf.errors import InputError
        from odcf.plan.model import Plan

        try:
            data = json.loads(Path(args.plan).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(f"{args.plan}: cannot read a plan: {exc}") from exc
        return Plan.from_dict(data)
    from odcf.plan.compiler import compile_file

    return compile_file(args.ontology if args.ontology is not None else "general")


def run(args: argparse.Namespace) -> int:
    from odcf.compressor import read_source_file
    from odcf.report.analyze import LOW_DENSITY, analyze

    refuse_overwrites([*args.files, args.ontology, args.plan], {"--html": args.html})
    plan = load_plan(args)
    sources = [read_source_file(path, index=k, layer=args.layer) for k, path in enumerate(args.files, start=1)]
    report = analyze(sources, plan, role=args.role, query=args.query, budget=args.budget, tokenizer=args.tokenizer,
                     stages=stage_overrides(args), entities=False if args.no_entities else None,
                     low_density=args.low_density if args.low_density is not None else LOW_DENSITY)
    if args.html:
        from odcf.report.html import render_html

        result = report.result
        write_text(args.html, render_html(result.document, result.record, health=report.to_dict()))
    if args.json:
        sys.stdout.write(json.dumps(report.to_dict(), ensure_ascii=False, indent=2) + "\n")
    elif args.table or sys.stdout.isatty():
        from odcf.report.terminal import print_report

        print_report(report)
    else:
        sys.stdout.write(summary_line(report) + "\n")
    return 0


def delivered_text(report: Any) -> str:
    """"N delivered", saying how much of it is the source bodies when headers and separators add to them."""
    out = f"{report.tokens_out} delivered"
    if report.tokens_out > report.body_tokens:
        out += f" ({report.body_tokens} in the source bodies, the rest source headers and separators)"
    return out


def summary_line(report: Any) -> str:
    """One line for pipes: the headline numbers (use --json or --table for the rest)."""
    d = report.to_dict()
    return (f"{report.tokens_total} tokens in {len(report.sources)} sources -> {delivered_text(report)}; "
            f"low-density {d['low_density_tokens']} tokens in {len(report.low_density)} regions; "
            f"repeated prefixes {d['prefix_tokens']} tokens; boilerplate {d['boilerplate_tokens']} tokens; "
            f"noise {d['noise_tokens']} tokens (use --table or --json for details)")


def _compress_html_hook(args: argparse.Namespace, result: Any) -> None:
    """`odcf compress --html FILE`: write the HTML report of the run."""
    path = getattr(args, "html", None)
    if not path:
        return
    from odcf.report.html import render_html

    write_text(path, render_html(result.document, result.record))


def _register_hook() -> None:
    try:
        from odcf.cli import compress_cmd
    except ImportError:  # pragma: no cover - a build without compress
        return
    if _compress_html_hook not in compress_cmd._post_hooks:
        compress_cmd._post_hooks.append(_compress_html_hook)


_register_hook()
