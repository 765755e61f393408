"""Errors raised by the handoff package. Both are user mistakes, so the CLI prints one line."""
from __future__ import annotations

from collections.abc import Iterable

from odcf.errors import OdcfError


class HandoffError(OdcfError):
    """A handoff that cannot be prepared as asked.

    Raised for bad item files (every problem at once, each as ``WHERE: WHAT``), for a state
    object that does not validate against the plan's schema, and in strict mode for required
    material that is missing (a required category that upstream never searched, a mandatory
    item that does not fit the budget). ``missing`` names what was missing, when that is the cause.
    """

    def __init__(self, message: str, *, missing: Iterable[str] = ()) -> None:
        super().__init__(message)
        self.missing = tuple(missing)


def raise_problems(problems: list[str], what: str) -> None:
    """Raise one :class:`HandoffError` that lists every problem, or return when there are none."""
    if not problems:
        return
    n = len(problems)
    head = f"{n} problem{'s' if n != 1 else ''} in {what}"
    raise HandoffError(head + ":\n" + "\n".join(f"  {p}" for p in problems))
