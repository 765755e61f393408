"""Shared fixtures. Every fixture text here is written by the project."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from odcf.plan.model import Anchor, Plan, ProtectionRules, RerankQuery, RoleContract

SHARED_DATA = Path(os.environ.get("ODCF_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))


def shared_data(*parts: str) -> Path:
    """A path under ../shared/data; skips the test when the data is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real data not available: {path}")
    return path


@pytest.fixture
def plan() -> Plan:
    return Plan(
        domain="test_contracts",
        task_goal="Find liability caps and termination terms.",
        queries=(
            RerankQuery("liability", "liability cap damages indemnity", ("liability", "cap", "damages")),
            RerankQuery("termination", "termination notice renewal", ("termination", "notice")),
        ),
        protection=ProtectionRules(
            anchors=(
                Anchor("money", r"\$\s?\d[\d,]*(?:\.\d+)?(?:\s?(?:million|billion))?"),
                Anchor("clause", r"(?:Section|Clause|Article|§)\s*\d+(?:\.\d+)*"),
                Anchor("percent", r"\d+(?:\.\d+)?\s?%"),
            ),
            terms=("gross negligence", "force majeure", "diabetic kidney disease"),
            connectives=("not", "despite", "unless", "but", "except", "however", "不得", "但是"),
            entities=("DATE", "MONEY", "PERCENT"),
            markers=("shall", "★"),
        ),
        roles={
            "writer": RoleContract("writer", 200, required=("instruction", "fact"), optional=("history", "state"),
                                   forbidden=("reasoning",)),
            "planner": RoleContract("planner", 120, required=("instruction", "state"), optional=("fact", "history"),
                                    forbidden=("reasoning",)),
        },
    )


CONTRACT = """# Master Services Agreement

Section 4.2 Liability. The Supplier's total liability shall not exceed $50,000 in any year. \
This cap does not apply to gross negligence. The parties met in Paris. The weather was nice. \
Despite a 15% drop in share price, the company reported strong earnings.

Section 12.1 Termination. Either party may terminate on 90 days' notice, unless a force majeure event occurs.
"""


@pytest.fixture
def contract_text() -> str:
    return CONTRACT
