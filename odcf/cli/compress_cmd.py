"""`odcf compress FILE... [--ontology ONT] [--query Q] [--role R] [--budget N] [--tokenizer NAME]
[--out FILE] [--record FILE] [--json]` — stdin with `-`."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from odcf.cli.common import (
    TOKENIZER_HELP,
    add_model_flag,
    add_stage_flags,
    preset_role_note,
    print_record_warnings,
    refuse_overwrites,
    stage_overrides,
    text_arg,
)
from odcf.document import LAYERS
from odcf.errors import InputError
from odcf.fileio import write_text
from odcf.textutil import has_visible_text
from odcf.tokens import short_unit


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "compress",
        help="compress files (or stdin) to a role's token budget",
        description="Compress FILE... (or `-` for stdin) under an ontology's plan and print the result.",
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="input files; `-` reads stdin")
    p.add_argument("--ontology", "-O", default=None, metavar="ONT",
                   help="a task_ontology.yaml path or a bundled name (default: general)")
    p.add_argument("--query", "-q", type=text_arg, default=None, help="what the reader needs; ranks and protects by it")
    p.add_argument("--role", "-r", type=text_arg, default=None,
                   help="role contract to apply (see `odcf plan`; default: the plan's `default` role, 4000 tokens "
                        "unless the ontology defines one)")
    p.add_argument("--budget", "-b", type=int, default=None,
                   help="token budget (default: the role's; without --role, the `default` role's)")
    p.add_argument("--tokenizer", default=None, metavar="NAME", help=TOKENIZER_HELP)
    p.add_argument("--layer", default="fact", choices=LAYERS,
                   help="the layer every input file belongs to (default: fact): a role's contract takes or "
                        "forbids layers, instruction text is never compressed, state must be JSON that validates "
                        "against the plan's state_schema")
    p.add_argument("--instruction", type=text_arg, default=None, metavar="TEXT",
                   help="an instruction (the text itself, not a file), delivered first and never compressed; "
                        "the record lists it as source `instruction`, origin `--instruction`")
    p.add_argument("--strict", action="store_true", help="fail when required material alone exceeds the budget")
    p.add_argument("--no-annotate", action="store_true",
                   help="leave out the `[source i/n] ORIGIN | layer | relevance` line above each source's block "
                        "(the text is then the sources' text alone; `odcf verify --text` checks it as a whole)")
    p.add_argument("--no-timings", action="store_true",
                   help="leave wall-clock times out of the record (byte-identical records across runs)")
    p.add_argument("--out", "-o", default=None, metavar="FILE", help="write the text here instead of stdout (`-`: stdout)")
    p.add_argument("--record", default=None, metavar="FILE", help="write the delivery record (JSON) here")
    p.add_argument("--json", action="store_true", help='print {"text","tokens_in","tokens_out","record"}')
    p.add_argument("--html", default=None, metavar="FILE", help="also write the HTML report of the run here")
    p.add_argument("--trace", default=None, metavar="FILE", help="also write the JSONL trace (for `odcf replay`) here")
    add_stage_flags(p)
    add_model_flag(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from odcf.compressor import Compressor, read_source_file
    from odcf.document import Source
    from odcf.stages.assemble import EMPTY_INPUT, is_empty_reason

    refuse_overwrites([*args.files, args.ontology],
                      {f"--{flag}": getattr(args, flag, None) for flag in ("out", "record", "html", "trace")})
    if args.out == "-":
        args.out = None  # stdout, as without --out
    sources = [read_source_file(path, index=k, layer=args.layer) for k, path in enumerate(args.files, start=1)]
    empty = [s.origin or s.id for s in sources if not has_visible_text(s.text)]  # a lone BOM is no text either
    if len(empty) == len(sources):
        # an empty output would hide an upstream problem (as `odcf batch` treats an empty context)
        raise InputError(f"{', '.join(empty)}: empty input (no text): nothing to compress")
    file_ids = {s.id for s in sources}
    for origin in empty:
        print(f"odcf compress: warning: {origin}: empty input (no text); the record lists it as dropped",
              file=sys.stderr)
    if args.instruction:
        sources.insert(0, Source(id="instruction", text=args.instruction, layer="instruction", origin="--instruction"))
    compressor = Compressor.from_ontology(args.ontology, stages=stage_overrides(args), tokenizer=args.tokenizer)
    if note := preset_role_note(compressor.plan, args.role, args.budget):
        print(f"odcf compress: note: {note}", file=sys.stderr)
    result = compressor.compress(sources, query=args.query, role=args.role, budget=args.budget,
                                 strict=args.strict, annotate=not args.no_annotate,
                                 timings=not args.no_timings)
    emptied = [e for e in result.record["sources"] if e["id"] in file_ids and is_empty_reason(e.get("reason"))
               and e["reason"] != EMPTY_INPUT]
    if emptied and len(emptied) + len(empty) == len(file_ids):
        # as `odcf batch` and the record: every input left without text is an error naming the rule
        raise InputError("; ".join(f"{e.get('origin') or e['id']}: {e['reason']}" for e in emptied))
    for e in emptied:
        print(f"odcf compress: warning: {e.get('origin') or e['id']}: {e['reason']}; the record lists it as "
              "dropped", file=sys.stderr)
    if args.record:
        write_text(args.record, result.record_json() + "\n")
    args.run_context = {"inputs": sources, "compressor": compressor}
    for hook in _post_hooks:
        hook(args, result)
    if args.json:
        payload = json.dumps(result.to_dict(), ensure_ascii=False, indent=2)
        if args.out:
            write_text(args.out, payload + "\n")
        else:
            sys.stdout.write(payload + "\n")
    elif args.out:
        write_text(args.out, result.text)  # exactly the delivered text: its sha256 is the record's
    else:
        sys.stdout.write(result.text + ("\n" if result.text else ""))
    print_record_warnings("compress", result.record, f"over budget by {result.record.get('over_by')} {short_unit(result.record.get('unit'))} "
                          "(required material alone exceeds it; see the record)")
    budget = result.record["budget"]
    if args.role is None and args.budget is None and result.tokens_in <= budget:
        # the first run of a user's ontology often names no role: say what was used, and what it did
        print(f"odcf compress: note: no --role or --budget: the `default` role's budget of {budget} tokens was "
              f"used and the input ({result.tokens_in} tokens) fits it, so "
              f"{_fit_outcome(result.record, annotated=not args.no_annotate)}; give "
              "--role or --budget", file=sys.stderr)
    return 0


#: What a segment status says in the no-role note, in this order.
_CHANGES = (("merged", "merged as duplicates"), ("folded", "folded"), ("compressed", "compressed"),
            ("dropped", "dropped"))


def _fit_outcome(record: dict[str, Any], *, annotated: bool = True) -> str:
    """What a run whose input fits the budget did, from its *record*: "nothing was compressed" only
    when every segment went out as read; else what changed all the same (dedup merges, folds, tokens
    the rules stage removed, with that stage's own figures), then the tokens delivered, which hold the
    ``[source i/n]`` header lines when *annotated*, e.g. "nothing was cut for the budget, but 76 segments
    were merged as duplicates; 1298 tokens delivered with the source headers".

    QA s33 R2: "the rules stage removed 20 tokens (530 -> 528 tokens)" put the stage's figure beside
    the delivered count (510 plus the header line), which reads as 530 - 20 = 528; it now says
    "removed 20 tokens (530 -> 510); 528 tokens delivered with the source header"."""
    counts: dict[str, int] = {}
    for src in record.get("sources", ()):
        for seg in src.get("segments", ()):
            counts[seg.get("status")] = counts.get(seg.get("status"), 0) + 1
    parts = [f"{counts[status]} segment{'s were' if counts[status] != 1 else ' was'} {label}"
             for status, label in _CHANGES if counts.get(status)]
    for event in record.get("stages", ()):
        removed = event.get("tokens_in", 0) - event.get("tokens_out", 0) if event.get("stage") == "rules" else 0
        if removed > 0:  # comments, editor marks, TODO lines: not delivered as read
            parts.append(f"the rules stage removed {removed} token{'s' if removed != 1 else ''} "
                         f"({event['tokens_in']} -> {event['tokens_out']})")
    if not parts:
        return "nothing was compressed"
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    headers = sum(1 for src in record.get("sources", ()) if src.get("status") != "dropped") if annotated else 0
    with_headers = f" with the source header{'s' if headers != 1 else ''}" if headers else ""
    return f"nothing was cut for the budget, but {listed}; {record['tokens_out']} tokens delivered{with_headers}"


#: Extra output writers (HTML report, trace) registered by other CLI modules: fn(args, result).
_post_hooks: list[Any] = []
