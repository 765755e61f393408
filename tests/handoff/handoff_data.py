"""Real-data loaders for the handoff tests; each skips the test when ../shared/data is absent."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

DATA = Path(os.environ.get("ODCF_DATA", Path(__file__).resolve().parents[2].parent / "shared" / "data"))


def shared_data(*parts: str) -> Path:
    path = DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real data not available: {path}")
    return path


def tau_trajectories() -> list[dict[str, Any]]:
    path = shared_data("agent_tau_bench", "gpt-4o-airline.json")
    return json.loads(path.read_text(encoding="utf-8"))


def sgd_dialogues() -> list[dict[str, Any]]:
    path = shared_data("dialog_sgd", "dialogues_001.json")
    return json.loads(path.read_text(encoding="utf-8"))


def sgd_messages_and_slots(dialogue: dict[str, Any]) -> tuple[list[dict[str, str]], dict[str, str]]:
    """The dialogue as OpenAI-style messages, and the user's final slot values (the constraints)."""
    messages = [{"role": "user" if t["speaker"] == "USER" else "assistant", "content": t["utterance"]}
                for t in dialogue["turns"]]
    slots: dict[str, str] = {}
    for t in dialogue["turns"]:
        if t["speaker"] != "USER":
            continue
        for frame in t["frames"]:
            for name, values in frame.get("state", {}).get("slot_values", {}).items():
                slots[name] = values[0]
    return messages, slots
