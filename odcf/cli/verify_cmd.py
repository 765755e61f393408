"""`odcf verify RECORD [--text FILE [--text-only]] [--trace TRACE | --plan FILE | --ontology ONT] [--json]` — re-read
every file source a delivery record names, redo the selection and check it against the record.
Exit 0 when everything checks out; exit 1 with one line per problem when a source changed or
delivered text was substituted."""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from odcf.document import sha256
from odcf.errors import InputError, UsageError

EXIT_PROBLEMS = 1


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "verify",
        help="re-verify a delivery record against its sources",
        description="Re-read the sources a delivery record names, recompute their sha256, re-run the selection "
                    "and check the delivered segments; exit 1 with one line per problem.",
    )
    p.add_argument("record", metavar="RECORD", help="a delivery record JSON (`odcf compress --record`, or --json output)")
    p.add_argument("--text", default=None, metavar="FILE", help="the delivered text (`odcf compress --out`) to check too")
    p.add_argument("--trace", default=None, metavar="TRACE", help="take the plan from this trace")
    p.add_argument("--plan", default=None, metavar="FILE", help="take the plan from this plan JSON")
    p.add_argument("--ontology", "-O", default=None, metavar="ONT", help="compile the plan from this ontology")
    p.add_argument("--base", action="append", default=[], metavar="DIR",
                   help="a folder to resolve the record's relative source paths against (repeatable, tried in "
                        "order; then the current folder, then the record's folder), e.g. when verifying in "
                        "another checkout")
    p.add_argument("--sources-only", action="store_true",
                   help="pass when the sources and text check out even if the segments could not be re-checked "
                        "(no plan: a record of a custom ontology verified without --ontology/--plan/--trace; "
                        "a record written with segment_details=False)")
    p.add_argument("--text-only", action="store_true",
                   help="with --text: pass when the delivered text checks out against the record (its sha256, each "
                        "source's block, the token figures) although no source could be re-read, as for a record "
                        "of `odcf handoff` (its items are no files); the sources themselves are not checked")
    p.add_argument("--json", action="store_true",
                   help='print the result as JSON: {"ok", "problems": [{"code", "message", "source", "segment"}], '
                        '"checked_sources", "checked_segments", "text_checked", "notes"}; the exit code is as '
                        'without it')
    p.set_defaults(handler=run)


def _read_json(path: str) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise InputError(f"{path}: not JSON: {exc}") from exc


def _plan(args: argparse.Namespace) -> tuple[Any, Any]:
    """(plan, stage switches) from --trace, --plan or --ontology; (None, None) without them."""
    if args.trace:
        from odcf.plan.model import Plan
        from odcf.trace import read_trace

        header = read_trace(args.trace).header
        return Plan.from_dict(header["plan"]), header.get("stages")
    if args.plan:
        from odcf.plan.model import Plan

        return Plan.from_dict(_read_json(args.plan)), None
    if args.ontology:
        from odcf.plan.compiler import compile_file

        return compile_file(args.ontology), None
    return None, None


def run(args: argparse.Namespace) -> int:
    from odcf.reverify import verify_report

    if args.text_only and not args.text:
        raise UsageError("--text-only checks the delivered text against the record: give it with --text FILE")
    record = _read_json(args.record)
    if isinstance(record, dict) and "record" in record and "sources" not in record:
        record = record["record"]  # the --json output of odcf compress
    text = None
    if args.text:
        try:
            # bytes as written: a CRLF source's line endings are part of the delivered text
            text = Path(args.text).read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{args.text}: cannot read: {exc}") from exc
        if text.endswith("\n") and isinstance(record, dict) and record.get("sha256") == sha256(text[:-1]):
            text = text[:-1]  # a file written before `--out` held exactly the text ended it with a newline
    # the documented order: each --base, the current folder, the record's folder
    bases = [*args.base, os.getcwd(), os.path.dirname(os.path.abspath(args.record))]
    plan, stages = _plan(args)
    report = verify_report(record, text, plan=plan, stages=stages, base_dirs=bases, sources_only=args.sources_only,
                           text_only=args.text_only)
    if args.json:
        sys.stdout.write(json.dumps(report.to_dict(), ensure_ascii=False, indent=2) + "\n")
        return 0 if report.ok else EXIT_PROBLEMS
    for note in report.notes:
        print(f"note: {note}", file=sys.stderr)
    if report.ok and args.text_only and report.text_checked and not report.checked_sources:
        # say what was checked, and what was not: "ok" must not read as "the sources are unchanged"
        print("ok: the delivered text matches the record; 0 source(s) re-read, so the sources were not checked")
        return 0
    if report.ok:
        print(f"ok: {len(report.checked_sources)} source(s) re-read, {report.checked_segments} segment(s) re-checked")
        return 0
    for problem in report.problems:
        print(f"FAIL {problem}")
    return EXIT_PROBLEMS
