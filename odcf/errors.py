"""The exception hierarchy. Every odcf error says where and what.

User mistakes (a bad ontology, an unknown role, a budget too small in strict
mode) raise a subclass of :class:`OdcfError`; the CLI turns them into one line
and a non-zero exit code.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


class OdcfError(Exception):
    """Base class of every error odcf raises on purpose."""


@dataclass(frozen=True)
class Problem:
    """One problem found while loading or compiling an ontology."""

    file: str
    line: int | None
    path: str
    message: str

    def __str__(self) -> str:
        line = self.line if self.line is not None else "?"
        path = self.path or "<root>"
        return f"{self.file}:{line}: {path}: {self.message}"


class OntologyError(OdcfError):
    """A task ontology that does not load or validate; lists every problem at once."""

    #: what every ``odcf`` command exits with for it (``odcf ontology check`` as ``odcf compress``)
    exit_code = 2

    def __init__(self, problems: Iterable[Problem] | str) -> None:
        if isinstance(problems, str):
            self.problems: tuple[Problem, ...] = ()
            super().__init__(problems)
            return
        self.problems = tuple(problems)
        n = len(self.problems)
        head = f"{n} problem{'s' if n != 1 else ''} in ontology"
        super().__init__(head + ":\n" + "\n".join(f"  {p}" for p in self.problems))


class PlanError(OdcfError):
    """A plan that cannot be built or used (unknown role, bad plan file)."""


class InvalidPlanError(PlanError, ValueError):
    """A plan file or plan mapping that does not read as a plan: missing, not JSON, a field of the
    wrong type. A :class:`ValueError` too, as the JSON error of a plan file was."""


class StageError(OdcfError):
    """A stage that cannot run: missing requirement, missing model, bad option."""


class PatternTimeoutError(OntologyError, StageError):
    """A pattern of the ontology that ran past its time limit while a stage searched a text (catastrophic
    backtracking the load-time probe did not find): an ontology error, exit 2, naming ``FILE:LINE:
    protect.anchors[0].pattern`` where the plan knows its file, and a stage error, which it stops."""


class BudgetError(OdcfError):
    """Strict mode: required material alone does not fit the budget."""

    def __init__(self, message: str, *, budget: int = 0, required: int = 0) -> None:
        super().__init__(message)
        self.budget = budget
        self.required = required


class ExportParityError(OdcfError):
    """An exported model disagrees with its source beyond the stated tolerance."""


class InputError(OdcfError):
    """Input that cannot be read: invalid UTF-8, a broken record, an unknown kind."""


class UsageError(InputError):
    """A command line odcf refuses before it reads anything: an option's value that does not parse
    (``--threads a``) or options that contradict each other (``--enable compress --disable compress``,
    ``--record -`` where stdout holds the text). It exits 2, as argparse's own usage errors (an unknown
    option, ``--budget abc``, ``--layer bogus``) do: QA s33 R1 found ``--record -`` exiting 1 beside a
    non-UTF-8 ``--query`` exiting 2, so no script could tell a usage error from a failed run by the code."""

    #: argparse's exit code for a usage error, and the README's "2: ... or a command-line usage error"
    exit_code = 2


class SourceError(InputError, ValueError):
    """A :class:`~odcf.document.Source` (or a document of them) with a field of the wrong type or
    value: ``Source(id=1, ...)``, ``confidence=2``, two sources of one id. A :class:`ValueError`
    too, as it was."""


class Interrupted(KeyboardInterrupt):
    """The run was stopped by SIGINT (*how* ``"interrupted"``) or SIGTERM (``"terminated"``, what a
    scheduler or ``docker stop`` sends); *hint* says how to continue, when there is a way. A
    :class:`KeyboardInterrupt`, so that cleanup runs as for Ctrl-C."""

    def __init__(self, how: str = "interrupted", hint: str = "") -> None:
        super().__init__(how)
        self.how = how
        self.hint = hint


def format_problems(problems: Sequence[Problem]) -> str:
    return "\n".join(str(p) for p in problems)
