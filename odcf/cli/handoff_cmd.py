"""`odcf handoff ITEMS.json --role R [--ontology ONT] [--budget N] [--strict] [--json] [--record FILE] [--no-timings]`

Prepare what the next agent receives: reads a JSON file of handoff items (facts, tool output,
drafts, state, OpenAI-style chat messages; see docs/handoff.md) and prints the handoff text.
Exit 1 with one line naming what is missing in ``--strict`` mode.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from odcf.cli.common import (
    TOKENIZER_HELP,
    add_stage_flags,
    print_record_warnings,
    refuse_overwrites,
    stage_overrides,
    text_arg,
)
from odcf.fileio import write_text


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "handoff",
        help="prepare a multi-agent handoff for a role from a JSON file of items",
        description="Prepare the context handed to ROLE from ITEMS.json under the role's contract and budget.",
    )
    p.add_argument("items", metavar="ITEMS.json", help="handoff items: a list, or an object with "
                   "instruction/searched/state/items/messages (`-` reads stdin)")
    p.add_argument("--role", "-r", type=text_arg, required=True, help="the receiving role (researcher, planner, writer, "
                   "reviewer, executor, fixer, or one the ontology defines)")
    p.add_argument("--ontology", "-O", default=None, metavar="ONT",
                   help="a task_ontology.yaml path or a bundled name (default: general)")
    p.add_argument("--budget", "-b", type=int, default=None, help="token budget (default: the role's)")
    p.add_argument("--tokenizer", default=None, metavar="NAME", help=TOKENIZER_HELP)
    p.add_argument("--query", "-q", type=text_arg, default=None, help="what the receiving agent needs (default: the task goal)")
    p.add_argument("--searched", type=text_arg, action="append", default=[], metavar="CATEGORY",
                   help="a category upstream searched (repeatable), in addition to those the file declares")
    p.add_argument("--strict", action="store_true",
                   help="fail when required material is missing or does not fit the budget")
    p.add_argument("--out", "-o", default=None, metavar="FILE", help="write the text here instead of stdout (`-`: stdout)")
    p.add_argument("--record", default=None, metavar="FILE", help="write the delivery record (JSON) here")
    p.add_argument("--json", action="store_true",
                   help='print {"text","tokens_in","tokens_out","budget","record"}')
    p.add_argument("--no-timings", action="store_true",
                   help="drop per-stage timings from the record, for byte-identical reruns")
    add_stage_flags(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from odcf.compressor import Compressor
    from odcf.handoff.engine import handoff, over_budget_message
    from odcf.handoff.items import decode_items, load_items, parse_items

    refuse_overwrites([args.items, args.ontology], {"--out": args.out, "--record": args.record})
    if args.out == "-":
        args.out = None  # stdout, as without --out

    if args.items == "-":  # bytes, read as a file is (a byte-order mark removed)
        items: Any = parse_items(decode_items(sys.stdin.buffer.read(), "<stdin>"), where="<stdin>")
    else:
        items = load_items(args.items)
    compressor = Compressor.from_ontology(args.ontology, stages=stage_overrides(args), tokenizer=args.tokenizer)
    result = handoff(compressor, role=args.role, items=items, budget=args.budget, strict=args.strict,
                     searched=args.searched, query=args.query, timings=not args.no_timings)
    if args.record:
        write_text(args.record, json.dumps(result.record, ensure_ascii=False, indent=2) + "\n")
    payload = (json.dumps(result.to_dict(), ensure_ascii=False, indent=2) if args.json else result.text) + "\n"
    if args.out:
        # the text exactly, as `odcf compress --out` writes it: its sha256 is the record's
        write_text(args.out, payload if args.json else result.text)
    else:
        sys.stdout.write(payload)
    rec = result.record
    # every warning of the record, as `odcf compress` prints them: an empty handoff delivered with
    # exit 0 must not be silent (QA: "nothing fit in the budget of 300 ..." was only in the record)
    print_record_warnings("handoff", rec, f"{over_budget_message(rec)}; see the record")
    if rec.get("missing"):
        print(f"odcf handoff: note: {len(rec['missing'])} required item(s) missing: "
              + ", ".join(str(m.get("category") or m.get("item")) for m in rec["missing"]), file=sys.stderr)
    return 0
