"""Objects that hold a resource (a database, an HTTP client) and release it in ``close``."""

from __future__ import annotations

from typing import Self

__all__ = ["Closing"]


class Closing:
    """A base giving ``with obj:`` semantics to anything with a ``close`` method."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
