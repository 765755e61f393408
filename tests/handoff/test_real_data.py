"""The handoff on real agent data: tau-bench airline trajectories (history, tool output,
conflicting tool results) and SGD dialogues (user slots that must survive). Skipped when
../shared/data is absent."""
from __future__ import annotations

from typing import Any

import pytest

from .handoff_data import sgd_dialogues, sgd_messages_and_slots, tau_trajectories
from odcf.handoff.engine import handoff


def tau_items(traj: dict[str, Any]) -> dict[str, Any]:
    msgs = traj["traj"]
    return {"instruction": msgs[0]["content"][:400], "messages": msgs[1:]}


def test_tau_bench_history_layers_keep_speakers_and_last_turns() -> None:
    traj = next(t for t in tau_trajectories() if len(t["traj"]) >= 25)
    r = handoff_plan_general(role="researcher", items=tau_items(traj))
    hist = r.record["handoff"]["history"]
    assert len(hist) == len(traj["traj"]) - 1
    assert [t["mode"] for t in hist[-3:]] == ["verbatim"] * 3
    assert {t["mode"] for t in hist[:-10]} == {"bullet"}
    last_user = next(m for m in reversed(traj["traj"]) if m["role"] == "user")
    assert f"user: {last_user['content'].strip()}" in r.text
    assert r.tokens <= 6000
    # every turn of the history is accounted for in the record, with its speaker
    assert all(t["speaker"] in ("user", "assistant") or t["speaker"].startswith("tool:") for t in hist)


def test_tau_bench_conflicting_tool_results_are_listed() -> None:
    """Task 2: get_reservation_details then update_reservation_flights report different prices for
    the same reservation legs; the handoff lists them instead of merging."""
    traj = next(t for t in tau_trajectories() if t["task_id"] == 2 and t["trial"] == 0)
    r = handoff_plan_general(role="reviewer", items=tau_items(traj))
    found = {(c["entity"], c["attribute"]) for c in r.record["conflicts"]}
    assert ("JG7FMM / HAT028 on 2024-05-21", "price") in found
    c = next(c for c in r.record["conflicts"] if c["entity"] == "JG7FMM / HAT028 on 2024-05-21")
    assert [v["origins"] for v in c["values"]] == [["tool:get_reservation_details"], ["tool:update_reservation_flights"]]
    assert "- JG7FMM / HAT028 on 2024-05-21 price: 1859" in r.text


@pytest.mark.parametrize("budget", [300, 600])
def test_sgd_user_constraints_survive_tight_budgets(budget: int) -> None:
    dialogues = [d for d in sgd_dialogues() if len(d["turns"]) >= 14][:5]
    assert dialogues
    for d in dialogues:
        messages, slots = sgd_messages_and_slots(d)
        constraints = [{"id": f"slot-{name}", "category": "user_constraints", "origin": "sgd:slot_values",
                        "optional": True, "text": f"{name.replace('_', ' ')}: {value}"}
                       for name, value in slots.items()]
        items = {"instruction": "Complete the user's booking exactly as agreed.",
                 "searched": ["task", "counterexamples", "preconditions"],
                 "items": constraints, "messages": messages}
        r = handoff_plan_general(role="executor", items=items, budget=budget)
        for value in slots.values():
            assert value in r.text, (d["dialogue_id"], value)
        assert r.record["not_searched"] == []
        assert r.tokens <= budget and not r.record["over_budget"]
        assert any(t["mode"] != "verbatim" for t in r.record["handoff"]["history"])


def handoff_plan_general(**kwargs: Any) -> Any:
    from odcf.plan.model import Plan
    from odcf.plan.presets import ROLE_PRESETS

    return handoff(Plan(domain="agent_test", roles=ROLE_PRESETS), **kwargs)
