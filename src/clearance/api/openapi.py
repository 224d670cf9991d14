"""Print the API's OpenAPI schema: ``python -m clearance.api.openapi > tests/api/openapi.json``.

The schema does not depend on the configuration or the index, so it is built over a
throw-away empty index.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from clearance.api.app import create_app
from clearance.config import settings_from_dict

__all__ = ["schema"]


def schema() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        settings = settings_from_dict({"embedding": {"provider": "none"}}, root=Path(tmp))
        app = create_app(settings)
        try:
            return app.openapi()
        finally:
            app.state.engine.close()


def main() -> None:
    sys.stdout.write(json.dumps(schema(), indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
