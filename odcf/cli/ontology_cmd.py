"""`odcf ontology check FILE...` and `odcf ontology list`.

``check`` loads and compiles each file (a path or a bundled name) and prints
``ok FILE (domain, N concepts, M anchors)``; when any file is bad it prints every problem as
``FILE:LINE: key.path: message`` on stderr and exits 2; a valid file's likely slips (a role budget over
2,000,000 tokens) are warned of the same way, ``FILE:LINE: key.path: warning: ...``, and it is still ok. ``list`` shows the bundled ontologies.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

from odcf.errors import OntologyError

EXIT_INVALID = 2


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "ontology",
        help="check task ontologies, list the bundled ones",
        description="Validate task_ontology.yaml files or list the ontologies bundled with odcf.",
    )
    actions = p.add_subparsers(dest="ontology_command", metavar="ACTION")
    check = actions.add_parser(
        "check",
        help="validate ontology files (exit 2 and every problem, FILE:LINE: key.path: message)",
        description="Load and compile each FILE (a path, or a bundled ontology name). Prints `ok FILE (...)` "
                    "per valid file; otherwise every problem, one per line, and exits 2.",
    )
    check.add_argument("files", nargs="+", metavar="FILE", help="ontology files or bundled names")
    check.set_defaults(handler=_check)
    listing = actions.add_parser("list", help="show the bundled ontologies", description="Show the bundled ontologies.")
    listing.set_defaults(handler=_list)
    p.set_defaults(handler=lambda args: _usage(p))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return EXIT_INVALID


def _check(args: argparse.Namespace) -> int:
    from odcf.ontology.loader import check_warnings, load_ontology
    from odcf.plan.compiler import compile_plan

    bad = 0
    for name in args.files:
        try:
            ontology = load_ontology(name)
            plan = compile_plan(ontology)
        except OntologyError as exc:
            bad += 1
            if exc.problems:
                for problem in exc.problems:
                    print(problem, file=sys.stderr)
            else:
                print(str(exc), file=sys.stderr)
            continue
        for warning in check_warnings(ontology):  # valid, so still `ok`: a warning never fails the check
            print(warning, file=sys.stderr)
        n_concepts, n_anchors = len(plan.concepts), len(plan.protection.anchors)
        print(f"ok {name} ({plan.domain}, {n_concepts} concept{'s' if n_concepts != 1 else ''}, "
              f"{n_anchors} anchor{'s' if n_anchors != 1 else ''})")
    return EXIT_INVALID if bad else 0


def _list(args: argparse.Namespace) -> int:
    from odcf.ontology.loader import list_bundled

    bundled = list_bundled()
    width = max((len(name) for name, _ in bundled), default=0)
    for name, description in bundled:
        print(f"{name:<{width}}  {description}".rstrip())
    return 0
