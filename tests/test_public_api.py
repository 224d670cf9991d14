"""The package's public API is pinned: changing it is a deliberate, visible act."""

from __future__ import annotations

import clearance


def test_public_api_is_pinned() -> None:
    assert sorted(clearance.__all__) == [
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
    for name in clearance.__all__:
        assert getattr(clearance, name) is not None
