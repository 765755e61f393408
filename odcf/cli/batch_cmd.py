"""`odcf batch INPUT OUTPUT --ontology ONT [--role R] [--budget N] [--query-field F] [--workers N]
[--engine local|ray] [--ray-address ADDR] [--resume]` — compress every record of a JSON Lines /
Parquet file (or a folder of them); failures go to OUTPUT.errors.jsonl."""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

from odcf.cli.common import (
    TOKENIZER_HELP,
    add_model_flag,
    add_stage_flags,
    preset_role_note,
    stage_overrides,
    text_arg,
)

#: The exit code of a job that ran to the end with failed records: every record, or with
#: ``--fail-on-errors`` any (1 is an error that stopped the job, 3 records that do not add up).
EXIT_FAILED_RECORDS = 4


def register(sub: Any) -> None:
    from odcf.batch.records import DEFAULT_MAX_CHARS, DEFAULT_QUERY_FIELD

    p: argparse.ArgumentParser = sub.add_parser(
        "batch",
        help="compress every record of a JSON Lines / Parquet corpus (local processes or Ray)",
        description=(
            "Compress every record of INPUT (JSON Lines, .jsonl.gz, Parquet, or a folder of them) into "
            "OUTPUT (.jsonl or .parquet: id, text, tokens_in, tokens_out, record). A record has an `id` "
            "and either `context` (a string) or `sources` (a list of {id, text, kind, layer}), and an "
            "optional query. Records that fail go to OUTPUT.errors.jsonl with the reason; the job "
            "goes on. Output is written in atomic parts: after a crash, rerun with --resume."
        ),
    )
    p.add_argument("input", metavar="INPUT", help="a .jsonl/.jsonl.gz/.parquet file or a folder of them (not stdin: the job reads it more than once)")
    p.add_argument("output", metavar="OUTPUT", help="a .jsonl or .parquet file")
    p.add_argument("--ontology", "-O", default=None, metavar="ONT",
                   help="a task_ontology.yaml path or a bundled name (default: general)")
    p.add_argument("--role", "-r", type=text_arg, default=None,
                   help="role contract to apply to every record (default: the plan's `default` role, 4000 tokens "
                        "unless the ontology defines one)")
    p.add_argument("--budget", "-b", type=int, default=None,
                   help="token budget (default: the role's; without --role, the `default` role's)")
    p.add_argument("--query-field", type=text_arg, default=DEFAULT_QUERY_FIELD, metavar="F",
                   help=f"record field holding the query (default: {DEFAULT_QUERY_FIELD}); a job warns when no "
                        "record has a field named otherwise")
    p.add_argument("--tokenizer", default=None, metavar="NAME", help=TOKENIZER_HELP)
    p.add_argument("--workers", "-w", type=int, default=None,
                   help="worker processes (local) or actors (ray); default: the CPUs available; "
                        "0 runs in this process")
    p.add_argument("--engine", choices=("local", "ray"), default="local", help="where to run (default: local)")
    p.add_argument("--ray-address", default=None, metavar="ADDR",
                   help="join an existing Ray cluster (`auto` after `ray start --head`); default: a local Ray")
    p.add_argument("--resume", action="store_true", help="continue an interrupted run from its finished parts")
    p.add_argument("--overwrite", action="store_true",
                   help="start again: replace an existing OUTPUT and discard the parts of an unfinished run "
                        "(without it the job refuses to touch either; --resume continues an unfinished run)")
    p.add_argument("--chunk-size", type=int, default=64, metavar="N",
                   help="records per atomic part (a crash loses at most the parts in flight; default: 64)")
    p.add_argument("--format", dest="output_format", choices=("jsonl", "parquet"), default=None,
                   help="output format (default: from OUTPUT's extension)")
    p.add_argument("--max-chars", type=int, default=DEFAULT_MAX_CHARS, metavar="N",
                   help=f"reject records with more characters than this (default: {DEFAULT_MAX_CHARS:,})")
    p.add_argument("--strict", action="store_true",
                   help="a record whose required material alone exceeds the budget fails (it goes to "
                        "OUTPUT.errors.jsonl with the reason) instead of being delivered over budget with a warning")
    p.add_argument("--fail-on-errors", action="store_true",
                   help=f"exit {EXIT_FAILED_RECORDS} when any record failed (by default only when every record did); "
                        "the job still runs to the end and writes every record")
    p.add_argument("--no-annotate", action="store_true", help="leave out the [source i/n] block headers")
    p.add_argument("--no-timings", action="store_true",
                   help="drop per-stage timings from the records, for byte-identical reruns")
    progress = p.add_mutually_exclusive_group()
    progress.add_argument("--progress", dest="progress", action="store_const", const=True, default=None,
                          help="always draw the progress bar (default: only on a terminal)")
    progress.add_argument("--no-progress", dest="progress", action="store_const", const=False,
                          help="never draw the progress bar, even on a terminal (the summary is still printed)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    add_stage_flags(p)
    add_model_flag(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from odcf.batch.job import run_batch
    from odcf.batch.local import pool_size_hint
    from odcf.batch.worker import BatchConfig
    from odcf.compressor import role_unit_warning
    from odcf.errors import OdcfError, UsageError

    if args.input == "-":
        # `-` is stdin for odcf compress, analyze and handoff; not here (a file named "-" is ./-)
        from odcf.batch.io import READS_TWICE

        raise UsageError(f"-: stdin is not a regular file or folder; {READS_TWICE}")
    try:
        config = BatchConfig(
            ontology=args.ontology, role=args.role, budget=args.budget, query_field=args.query_field,
            tokenizer=args.tokenizer, strict=args.strict, annotate=not args.no_annotate,
            stages=stage_overrides(args), max_chars=args.max_chars, timings=not args.no_timings,
        )
    except ValueError as exc:
        raise OdcfError(str(exc)) from exc
    try:
        compressor = config.build_compressor()
        note = preset_role_note(compressor.plan, args.role, args.budget)
        unit_warning = role_unit_warning(compressor.plan, args.role, compressor.unit_for(args.role)) \
            if args.role is not None and args.budget is None else None
    except OdcfError:
        note = unit_warning = None  # a bad ontology or role: run_batch reports it
    if note:
        print(f"odcf batch: note: {note}", file=sys.stderr)
    workers = pool_size_hint() if args.workers is None else args.workers
    summary = run_batch(
        args.input, args.output, config, engine=args.engine, workers=workers, chunk_size=args.chunk_size,
        resume=args.resume, overwrite=args.overwrite, output_fmt=args.output_format,
        ray_address=args.ray_address, progress=args.progress,
    )
    if args.role is None and args.budget is None and summary.records_out and summary.tokens_saved <= 0:
        # the first run of a user's ontology often names no role: say what was used, and that it did nothing
        budget = config.build_compressor().plan.role(None).budget
        note = (f"no --role or --budget: every record used the `default` role's budget of {budget} tokens, and the "
                f"output ({summary.tokens_out} tokens) is no smaller than the input ({summary.tokens_in}): nothing "
                "was compressed; give --role or --budget")
        summary = dataclasses.replace(summary, warnings=(*summary.warnings, note))
    if unit_warning and summary.records_out:
        # every record's record says it; the summary says it once, where it is seen
        summary = dataclasses.replace(summary, warnings=(*summary.warnings, f"every record: {unit_warning}"))
    if args.json:
        sys.stdout.write(json.dumps(summary.to_dict(), indent=2) + "\n")
    else:
        sys.stdout.write("\n".join(summary.lines()) + "\n")
    if summary.records_failed and (args.fail_on_errors or not summary.records_out):
        # a job in which nothing succeeded must not look like a clean run to a scheduler
        what = "every record" if not summary.records_out else f"{summary.records_failed} of {summary.records_in} records"
        sys.stderr.write(f"odcf batch: {what} failed; the reasons are in {summary.errors}\n")
        return EXIT_FAILED_RECORDS
    return 0
