"""The qmark → format translation of the PostgreSQL connection seam."""

from __future__ import annotations

import pytest

from clearance.store.pg_connection import qmark_to_format


@pytest.mark.parametrize(
    ("qmark", "expected"),
    [
        ("SELECT * FROM t WHERE a = ? AND b = ?", "SELECT * FROM t WHERE a = %s AND b = %s"),
        ("SELECT '?' , ?", "SELECT '?' , %s"),  # a quoted ? is text
        ("SELECT 'it''s ?', ?", "SELECT 'it''s ?', %s"),  # a doubled quote stays inside
        ('SELECT "we?ird" FROM t WHERE x = ?', 'SELECT "we?ird" FROM t WHERE x = %s'),
        ("SELECT 5 % 2, ?", "SELECT 5 %% 2, %s"),  # a literal % is escaped
        ("SELECT '100%' -- why?\n, ?", "SELECT '100%%' -- why?\n, %s"),
        ("SELECT 1", "SELECT 1"),
    ],
)
def test_placeholders_are_translated_outside_quotes_and_comments(qmark: str, expected: str) -> None:
    assert qmark_to_format(qmark) == expected
