"""Kinds → factories: the one registry shape behind connectors and directory sources.

A kind is found when it is registered (:meth:`Plugins.register`, from a plugin or a test)
or, for a built-in kind, by importing the module that registers it — the first time a
source of that kind is built, so a kind's dependencies load only when it is configured.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
from collections.abc import Mapping
from typing import Generic, TypeVar

__all__ = ["Plugins"]

F = TypeVar("F")


class Plugins(Generic[F]):
    def __init__(self, builtin: Mapping[str, str]) -> None:
        self._builtin = dict(builtin)  # kind → the module that registers it
        self._factories: dict[str, F] = {}
        self._lock = threading.Lock()

    def register(self, kind: str, factory: F) -> None:
        """Make ``kind`` available; a later registration of the same kind wins."""
        with self._lock:
            self._factories[kind] = factory

    def kinds(self) -> list[str]:
        """Every registered kind and every built-in whose module can be imported."""
        with self._lock:
            registered = set(self._factories)
        importable = {k for k, m in self._builtin.items() if importlib.util.find_spec(m)}
        return sorted(registered | importable)

    def get(self, kind: str) -> F | None:
        """The factory of ``kind``, importing its built-in module first if need be."""
        with self._lock:
            found = self._factories.get(kind)
        module = self._builtin.get(kind)
        if found is None and module is not None and importlib.util.find_spec(module):
            importlib.import_module(module)
            with self._lock:
                found = self._factories.get(kind)
        return found
