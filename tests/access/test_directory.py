"""The directory: parsing (Clearance JSON and SCIM 2.0), snapshot/delta semantics, principal sets.

The principal set is the one input every authorisation decision uses, so besides examples the
property tests compare it with a deliberately naive fixpoint computation over random directories
(with disabled users, dangling members, cycles and self-membership).
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clearance.access.directory import (
    Directory,
    DirectoryDoc,
    Group,
    User,
    parse_directory,
)
from clearance.access.directory_file import (
    SCIM_BULK_REQUEST,
    SCIM_ENTERPRISE_USER,
    SCIM_GROUP,
    SCIM_LIST_RESPONSE,
    SCIM_PATCH_OP,
    SCIM_USER,
)
from clearance.errors import ClearanceError, DirectoryError
from clearance.model import EVERYONE

# ------------------------------------------------------------------------------------------------
# Fixtures (inline JSON)
# ------------------------------------------------------------------------------------------------

CLEARANCE_SNAPSHOT: dict[str, Any] = {
    "users": [
        {"id": "alice", "active": True, "attributes": {"department": "finance"}},
        {"id": "bob", "active": True},
        {"id": "carol", "active": False, "attributes": {"employment_type": "contractor"}},
    ],
    "groups": [
        {"id": "finance-emea", "members": ["user:alice", "user:carol"]},
        {"id": "finance", "members": ["group:finance-emea", "user:bob"]},
        {"id": "staff", "members": ["group:finance", "group:ghost", "user:nobody"]},
        {"id": "empty"},
    ],
}


def scim_user(ident: str, **extra: Any) -> dict[str, Any]:
    return {"schemas": [SCIM_USER], "id": ident, "userName": f"{ident}@example.com", **extra}


def scim_group(ident: str, members: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"schemas": [SCIM_GROUP], "id": ident, "displayName": ident, "members": members, **extra}


def list_response(*resources: dict[str, Any]) -> dict[str, Any]:
    return {
        "schemas": [SCIM_LIST_RESPONSE],
        "totalResults": len(resources),
        "Resources": list(resources),
    }


def bulk(*operations: dict[str, Any]) -> dict[str, Any]:
    return {"schemas": [SCIM_BULK_REQUEST], "Operations": list(operations)}


def load(data: Any) -> Directory:
    return Directory.empty().replace(parse_directory(data, source="dir.json"))


def error_of(data: Any, source: str = "dir.json") -> str:
    with pytest.raises(DirectoryError) as info:
        parse_directory(data, source=source)
    return info.value.message


# ------------------------------------------------------------------------------------------------
# Clearance JSON
# ------------------------------------------------------------------------------------------------


def test_clearance_snapshot_parses_users_groups_and_attributes() -> None:
    doc = parse_directory(CLEARANCE_SNAPSHOT, source="dir.json")
    assert not doc.delta
    assert doc.source == "dir.json"
    assert set(doc.users) == {"alice", "bob", "carol"}
    assert doc.users["alice"].attributes == {"department": "finance"}
    assert doc.users["bob"].attributes == {}
    assert doc.users["carol"].active is False
    assert doc.groups["finance"].members == frozenset({"group:finance-emea", "user:bob"})
    assert doc.groups["empty"].members == frozenset()
    assert doc.removed_users == frozenset() and doc.removed_groups == frozenset()


def test_principal_set_is_user_plus_transitive_groups_plus_everyone() -> None:
    directory = load(CLEARANCE_SNAPSHOT)
    assert directory.principal_set("alice") == frozenset(
        {"user:alice", "group:finance-emea", "group:finance", "group:staff", EVERYONE}
    )
    assert directory.principal_set("bob") == frozenset(
        {"user:bob", "group:finance", "group:staff", EVERYONE}
    )


def test_disabled_user_gets_empty_set_although_still_listed_in_groups() -> None:
    directory = load(CLEARANCE_SNAPSHOT)
    assert "user:carol" in directory.groups["finance-emea"].members
    assert directory.principal_set("carol") == frozenset()
    assert EVERYONE not in directory.principal_set("carol")
    assert directory.groups_of("carol") == frozenset()
    assert directory.why("carol", "finance") is None


def test_unknown_user_gets_empty_set() -> None:
    directory = load(CLEARANCE_SNAPSHOT)
    assert directory.principal_set("nobody") == frozenset()  # named as a member, but no account
    assert directory.principal_set("") == frozenset()
    assert directory.principal_set("user:alice") == frozenset()  # a principal is not a user id


def test_unknown_group_in_membership_matches_nothing() -> None:
    directory = load(CLEARANCE_SNAPSHOT)
    assert "group:ghost" in directory.groups["staff"].members
    for user_id in ("alice", "bob"):
        assert "group:ghost" not in directory.principal_set(user_id)
    # A group whose only member is an undefined group is not reached through it.
    directory = load(
        {
            "users": [{"id": "u", "active": True}],
            "groups": [{"id": "a", "members": ["user:u"]}, {"id": "b", "members": ["group:ghost"]}],
        }
    )
    assert directory.principal_set("u") == frozenset({"user:u", "group:a", EVERYONE})


def test_groups_of_and_why_explain_membership() -> None:
    directory = load(CLEARANCE_SNAPSHOT)
    assert directory.groups_of("alice") == frozenset({"finance-emea", "finance", "staff"})
    assert directory.why("alice", "staff") == [
        "user:alice",
        "group:finance-emea",
        "group:finance",
        "group:staff",
    ]
    assert directory.why("alice", "group:finance") == [
        "user:alice",
        "group:finance-emea",
        "group:finance",
    ]
    assert directory.why("bob", "finance-emea") is None
    assert directory.why("bob", "ghost") is None
    assert directory.why("nobody", "staff") is None


def test_why_returns_a_shortest_path() -> None:
    directory = load(
        {
            "users": [{"id": "u", "active": True}],
            "groups": [
                {"id": "a", "members": ["user:u"]},
                {"id": "b", "members": ["group:a"]},
                {"id": "c", "members": ["group:b"]},
                {"id": "top", "members": ["group:c", "user:u"]},
            ],
        }
    )
    assert directory.why("u", "top") == ["user:u", "group:top"]
    assert directory.why("u", "c") == ["user:u", "group:a", "group:b", "group:c"]


def test_cycles_and_self_membership_terminate() -> None:
    directory = load(
        {
            "users": [{"id": "u", "active": True}],
            "groups": [
                {"id": "a", "members": ["user:u", "group:c", "group:a"]},
                {"id": "b", "members": ["group:a"]},
                {"id": "c", "members": ["group:b"]},
                {"id": "self", "members": ["group:self"]},
            ],
        }
    )
    assert directory.principal_set("u") == frozenset(
        {"user:u", "group:a", "group:b", "group:c", EVERYONE}
    )
    assert directory.why("u", "c") == ["user:u", "group:a", "group:b", "group:c"]
    assert directory.why("u", "self") is None


def test_deep_nesting_reaches_every_level() -> None:
    depth = 300
    groups = [{"id": "g0", "members": ["user:u"]}] + [
        {"id": f"g{i}", "members": [f"group:g{i - 1}"]} for i in range(1, depth)
    ]
    directory = load({"users": [{"id": "u", "active": True}], "groups": groups})
    principals = directory.principal_set("u")
    assert len(principals) == depth + 2
    assert f"group:g{depth - 1}" in principals
    path = directory.why("u", f"g{depth - 1}")
    assert path is not None and len(path) == depth + 1


def test_principal_set_is_cached_per_instance() -> None:
    directory = load(CLEARANCE_SNAPSHOT)
    assert directory.principal_set("alice") is directory.principal_set("alice")


def test_json_text_is_accepted() -> None:
    doc = parse_directory(json.dumps(CLEARANCE_SNAPSHOT), source="dir.json")
    assert set(doc.users) == {"alice", "bob", "carol"}
    doc = parse_directory(json.dumps(CLEARANCE_SNAPSHOT).encode(), source="dir.json")
    assert set(doc.groups) == {"finance-emea", "finance", "staff", "empty"}


def test_empty_object_is_an_empty_snapshot() -> None:
    directory = load(CLEARANCE_SNAPSHOT).replace(parse_directory({}, source="empty.json"))
    assert directory.users == {} and directory.groups == {}
    assert directory.principal_set("alice") == frozenset()


# ------------------------------------------------------------------------------------------------
# Snapshot vs delta
# ------------------------------------------------------------------------------------------------


def test_replace_removes_everything_missing_from_the_snapshot() -> None:
    first = load(CLEARANCE_SNAPSHOT)
    assert first.version == 1
    second = first.replace(
        parse_directory(
            {
                "users": [{"id": "bob", "active": True}],
                "groups": [{"id": "finance", "members": ["user:bob"]}],
            },
            source="snap2.json",
        )
    )
    assert second.version == 2
    assert set(second.users) == {"bob"}
    assert set(second.groups) == {"finance"}
    assert second.principal_set("alice") == frozenset()
    assert second.principal_set("bob") == frozenset({"user:bob", "group:finance", EVERYONE})
    # The old instance is untouched (immutable value).
    assert first.version == 1 and "alice" in first.users
    assert "group:staff" in first.principal_set("bob")


def test_apply_delta_adds_changes_and_removes() -> None:
    base = load(CLEARANCE_SNAPSHOT)
    delta = parse_directory(
        {
            "users": [
                {"id": "alice", "active": False},
                {"id": "dave", "active": True, "attributes": {"department": "legal"}},
            ],
            "groups": [{"id": "legal", "members": ["user:dave"]}],
            "removed_users": ["bob", "never-existed"],
            "removed_groups": ["finance-emea"],
        },
        source="delta.json",
    )
    assert delta.delta
    assert "group:finance-emea" in base.principal_set("alice")  # warm: the index gets patched
    after = base.apply_delta(delta)
    assert after.version == base.version + 1
    assert set(after.users) == {"alice", "carol", "dave"}
    assert set(after.groups) == {"finance", "staff", "empty", "legal"}
    # Disabling takes effect on the delta, not on the next full sync (docs/design.md §7).
    assert after.principal_set("alice") == frozenset()
    assert after.principal_set("dave") == frozenset({"user:dave", "group:legal", EVERYONE})
    # Removed group's member string stays in its parent (documented); it resolves to nothing.
    assert "group:finance-emea" in after.groups["finance"].members
    assert after.principal_set("bob") == frozenset()
    # Upserts replace whole records (no attribute merge).
    assert after.users["alice"].attributes == {}


def test_apply_delta_is_idempotent_on_retry() -> None:
    base = load(CLEARANCE_SNAPSHOT)
    delta = parse_directory({"removed_users": ["bob"], "removed_groups": ["ghost"]}, source="d")
    once = base.apply_delta(delta)
    twice = once.apply_delta(delta)
    assert once.users == twice.users and once.groups == twice.groups
    assert twice.version == once.version + 1


def test_recreating_a_removed_group_revives_dangling_memberships() -> None:
    base = load(CLEARANCE_SNAPSHOT)
    assert "group:staff" in base.principal_set("bob")
    without = base.apply_delta(parse_directory({"removed_groups": ["finance"]}, source="d"))
    assert "group:staff" not in without.principal_set("bob")
    again = without.apply_delta(
        parse_directory({"groups": [{"id": "finance", "members": ["user:bob"]}]}, source="d")
    )
    assert "group:staff" in again.principal_set("bob")


def test_replace_refuses_a_delta_document() -> None:
    delta = parse_directory({"users": [], "removed_users": []}, source="delta.json")
    with pytest.raises(DirectoryError, match=r"delta\.json: is a delta"):
        load(CLEARANCE_SNAPSHOT).replace(delta)


def test_same_id_upserted_and_removed_is_an_error() -> None:
    message = error_of({"users": [{"id": "a", "active": True}], "removed_users": ["a"]})
    assert message == "dir.json: removed_users[0]: duplicate user id 'a' (first at users[0].id)"
    # Users and groups are separate namespaces.
    doc = parse_directory(
        {"users": [{"id": "a", "active": True}], "groups": [{"id": "a"}]}, source="d"
    )
    assert set(doc.users) == set(doc.groups) == {"a"}


# ------------------------------------------------------------------------------------------------
# SCIM 2.0
# ------------------------------------------------------------------------------------------------


def test_scim_list_response_maps_users_groups_and_attributes() -> None:
    data = list_response(
        scim_user(
            "2819c223",
            displayName="Alice Smith",
            userType="Employee",
            **{SCIM_ENTERPRISE_USER: {"department": "Finance", "employeeNumber": "701984"}},
            schemas=[SCIM_USER, SCIM_ENTERPRISE_USER],
        ),
        scim_user("bob", active=False, name={"formatted": "Bob Jones"}),
        {"id": "carol", "userName": "carol", "meta": {"resourceType": "User"}},
        scim_group(
            "fin",
            [
                {"value": "2819c223", "type": "User"},
                {"value": "bob", "type": "user", "display": "Bob"},
                {"value": "sub", "type": "Group"},
            ],
        ),
        {
            "id": "sub",
            "displayName": "Sub",
            "meta": {"resourceType": "Group"},
            "members": [{"value": "carol"}],
        },
    )
    doc = parse_directory(data, source="scim.json")
    assert not doc.delta
    alice = doc.users["2819c223"]
    assert alice.active is True
    assert dict(alice.attributes) == {
        "department": "Finance",
        "employment_type": "Employee",
        "name": "Alice Smith",
        "user_name": "2819c223@example.com",
    }
    assert doc.users["bob"].active is False
    assert doc.users["bob"].attributes["name"] == "Bob Jones"
    assert doc.users["carol"].active is True  # SCIM: absent 'active' means active
    assert doc.groups["fin"].members == frozenset({"user:2819c223", "user:bob", "group:sub"})
    assert doc.groups["sub"].members == frozenset({"user:carol"})
    directory = Directory.empty().replace(doc)
    assert directory.principal_set("carol") == frozenset(
        {"user:carol", "group:sub", "group:fin", EVERYONE}
    )
    assert directory.principal_set("bob") == frozenset()


def test_scim_untyped_members_resolve_users_first_then_groups() -> None:
    data = list_response(
        scim_user("x"),
        scim_group("x", []),
        scim_group("y", []),
        scim_group("parent", [{"value": "x"}, {"value": "y"}]),
    )
    doc = parse_directory(data, source="scim.json")
    assert doc.groups["parent"].members == frozenset({"user:x", "group:y"})


def test_scim_untyped_member_unknown_to_the_document_is_an_error() -> None:
    data = list_response(scim_group("g", [{"value": "ext", "display": "External"}]))
    assert error_of(data, "scim.json") == (
        "scim.json: Resources[0].members[0].value: member 'ext' has no type and is neither a "
        'user nor a group in this document; add "type": "User" or "Group"'
    )


def test_scim_member_type_can_come_from_ref() -> None:
    data = list_response(
        scim_group(
            "g",
            [
                {"value": "ext", "$ref": "https://idp.example.com/scim/v2/Users/ext"},
                {"value": "grp", "$ref": "https://idp.example.com/scim/v2/Groups/grp"},
            ],
        )
    )
    doc = parse_directory(data, source="scim.json")
    assert doc.groups["g"].members == frozenset({"user:ext", "group:grp"})


def test_scim_single_resources_are_snapshots() -> None:
    user_doc = parse_directory(scim_user("solo", active=True), source="u.json")
    assert set(user_doc.users) == {"solo"} and not user_doc.delta
    group_doc = parse_directory(scim_group("g", [{"value": "u", "type": "User"}]), source="g.json")
    assert group_doc.groups["g"].members == frozenset({"user:u"})


def test_scim_bulk_request_upserts_and_deletes() -> None:
    base = load(
        list_response(
            scim_user("alice"),
            scim_user("bob"),
            scim_group("eng", [{"value": "alice", "type": "User"}, {"value": "bob"}]),
            scim_group("old", [{"value": "bob", "type": "User"}]),
        )
    )
    assert base.groups_of("bob") == frozenset({"eng", "old"})
    request = bulk(
        {"method": "POST", "path": "/Users", "bulkId": "q1", "data": scim_user("carol")},
        {"method": "PUT", "path": "/Users/alice", "data": scim_user("alice", active=False)},
        {
            "method": "PATCH",
            "path": "/Groups/eng",
            "data": {
                "schemas": [SCIM_PATCH_OP],
                "Operations": [
                    {
                        "op": "Replace",
                        "value": {
                            "displayName": "Engineering",
                            "members": [{"value": "carol", "type": "User"}],
                        },
                    }
                ],
            },
        },
        {"method": "DELETE", "path": "/Users/bob"},
        {"method": "delete", "path": "/Groups/old"},
    )
    doc = parse_directory(request, source="bulk.json")
    assert doc.delta
    assert set(doc.users) == {"carol", "alice"}
    assert doc.removed_users == frozenset({"bob"})
    assert doc.removed_groups == frozenset({"old"})
    after = base.apply_delta(doc)
    assert set(after.users) == {"alice", "carol"}
    assert set(after.groups) == {"eng"}
    assert after.principal_set("alice") == frozenset()
    assert after.principal_set("bob") == frozenset()
    assert after.principal_set("carol") == frozenset({"user:carol", "group:eng", EVERYONE})
    with pytest.raises(DirectoryError, match=r"bulk\.json: is a delta"):
        base.replace(doc)


def test_scim_bulk_patch_with_full_resource_body() -> None:
    doc = parse_directory(
        bulk({"method": "PATCH", "path": "/Users/u1", "data": {"id": "u1", "active": False}}),
        source="bulk.json",
    )
    assert doc.users["u1"].active is False


@pytest.mark.parametrize(
    ("operation", "expected"),
    [
        (
            {"method": "DELETE", "path": "/Users"},
            "Operations[0].path: expected /Users/<id> or /Groups/<id>, got '/Users'",
        ),
        (
            {"method": "DELETE", "path": "/Devices/x"},
            "Operations[0].path: expected /Users/<id> or /Groups/<id>, got '/Devices/x'",
        ),
        (
            {"method": "GET", "path": "/Users/x"},
            "Operations[0].method: unsupported method 'GET' (POST, PUT, PATCH, DELETE)",
        ),
        (
            {"method": "POST", "path": "/Users", "data": {"userName": "x"}},
            "Operations[0].data: missing required key 'id'",
        ),
        (
            {"method": "POST", "path": "/Groups", "data": scim_user("x")},
            "Operations[0].data: resource is a user but the operation path names a group",
        ),
        (
            {"method": "PUT", "path": "/Users/a", "data": scim_user("b")},
            "Operations[0].data.id: id 'b' does not match the operation path id 'a'",
        ),
        (
            {
                "method": "PATCH",
                "path": "/Groups/g",
                "data": {
                    "schemas": [SCIM_PATCH_OP],
                    "Operations": [{"op": "add", "path": "members", "value": [{"value": "u"}]}],
                },
            },
            "Operations[0].data.Operations[0]: partial PATCH is not supported: send one 'replace' "
            "without 'path' whose value is the full resource",
        ),
        (
            {
                "method": "POST",
                "path": "/Groups",
                "data": scim_group("g", [{"value": "bulkId:q1", "type": "User"}]),
            },
            "Operations[0].data.members[0].value: bulkId references ('bulkId:q1') are not "
            "supported; use real ids",
        ),
        ({"path": "/Users/x"}, "Operations[0]: missing required key 'method'"),
    ],
)
def test_scim_bulk_errors_name_the_operation(operation: dict[str, Any], expected: str) -> None:
    assert error_of(bulk(operation), "bulk.json") == f"bulk.json: {expected}"


def test_scim_bulk_duplicate_operation_on_one_id_is_an_error() -> None:
    message = error_of(
        bulk(
            {"method": "PUT", "path": "/Users/a", "data": scim_user("a")},
            {"method": "DELETE", "path": "/Users/a"},
        )
    )
    assert message == (
        "dir.json: Operations[1].path: duplicate user id 'a' (first at Operations[0].data.id)"
    )


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            list_response({"id": "x"}),
            "Resources[0]: cannot tell whether this resource is a User or a Group: add its core "
            "schema URN to 'schemas' or set meta.resourceType",
        ),
        (
            list_response(scim_user("x", active="false")),
            "Resources[0].active: expected a boolean, got string",
        ),
        (
            list_response(scim_user("x", **{SCIM_ENTERPRISE_USER: {"department": 7}})),
            f'Resources[0]["{SCIM_ENTERPRISE_USER}"].department: expected a string, got number',
        ),
        (
            list_response(scim_user("x"), scim_user("y"), scim_user("x")),
            "Resources[2].id: duplicate user id 'x' (first at Resources[0].id)",
        ),
        (
            list_response(scim_group("g", [{"value": "u", "type": "Device"}])),
            "Resources[0].members[0].type: unsupported type 'Device' (User/Group)",
        ),
        (
            list_response(scim_group("g", [{"type": "User"}])),
            "Resources[0].members[0]: missing required key 'value'",
        ),
        (
            list_response(scim_group("g", [{"value": "a b", "type": "User"}])),
            "Resources[0].members[0].value: id 'a b' must not contain whitespace",
        ),
        (
            list_response(scim_user("x", meta={"resourceType": "Group"})),
            "Resources[0].meta.resourceType: contradicts the resource's schemas",
        ),
        (
            {"schemas": [SCIM_LIST_RESPONSE], "totalResults": 3, "Resources": [scim_user("x")]},
            "totalResults: 3 results but 1 Resources: this is one page of a paginated response; "
            "merge all pages into one document first",
        ),
        (
            {"schemas": ["urn:ietf:params:scim:api:messages:2.0:Error"], "status": "400"},
            "schemas: unsupported SCIM message: expected a ListResponse, a BulkRequest, or a "
            "User or Group resource",
        ),
        (
            {"schemas": SCIM_LIST_RESPONSE, "Resources": []},
            "schemas: expected an array, got string",
        ),
    ],
)
def test_scim_errors_name_the_json_path(data: dict[str, Any], expected: str) -> None:
    assert error_of(data, "scim.json") == f"scim.json: {expected}"


# ------------------------------------------------------------------------------------------------
# Clearance JSON errors
# ------------------------------------------------------------------------------------------------


def _users(*users: Any) -> dict[str, Any]:
    return {"users": list(users)}


OK_USER = {"id": "ok", "active": True}


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            _users(
                OK_USER,
                {"id": "b", "active": True},
                {"id": "c", "active": True},
                {"id": "d", "active": "yes"},
            ),
            "users[3].active: expected a boolean, got string",
        ),
        (_users({"id": "a"}), "users[0]: missing required key 'active'"),
        (_users({"active": True}), "users[0]: missing required key 'id'"),
        (_users({"id": "", "active": True}), "users[0].id: id must not be empty"),
        (
            _users({"id": "a b", "active": True}),
            "users[0].id: id 'a b' must not contain whitespace",
        ),
        (_users({"id": "a:b", "active": True}), "users[0].id: id 'a:b' must not contain ':'"),
        (
            _users({"id": "a\x00", "active": True}),
            "users[0].id: id 'a\\x00' must not contain control characters (U+0000)",
        ),
        (_users({"id": 5, "active": True}), "users[0].id: expected a string, got number"),
        (
            _users({"id": "a", "active": True, "attributes": {"level": 3}}),
            "users[0].attributes.level: expected a string, got number",
        ),
        (
            _users({"id": "a", "active": True, "attributes": {"cost center": None}}),
            'users[0].attributes["cost center"]: expected a string, got null',
        ),
        (
            _users({"id": "a", "active": True, "groups": []}),
            "users[0].groups: unknown key (expected one of id, active, attributes, aliases); "
            'a user\'s groups are those whose "members" name "user:<id>" (docs/access.md)',
        ),
        (
            _users(OK_USER, {"id": "ok", "active": False}),
            "users[1].id: duplicate user id 'ok' (first at users[0].id)",
        ),
        ({"users": {"id": "a"}}, "users: expected an array, got object"),
        ({"users": ["alice"]}, "users[0]: expected an object, got string"),
        (
            {"groups": [{"id": "g", "members": ["alice"]}]},
            "groups[0].members[0]: bad principal 'alice': use 'user:<id>', 'group:<id>' or "
            "'everyone'",
        ),
        (
            {"groups": [{"id": "g", "members": ["user:a:b"]}]},
            "groups[0].members[0]: bad member 'user:a:b': id 'a:b' must not contain ':'",
        ),
        (
            {"groups": [{"id": "g", "members": ["everyone"]}]},
            "groups[0].members[0]: 'everyone' cannot be a group member; members are 'user:<id>' "
            "or 'group:<id>'",
        ),
        (
            {"groups": [{"id": "g", "members": "user:a"}]},
            "groups[0].members: expected an array, got string",
        ),
        (
            {"groups": [{"id": "g"}, {"id": "g"}]},
            "groups[1].id: duplicate group id 'g' (first at groups[0].id)",
        ),
        ({"removed_users": ["a", ""]}, "removed_users[1]: id must not be empty"),
        ({"removed_groups": "g"}, "removed_groups: expected an array, got string"),
        ({"version": -1}, "version: expected a non-negative integer, got number"),
        ({"version": True}, "version: expected a non-negative integer, got boolean"),
        (
            {"user": []},
            "user: unknown key (expected one of users, groups, removed_users, removed_groups, "
            "version)",
        ),
        ([], "$: expected an object, got array"),
        (None, "$: expected an object, got null"),
        (
            "{nope",
            "$: not valid JSON: Expecting property name enclosed in double quotes: line 1 column "
            "2 (char 1)",
        ),
    ],
)
def test_clearance_errors_name_the_json_path_and_source(data: Any, expected: str) -> None:
    assert error_of(data, "people.json") == f"people.json: {expected}"


def test_directory_error_is_a_clearance_error_with_exit_code() -> None:
    with pytest.raises(ClearanceError) as info:
        parse_directory({"users": 1}, source="x.json")
    assert isinstance(info.value, DirectoryError)
    assert info.value.to_dict() == {
        "error": "directory_error",
        "message": "x.json: users: expected an array, got number",
    }


# ------------------------------------------------------------------------------------------------
# Values and serialisation
# ------------------------------------------------------------------------------------------------


def test_directory_is_immutable() -> None:
    directory = load(CLEARANCE_SNAPSHOT)
    with pytest.raises(AttributeError):
        directory.version = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        directory.users["x"] = User("x", True)  # type: ignore[index]
    with pytest.raises(TypeError):
        directory.users["alice"].attributes["department"] = "hr"  # type: ignore[index]


def test_user_and_group_validate_direct_construction() -> None:
    with pytest.raises(DirectoryError):
        User("a b", True)
    with pytest.raises(DirectoryError):
        Group("g", frozenset({"alice"}))
    group = Group("g", ["user:a", "user:a"])  # type: ignore[arg-type]
    assert group.members == frozenset({"user:a"})
    assert User("a", True, {"b": "2", "a": "1"}) == User("a", True, {"a": "1", "b": "2"})
    assert hash(User("a", True, {"b": "2"})) == hash(User("a", True, {"b": "2"}))


def test_directory_constructor_checks_keys_and_version() -> None:
    with pytest.raises(DirectoryError, match="keyed 'x' has id 'y'"):
        Directory({"x": User("y", True)})
    with pytest.raises(DirectoryError, match="duplicate group id 'g'"):
        Directory(groups=[Group("g"), Group("g")])
    with pytest.raises(DirectoryError, match="version"):
        Directory(version=-1)
    directory = Directory([User("u", True)], [Group("g", frozenset({"user:u"}))], version=4)
    assert directory.principal_set("u") == frozenset({"user:u", "group:g", EVERYONE})
    assert Directory.empty() == Directory() and Directory.empty().version == 0


def test_to_json_is_sorted_and_round_trips() -> None:
    directory = load(CLEARANCE_SNAPSHOT)
    data = directory.to_json()
    assert data == json.loads(json.dumps(data))
    assert [u["id"] for u in data["users"]] == ["alice", "bob", "carol"]
    assert [g["id"] for g in data["groups"]] == ["empty", "finance", "finance-emea", "staff"]
    assert data["groups"][3]["members"] == ["group:finance", "group:ghost", "user:nobody"]
    assert Directory.from_json(data) == directory
    assert Directory.from_json(json.dumps(data)) == directory
    rebuilt = Directory.empty().replace(parse_directory(data, source="rt.json"))
    assert rebuilt.users == directory.users and rebuilt.groups == directory.groups


def test_from_json_refuses_a_delta() -> None:
    with pytest.raises(DirectoryError, match=r"d\.json: is a delta"):
        Directory.from_json({"removed_users": []}, source="d.json")


def _stored_with(path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    """The stored form of the test snapshot with the value at ``path`` replaced."""
    data = json.loads(json.dumps(load(CLEARANCE_SNAPSHOT).to_json()))
    *parents, last = path
    target = data
    for key in parents:
        target = target[key]
    target[last] = value
    return data


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("version",), -1),
        (("version",), True),
        (("version",), None),
        (("users",), {"alice": True}),
        (("users", 0, "id"), "al ice"),
        (("users", 0, "id"), 7),
        (("users", 0, "active"), "yes"),
        (("users", 0, "attributes"), {"": "x"}),
        (("users", 0, "attributes"), {"department": 1}),
        (("users", 0, "attributes"), []),
        (("users", 0, "aliases"), [" "]),
        (("users", 0, "aliases"), ""),
        (("users", 0, "colour"), "blue"),
        (("users", 1), {"id": "alice", "active": True}),
        (("groups", 0, "members"), ["alice"]),
        (("groups", 0, "members"), None),
        (("groups", 0, "members"), [1]),
        (("groups", 1, "id"), "finance-emea"),
        (("colour",), "blue"),
    ],
)
def test_from_json_refuses_a_bad_stored_form_as_the_reader_does(
    path: tuple[str | int, ...], value: Any
) -> None:
    """The index's copy is read without the document reader, but a copy that is not valid
    is refused with the reader's own message, as a file with the same content is."""
    data = _stored_with(path, value)
    with pytest.raises(DirectoryError) as info:
        Directory.from_json(data, source="index")
    assert info.value.message == error_of(data, source="index")
    with pytest.raises(DirectoryError) as from_text:
        Directory.from_json(json.dumps(data), source="index")
    assert from_text.value.message == info.value.message


def test_from_json_reads_what_the_reader_reads_beyond_the_stored_form() -> None:
    """A document the stored form does not cover (SCIM, a tuple, JSON with a repeated key)
    is read, or refused, by the reader."""
    scim = list_response(scim_user("ann"), scim_group("g", [{"value": "ann", "type": "User"}]))
    assert Directory.from_json(scim).groups["g"].members == frozenset({"user:ann"})
    as_tuple = {"users": ({"id": "ann", "active": True},)}
    assert Directory.from_json(as_tuple) == Directory([User("ann", True)])
    repeated = '{"users": [{"id": "ann", "active": true, "active": false}]}'
    with pytest.raises(DirectoryError) as info:
        Directory.from_json(repeated, source="index")
    assert info.value.message == error_of(repeated, source="index")


def test_directory_doc_defaults_are_an_empty_snapshot() -> None:
    doc = DirectoryDoc(source="nothing")
    assert Directory.empty().replace(doc) == Directory(version=1)


# ------------------------------------------------------------------------------------------------
# Properties over random directories
# ------------------------------------------------------------------------------------------------

USER_IDS = [f"u{i}" for i in range(8)]
GROUP_IDS = [f"g{i}" for i in range(10)]
# Members may name ids that are never defined (u8, u9, g10, g11): dangling references.
MEMBERS = [f"user:u{i}" for i in range(10)] + [f"group:g{i}" for i in range(12)]


@st.composite
def directories(draw: st.DrawFn) -> Directory:
    user_ids = draw(st.lists(st.sampled_from(USER_IDS), unique=True))
    users = [
        User(
            uid,
            draw(st.booleans()),
            draw(st.dictionaries(st.sampled_from(["department", "name"]), st.text(max_size=5))),
        )
        for uid in user_ids
    ]
    group_ids = draw(st.lists(st.sampled_from(GROUP_IDS), unique=True))
    groups = [
        Group(gid, draw(st.frozensets(st.sampled_from(MEMBERS), max_size=6))) for gid in group_ids
    ]
    # Sometimes add a long nesting chain over defined groups to get real depth.
    if group_ids and user_ids and draw(st.booleans()):
        chain = draw(st.permutations(group_ids))
        extra = {chain[0]: {f"user:{user_ids[0]}"}}
        for lower, upper in itertools.pairwise(chain):
            extra.setdefault(upper, set()).add(f"group:{lower}")
        groups = [Group(g.id, g.members | extra.get(g.id, set())) for g in groups]
    return Directory(users, groups, version=draw(st.integers(0, 5)))


def brute_force_principals(directory: Directory, user_id: str) -> frozenset[str]:
    """Naive fixpoint: keep adding any defined group with a member already in the set."""
    user = directory.users.get(user_id)
    if user is None or not user.active:
        return frozenset()
    reached = {f"user:{user_id}"}
    changed = True
    while changed:
        changed = False
        for group in directory.groups.values():
            principal = f"group:{group.id}"
            if principal not in reached and group.members & reached:
                reached.add(principal)
                changed = True
    return frozenset(reached | {EVERYONE})


@settings(max_examples=200, deadline=None)
@given(directories())
def test_principal_set_equals_brute_force_fixpoint(directory: Directory) -> None:
    for user_id in [*USER_IDS, "u9", "nobody"]:
        expected = brute_force_principals(directory, user_id)
        got = directory.principal_set(user_id)
        assert got == expected
        assert directory.principal_set(user_id) == expected  # cached path agrees
        user = directory.users.get(user_id)
        assert (got == frozenset()) == (user is None or not user.active)
        assert directory.groups_of(user_id) == {
            p.removeprefix("group:") for p in expected if p.startswith("group:")
        }


@settings(max_examples=100, deadline=None)
@given(directories())
def test_why_paths_are_valid_membership_chains(directory: Directory) -> None:
    for user_id in USER_IDS:
        reachable = directory.groups_of(user_id)
        for group_id in GROUP_IDS:
            path = directory.why(user_id, group_id)
            if group_id not in reachable:
                assert path is None
                continue
            assert path is not None
            assert path[0] == f"user:{user_id}" and path[-1] == f"group:{group_id}"
            assert len(set(path)) == len(path)
            for member, parent in itertools.pairwise(path):
                assert member in directory.groups[parent.removeprefix("group:")].members


@settings(max_examples=100, deadline=None)
@given(directories())
def test_to_json_round_trips(directory: Directory) -> None:
    data = json.loads(json.dumps(directory.to_json()))
    assert Directory.from_json(data, source="rt.json") == directory
    replaced = Directory.empty().replace(parse_directory(data, source="rt.json"))
    assert replaced.users == directory.users and replaced.groups == directory.groups
    assert directory.to_json() == Directory.from_json(data).to_json()


@settings(max_examples=100, deadline=None)
@given(directories(), directories(), st.data())
def test_apply_delta_matches_dictionary_semantics(
    base: Directory, incoming: Directory, data: st.DataObject
) -> None:
    removed_users = data.draw(
        st.frozensets(st.sampled_from([u for u in USER_IDS if u not in incoming.users] or ["zz"]))
    )
    removed_groups = data.draw(
        st.frozensets(st.sampled_from([g for g in GROUP_IDS if g not in incoming.groups] or ["zz"]))
    )
    doc = DirectoryDoc(
        source="delta",
        users=incoming.users,
        groups=incoming.groups,
        removed_users=removed_users,
        removed_groups=removed_groups,
        delta=True,
    )
    if data.draw(st.booleans()):
        base._reverse_index()  # warm the index (white-box): apply_delta then patches a copy
    after = base.apply_delta(doc)
    expected_users = {k: v for k, v in base.users.items() if k not in removed_users}
    expected_users.update(incoming.users)
    expected_groups = {k: v for k, v in base.groups.items() if k not in removed_groups}
    expected_groups.update(incoming.groups)
    assert after.users == expected_users and after.groups == expected_groups
    assert after.version == base.version + 1
    fresh = Directory(after.users, after.groups, after.version)  # index built from scratch
    for user_id in USER_IDS:
        assert after.principal_set(user_id) == brute_force_principals(after, user_id)
        for group_id in GROUP_IDS:
            assert after.why(user_id, group_id) == fresh.why(user_id, group_id)


def to_scim(directory: Directory, *, untyped: bool) -> dict[str, Any]:
    """Render a directory as a SCIM ListResponse (members untyped where resolvable)."""
    resources: list[dict[str, Any]] = [
        {"schemas": [SCIM_USER], "id": u.id, "userName": u.id, "active": u.active}
        for u in directory.users.values()
    ]
    for group in directory.groups.values():
        members = []
        for member in sorted(group.members):
            kind, _, ident = member.partition(":")
            resolvable = (
                ident in directory.users
                if kind == "user"
                else (ident in directory.groups and ident not in directory.users)
            )
            entry: dict[str, Any] = {"value": ident}
            if not (untyped and resolvable):
                entry["type"] = "User" if kind == "user" else "Group"
            members.append(entry)
        resources.append({"meta": {"resourceType": "Group"}, "id": group.id, "members": members})
    return list_response(*resources)


@settings(max_examples=100, deadline=None)
@given(directories(), st.booleans())
def test_scim_and_clearance_shapes_agree(directory: Directory, untyped: bool) -> None:
    scim = Directory.empty().replace(
        parse_directory(to_scim(directory, untyped=untyped), source="s")
    )
    assert scim.groups == directory.groups
    assert {u.id: u.active for u in scim.users.values()} == {
        u.id: u.active for u in directory.users.values()
    }
    for user_id in [*USER_IDS, "u9"]:
        assert scim.principal_set(user_id) == directory.principal_set(user_id)


# -- aliases ------------------------------------------------------------------------------------


def _aliased() -> Directory:
    return Directory().replace(
        parse_directory(
            {
                "users": [
                    {"id": "alice", "active": True, "aliases": ["Alice@Acme.example", "oid-1"]},
                    {"id": "bob", "active": True, "aliases": ["shared@acme.example"]},
                    {"id": "carol", "active": False, "aliases": ["SHARED@acme.example", "alice"]},
                ],
                "groups": [],
            },
            source="dir.json",
        )
    )


def test_a_sign_in_name_resolves_through_any_alias_case_insensitively() -> None:
    d = _aliased()
    match = d.resolve("alice@ACME.example")
    assert match is not None and (match.user_id, match.matched) == ("alice", "alice@acme.example")
    assert d.resolve("oid-1") == d.resolve(" OID-1 ")
    assert d.resolve("nobody@acme.example") is None


def test_an_id_wins_over_another_users_alias() -> None:
    # carol carries the alias "alice": resolving "alice" must still be alice, never carol.
    match = _aliased().resolve("alice")
    assert match is not None and (match.user_id, match.matched) == ("alice", "id")


def test_an_alias_two_users_carry_resolves_to_nobody() -> None:
    d = _aliased()
    assert d.resolve("shared@acme.example") is None
    assert d.ambiguous_aliases() == {"shared@acme.example": ("bob", "carol")}
    # Reverse proof: a naive alias map (last writer wins) names one of the two people, which
    # the assertion above would have caught.
    naive = {a: u.id for u in d.users.values() for a in u.aliases}
    assert naive["shared@acme.example"] in {"bob", "carol"}


def test_aliases_survive_json_and_scim_user_names_are_aliases() -> None:
    d = _aliased()
    assert Directory.from_json(d.to_json()).users["alice"].aliases == (
        "alice@acme.example",
        "oid-1",
    )
    doc = parse_directory(
        {
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
            "id": "u1",
            "userName": "U1@acme.example",
            "externalId": "ext-1",
            "emails": [{"value": "u.one@acme.example", "primary": True}],
        },
        source="scim.json",
    )
    assert doc.users["u1"].aliases == ("ext-1", "u.one@acme.example", "u1@acme.example")


@pytest.mark.parametrize(
    ("aliases", "message"),
    [
        ("a@b", "users[0].aliases: expected an array"),
        ([3], "users[0].aliases[0]: expected a string"),
        (["  "], "users[0].aliases[0]: an alias must not be empty"),
    ],
)
def test_bad_aliases_name_their_json_path(aliases: object, message: str) -> None:
    with pytest.raises(DirectoryError, match=re.escape(message)):
        parse_directory(
            {"users": [{"id": "a", "active": True, "aliases": aliases}], "groups": []},
            source="dir.json",
        )
