"""`odcf plan FILE_OR_NAME [--format json|yaml]` — print the plan an ontology compiles to:
its hash and version, which roles the ontology declares and which are shipped presets, then ``plan.to_dict()`` (queries, protection rules, state schema,
abbreviations, role contracts, pipeline switches). A bad ontology prints every problem and
exits 2, like ``odcf ontology check``.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from odcf.errors import OntologyError

EXIT_INVALID = 2


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "plan",
        help="print the plan an ontology compiles to",
        description="Compile a task ontology (a path or a bundled name) and print the plan.",
    )
    p.add_argument("ontology", metavar="FILE_OR_NAME", help="a task_ontology.yaml path or a bundled name")
    p.add_argument("--format", "-f", choices=("json", "yaml"), default="json", help="output format (default: json)")
    p.set_defaults(handler=_plan)


def plan_document(plan: Any) -> dict[str, Any]:
    """What ``odcf plan`` prints: hash and version first, where each role comes from (``ontology``: declared
    by it, over a preset of the same name or not; ``preset``: one of odcf's shipped presets, merged into
    every plan), then the plan itself."""
    origin = {**{name: "ontology" for name in plan.own_roles()}, **{name: "preset" for name in plan.preset_roles()}}
    return {"hash": plan.hash, "version": plan.version, "role_origin": origin, **plan.to_dict()}


def _plan(args: argparse.Namespace) -> int:
    from odcf.plan.compiler import compile_file

    try:
        plan = compile_file(args.ontology)
    except OntologyError as exc:
        if not exc.problems:
            raise
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return EXIT_INVALID
    doc = plan_document(plan)
    if args.format == "yaml":
        import yaml

        sys.stdout.write(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100))
    else:
        sys.stdout.write(json.dumps(doc, ensure_ascii=False, indent=2) + "\n")
    return 0
