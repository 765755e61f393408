"""FrozenMap: a read-only mapping that pickles."""
from __future__ import annotations

from odcf.frozen import FrozenMap


def test_a_frozen_map_gets_from_its_dict(monkeypatch):
    # rendering reads segment metadata with .get hundreds of thousands of times per long document:
    # Mapping.get went through __getitem__ and a KeyError for every absent key
    m = FrozenMap({"a": None, "b": 2})

    def fail(self, key):
        raise AssertionError("get went through __getitem__")

    monkeypatch.setattr(FrozenMap, "__getitem__", fail)
    assert m.get("a", 1) is None and m.get("b") == 2 and m.get("c") is None and m.get("c", 3) == 3
