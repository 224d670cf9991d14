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


def test_a_nested_key_is_named_escaped_on_one_line() -> None:
    """A key with a line-breaking character (NEL) is shown escaped, so the error stays one
    line; the fuzzer found the raw form."""
    with pytest.raises(jsonio.JSONInputError) as refused:
        jsonio.loads('{"acl": {"\\u0085": {"\\ud800": null}}}')
    message = str(refused.value)
    assert message.startswith("key 'acl'['\\x85']: a key holds")
    assert len(message.splitlines()) == 1
