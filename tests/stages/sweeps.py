"""Budget sweeps shared by the stage tests."""
from __future__ import annotations

from collections.abc import Callable, Iterable


def only_with(text_at: Callable[[int], str], shown: str, needed: str, budgets: Iterable[int], *,
              must_see: bool = True) -> None:
    """At every budget, *shown* is delivered only with *needed* (*text_at*: budget -> delivered text);
    with *must_see*, at some budget it is delivered."""
    seen = False
    for budget in budgets:
        text = text_at(budget)
        if shown in text:
            seen = True
            assert needed in text, (budget, text)
    assert seen or not must_see
