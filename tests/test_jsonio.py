"""The strict JSON reader names where an unstorable string is, keys included."""

from __future__ import annotations

import pytest

from clearance import jsonio


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"acl": {"\\ud800": null}}', "key 'acl': a key holds"),
        ('{"a": [{"\\udc00x": 1}]}', "key 'a'[0]: a key holds"),
        ('{"\\ud800": 1}', "a key holds"),
        ('{"title": "x\\ud800"}', "key 'title': a string holds"),
    ],
)
def test_an_unpaired_surrogate_is_refused_naming_where(text: str, where: str) -> None:
    with pytest.raises(jsonio.JSONInputError) as refused:
        jsonio.loads(text)
    assert str(refused.value).startswith(where)
