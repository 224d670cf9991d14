"""Clearance: a permission-aware answer engine.

The public Python API is what this module exports; everything else is internal and may
change. ``Clearance`` opens an index and answers, searches and syncs for named users.

The names are loaded when first used, so that importing one submodule (as every command
of the CLI does) does not load the whole engine.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from clearance.answer.result import AnswerResult, Citation, Route, Status
    from clearance.app import Clearance, SearchResult
    from clearance.config import Settings, load_settings
    from clearance.errors import ClearanceError
    from clearance.model import Sensitivity

_HOME = {
    "AnswerResult": "clearance.answer.result",
    "Citation": "clearance.answer.result",
    "Route": "clearance.answer.result",
    "Status": "clearance.answer.result",
    "Clearance": "clearance.app",
    "SearchResult": "clearance.app",
    "Settings": "clearance.config",
    "load_settings": "clearance.config",
    "ClearanceError": "clearance.errors",
    "Sensitivity": "clearance.model",
}

__all__ = [
    "AnswerResult",
    "Citation",
    "Clearance",
    "ClearanceError",
    "Route",
    "SearchResult",
    "Sensitivity",
    "Settings",
    "Status",
    "__version__",
    "load_settings",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'clearance' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
