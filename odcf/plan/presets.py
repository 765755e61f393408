"""Role presets: the context contract each common agent role gets when the ontology does not
say otherwise. An ontology's ``roles:`` entry of the same name overrides a preset field by field
(see :func:`odcf.plan.compiler.compile_plan`); a role the presets do not know must set a budget.

Budgets are in tokens of the plan's tokenizer. ``optional`` is in priority order (the last entry
is trimmed first). Every preset forbids ``reasoning``: drafts from other agents reach a role only
when its ontology entry allows them.

>>> from odcf.plan.presets import ROLE_PRESETS
>>> ROLE_PRESETS["planner"].budget, ROLE_PRESETS["planner"].required
(4000, ('instruction', 'state'))
"""
from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from odcf.plan.model import RoleContract


def _role(name: str, budget: int, required: tuple[str, ...], optional: tuple[str, ...],
          categories: tuple[str, ...] = ()) -> RoleContract:
    return RoleContract(name=name, budget=budget, required=required, optional=optional, forbidden=("reasoning",),
                        categories=categories)


#: Required material categories per role, for handoffs (:mod:`odcf.handoff`): items of these
#: categories are mandatory for the role, and a category upstream never searched is reported as
#: "not searched". The program decides them (preset or ontology ``roles.<name>.categories``),
#: never the caller.
EXECUTOR_CATEGORIES = ("task", "user_constraints", "counterexamples", "preconditions")
ROLE_CATEGORIES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "executor": EXECUTOR_CATEGORIES,
    "fixer": EXECUTOR_CATEGORIES + ("problem", "reproduction", "fix_scope"),
    "reviewer": ("target_version", "criteria", "actual_change", "machine_observations"),
    "planner": ("user_intent", "options", "open_questions"),
})


#: name -> contract. Why each shape:
#: researcher gathers evidence (facts first, then what was said); planner decides next steps from
#: the task state; writer produces the deliverable from facts; reviewer checks facts against the
#: state of the task; executor calls tools (state and recent turns matter most); fixer repairs a
#: failed step, so the recent history (the error) is required.
ROLE_PRESETS: Mapping[str, RoleContract] = MappingProxyType({
    "researcher": _role("researcher", 6000, ("instruction", "fact"), ("history", "state")),
    "planner": _role("planner", 4000, ("instruction", "state"), ("fact", "history"), ROLE_CATEGORIES["planner"]),
    "writer": _role("writer", 8000, ("instruction", "fact"), ("history", "state")),
    "reviewer": _role("reviewer", 4000, ("instruction", "fact"), ("state", "history"), ROLE_CATEGORIES["reviewer"]),
    "executor": _role("executor", 4000, ("instruction", "state"), ("history", "fact"), ROLE_CATEGORIES["executor"]),
    "fixer": _role("fixer", 6000, ("instruction", "history"), ("fact", "state"), ROLE_CATEGORIES["fixer"]),
})


def preset(name: str) -> RoleContract | None:
    """The preset contract of *name*, or ``None`` when there is none."""
    return ROLE_PRESETS.get(name)


__all__ = ["ROLE_CATEGORIES", "ROLE_PRESETS", "preset"]
