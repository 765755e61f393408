"""What a batch job reports at the end: counts, tokens, time, and how many of the records it
compressed delivered nothing, went over the budget or carry warnings (a record that delivers empty
text is an output row, not a failure: its record's ``warnings`` say why).

>>> s = BatchSummary(records_in=3, records_out=2, records_failed=1, tokens_in=900, tokens_out=300,
...                  seconds=1.5, output="out.jsonl", errors="out.jsonl.errors.jsonl", records_empty=1,
...                  records_with_warnings=1)
>>> s.tokens_saved, s.ok, s.hint
(600, False, "1 record(s) delivered empty text: each one's record.warnings says why (often a budget smaller than the smallest part of the record, as assembled)")
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class BatchSummary:
    """Totals of a finished job. ``records_in == records_out + records_failed`` always holds
    (the job raises otherwise). ``resumed_records`` were finished by an earlier, interrupted run;
    ``seconds`` is this run's wall time."""

    records_in: int
    records_out: int
    records_failed: int
    tokens_in: int
    tokens_out: int
    seconds: float
    output: str
    errors: str
    engine: str = "local"
    workers: int = 1
    resumed_records: int = 0
    #: things the job did but the user likely did not mean (a query field no record has)
    warnings: tuple[str, ...] = ()
    #: compressed records (counted in records_out) whose text is empty, that went over the budget
    #: (required material alone exceeds it), and whose delivery record has warnings (a state
    #: that does not validate, an empty delivery, a required layer with nothing, ...)
    records_empty: int = 0
    records_over_budget: int = 0
    records_with_warnings: int = 0
    #: the first of those warnings in input order, which the hint names
    first_warning: str | None = None

    @property
    def tokens_saved(self) -> int:
        return self.tokens_in - self.tokens_out

    @property
    def ok(self) -> bool:
        """True when no record failed."""
        return self.records_failed == 0

    @property
    def processed(self) -> int:
        """Records processed by this run (not counting those resumed from earlier parts)."""
        return self.records_in - self.resumed_records

    @property
    def hint(self) -> str | None:
        """One line on what the delivered-record counts mean and where to look (None when all are 0)."""
        if self.records_empty:
            return (f"{self.records_empty} record(s) delivered empty text: each one's record.warnings says why "
                    "(often a budget smaller than the smallest part of the record, as assembled)")
        if self.records_over_budget:
            return (f"{self.records_over_budget} record(s) went over the budget: their required material alone "
                    "exceeds it (record.over_by; --strict fails them instead)")
        if self.records_with_warnings:
            first = f" (the first: {self.first_warning})" if self.first_warning else ""
            return f"{self.records_with_warnings} record(s) carry warnings{first}: see record.warnings in the output"
        return None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["warnings"] = list(self.warnings)
        out["seconds"] = round(self.seconds, 3)
        out["tokens_saved"] = self.tokens_saved
        out["hint"] = self.hint
        return out

    def lines(self) -> list[str]:
        """Human-readable summary, as the CLI prints it."""
        rate = self.processed / self.seconds if self.seconds > 0 else 0.0
        ratio = f" ({self.tokens_out / self.tokens_in:.1%} of input)" if self.tokens_in else ""
        out = [
            f"records: {self.records_in} in, {self.records_out} out, {self.records_failed} failed"
            + (f" ({self.resumed_records} finished by an earlier run)" if self.resumed_records else ""),
            (f"delivered: {self.records_empty} empty, {self.records_over_budget} over budget, "
             f"{self.records_with_warnings} with warnings (of {self.records_out} out)"),
            f"tokens:  {self.tokens_in} in, {self.tokens_out} out{ratio}, {self.tokens_saved} saved",
            f"time:    {self.seconds:.1f} s, {rate:.1f} records/s ({self.engine}, {self.workers} worker(s))",
            f"output:  {self.output}",
        ]
        if self.records_failed:
            out.append(f"errors:  {self.errors}")
        if self.hint:
            out.append(f"hint:    {self.hint}")
        out.extend(f"warning: {w}" for w in self.warnings)
        return out
