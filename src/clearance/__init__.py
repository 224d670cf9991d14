"""Clearance: a permission-aware answer engine.

The public Python API is what this module exports; everything else is internal and may
change. ``Clearance`` opens an index and answers, searches and syncs for named users.
"""

__version__ = "0.1.0"

from clearance.answer.result import AnswerResult, Citation, Route, Status
from clearance.app import Clearance, SearchResult
from clearance.config import Settings, load_settings
from clearance.errors import ClearanceError
from clearance.model import Sensitivity

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
