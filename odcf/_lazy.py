"""Lazy re-exports for package ``__init__`` modules: nothing heavy loads until a name is used.

>>> ns = {}
>>> getter = lazy_getattr("demo", {"dumps": ("json", "dumps"), "sqrt": "math"}, ns)
>>> getter("dumps").__name__, getter("sqrt").__name__, sorted(ns)
('dumps', 'sqrt', ['dumps', 'sqrt'])
>>> getter("nope")
Traceback (most recent call last):
...
AttributeError: module 'demo' has no attribute 'nope'
>>> lazy_dir({"dumps": ("json", "dumps")}, {"__version__": "1"})()
['__version__', 'dumps']
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any


def lazy_getattr(package: str, table: Mapping[str, str | tuple[str, str]],
                 namespace: MutableMapping[str, Any]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``table[name]`` on first use and caches it in *namespace*.

    A table value is the module that defines the name, or ``(module, attribute)`` when the
    attribute is called differently there.
    """
    def __getattr__(name: str) -> Any:
        try:
            target = table[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        module_name, attr = (target, name) if isinstance(target, str) else target
        value = getattr(importlib.import_module(module_name), attr)
        namespace[name] = value
        return value

    return __getattr__


def lazy_dir(table: Mapping[str, str | tuple[str, str]], namespace: Mapping[str, Any]) -> Callable[[], list[str]]:
    """A module ``__dir__`` that lists the lazy names of *table* (not yet imported) with the module's globals."""
    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(table))

    return __dir__
