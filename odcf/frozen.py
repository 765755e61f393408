"""A read-only mapping that, unlike :class:`types.MappingProxyType`, pickles and deep-copies.

Segments, sources and plans hold their metadata in one, so that documents, results and plans can
be sent to worker processes (``multiprocessing``, ``concurrent.futures``) and returned from them.

>>> import pickle
>>> m = FrozenMap({"a": 1})
>>> pickle.loads(pickle.dumps(m)) == m == {"a": 1}, dict(m), m | {"b": 2}
(True, {'a': 1}, {'a': 1, 'b': 2})
>>> m["a"] = 2
Traceback (most recent call last):
TypeError: 'FrozenMap' object does not support item assignment
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any


class FrozenMap(Mapping[str, Any]):
    """An immutable mapping (a copy of the dict it is made from)."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any] | None = None) -> None:
        object.__setattr__(self, "_data", dict(data or {}))

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def get(self, key: Any, default: Any = None) -> Any:
        # the dict's own get: Mapping.get goes through __getitem__ and a KeyError, and rendering
        # reads segment metadata this way hundreds of thousands of times per long document
        return self._data.get(key, default)

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenMap, (self._data,))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("FrozenMap is read-only")

    def __or__(self, other: Mapping[str, Any]) -> dict[str, Any]:
        return {**self._data, **other}

    def copy(self) -> dict[str, Any]:
        """A mutable copy, as :meth:`types.MappingProxyType.copy` gives."""
        return dict(self._data)


EMPTY: Mapping[str, Any] = FrozenMap()
