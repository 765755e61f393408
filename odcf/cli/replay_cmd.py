"""`odcf replay TRACE [--json] [--ignore-plan-hash]` — re-run a traced compression with the same inputs
and plan and say whether the output is byte-identical (exit 0) or not (exit 1, with the first differing
position and the stage events that differ). A changed input file, a differing record or stage event, a
trace without stage events and a plan that does not hash to the header's ``plan_hash`` also exit 1.
Also adds ``--trace FILE`` to ``odcf compress``."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

EXIT_DIFFERENT = 1


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "replay",
        help="re-run a trace and check the output is byte-identical",
        description="Re-run the inputs of TRACE (from `odcf compress --trace`) with its plan and stages; "
                    "exit 0 when the output is byte-identical, 1 when it is not.",
    )
    p.add_argument("trace", metavar="TRACE", help="a JSONL trace written by `odcf compress --trace`")
    p.add_argument("--json", action="store_true",
                   help='print the comparison as JSON ({"trace_id", "reproduced", "identical", "expected_sha256", '
                        '"actual_sha256", "first_difference", "input_changes", "stage_differences", ...}); '
                        "the exit code is as without it")
    p.add_argument("--ignore-plan-hash", action="store_true",
                   help="replay a trace whose plan does not hash to its header's plan_hash (edited after the run) "
                        "instead of failing with plan-mismatch")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from odcf.trace import replay

    report = replay(args.trace, ignore_plan_hash=args.ignore_plan_hash)
    if args.json:
        sys.stdout.write(json.dumps(report.to_dict(), ensure_ascii=False, indent=2) + "\n")
        return 0 if report.reproduced else EXIT_DIFFERENT
    for change in report.input_changes:
        print(f"input changed: {change}")
    for note in report.notes:
        print(f"note: {note}")
    if report.reproduced:
        print(f"identical: trace {report.trace_id}, output sha256 {report.actual_sha256}")
        return 0
    if report.identical:
        print(f"NOT REPRODUCED: trace {report.trace_id}: the output text is identical, but "
              + "; ".join(report.failures))
        _print_stage_diffs(report)
        return EXIT_DIFFERENT
    print(f"DIFFERENT: trace {report.trace_id}: output sha256 {report.actual_sha256} != traced {report.expected_sha256}")
    for why in report.failures[1:]:  # the first is the output itself
        print(f"  and {why}")
    if report.first_difference is not None:
        print(f"first difference at character {report.first_difference}:")
        print(f"  traced:   {report.expected_excerpt!r}")
        print(f"  replayed: {report.actual_excerpt!r}")
    _print_stage_diffs(report)
    return EXIT_DIFFERENT


def _print_stage_diffs(report: Any) -> None:
    for d in report.stage_differences:
        if d["traced"] is None:
            print(f"stage event {d['n']} ({d['stage']}) is not in the trace: replayed {_short(d['replayed'])}")
        elif d["replayed"] is None:
            print(f"stage event {d['n']} ({d['stage']}) of the trace was not replayed: traced {_short(d['traced'])}")
        else:
            print(f"stage event {d['n']} ({d['stage']}) differs: traced {_short(d['traced'])} / replayed {_short(d['replayed'])}")


def _short(ev: Any) -> str:
    if not ev:
        return "none"
    return f"{ev.get('tokens_in')}->{ev.get('tokens_out')} {json.dumps(ev.get('decisions'), ensure_ascii=False)[:160]}"


def _compress_trace_hook(args: argparse.Namespace, result: Any) -> None:
    """`odcf compress --trace FILE`: write the JSONL trace of the run."""
    path = getattr(args, "trace", None)
    if not path:
        return
    from odcf.trace import write_trace

    run_ctx = getattr(args, "run_context", None) or {}
    if "inputs" not in run_ctx or "compressor" not in run_ctx:
        from odcf.errors import OdcfError

        raise OdcfError("--trace: this odcf compress does not pass its inputs to output writers")
    write_trace(result, path, inputs=run_ctx["inputs"], compressor=run_ctx["compressor"])


def _register_hook() -> None:
    try:
        from odcf.cli import compress_cmd
    except ImportError:  # pragma: no cover
        return
    if _compress_trace_hook not in compress_cmd._post_hooks:
        compress_cmd._post_hooks.append(_compress_trace_hook)


_register_hook()
