"""Who can read a Confluence document, for each way a space, a page, a folder or a blog post
can be shared: a table of sharing shapes → the exact principals stored, or visible to nobody
with the reason ``source status`` gives.

The leak this table was written for — a restriction answer without its expanded lists read as
"no restriction", so restricted pages became readable by the whole space — and the gaps of
paging, folders and roles each have a reverse proof: the old reading, swapped back in, is
caught by the same assertion."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from clearance.errors import SourceError
from clearance.sources.confluence import ConfluenceConnector
from confluence_server import FakeConfluence

from .connector_conformance import SharingShapes, matches, readers
from .test_confluence import ALICE, BOB, CAROL, Site, doc, make_site

NOBODY = "nobody"
SPACE = frozenset({"group:g-eng"})


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    yield from make_site(tmp_path)


def site_readers(site: Site, native_id: str) -> frozenset[str] | str:
    """The principals the stored document admits, or why it is visible to nobody."""
    return readers(site.app, doc(native_id))


def users(*accounts: str) -> frozenset[str]:
    return frozenset(f"user:{a}" for a in accounts)


@dataclass(frozen=True)
class Shape:
    """One sharing shape: what the space looks like (``arrange``), the document asked about,
    and who can read it — principals, or ``"nobody: <words of the reason>"``."""

    name: str
    arrange: Callable[[FakeConfluence], None]
    expected: frozenset[str] | str
    document: str = "p"


def space_group(wiki: FakeConfluence) -> None:
    wiki.grant_space("group", "g-eng")
    wiki.add_page("p", "<p>Quarterly plan.</p>")


def then(*steps: Callable[[FakeConfluence], None]) -> Callable[[FakeConfluence], None]:
    def arrange(wiki: FakeConfluence) -> None:
        for step in steps:
            step(wiki)

    return arrange


def reshaped(
    change: Callable[[dict[str, Any]], dict[str, Any]],
) -> Callable[[FakeConfluence], None]:
    """The page's read restriction (alice and bob) answered in another shape."""

    def arrange(wiki: FakeConfluence) -> None:
        wiki.restrict("p", users=(ALICE, BOB))
        wiki.reshape["p"] = change

    return arrange


def without_results(body: dict[str, Any]) -> dict[str, Any]:
    for kind in ("user", "group"):
        part = body["restrictions"][kind]
        body["restrictions"][kind] = {k: v for k, v in part.items() if k != "results"}
    return body


def expandable_only(body: dict[str, Any]) -> dict[str, Any]:
    body.pop("restrictions")
    body["_expandable"]["restrictions"] = "/rest/api/content/p/restriction/byOperation/read"
    return body


def count_says_more(body: dict[str, Any]) -> dict[str, Any]:
    body["restrictions"]["user"]["totalSize"] = 5
    return body


def size_says_more(body: dict[str, Any]) -> dict[str, Any]:
    body["restrictions"]["user"]["size"] = 3
    return body


def other_operation(body: dict[str, Any]) -> dict[str, Any]:
    body["operation"] = "update"
    return body


def capped_without_next_link(wiki: FakeConfluence) -> None:
    """150 restricted users, alice last, from a server that caps pages at 100 entries and
    gives no next link (its ``limit`` says 100)."""
    wiki.v1_cap = 100
    wiki.v1_next_links = False
    wiki.grant_space("user", ALICE)
    wiki.grant_space("user", BOB)
    wiki.restrict("p", users=(*(f"acc-{n}" for n in range(149)), ALICE))


def rbac(wiki: FakeConfluence) -> None:
    wiki.grant_space("role", "r-viewer")
    wiki.assign_role("r-viewer", "GROUP", "g-eng")
    wiki.assign_role("r-viewer", "USER", CAROL)
    wiki.assign_role("r-admin", "USER", "acc-admin")  # another role: no view permission
    wiki.add_page("p", "<p>Quarterly plan.</p>")


def no_rbac(wiki: FakeConfluence) -> None:
    wiki.role_assignments = None
    wiki.grant_space("role", "r-viewer")
    wiki.add_page("p", "<p>Quarterly plan.</p>")


def under_folder(
    *, restricted: tuple[str, ...] = (), top: tuple[str, ...] = ()
) -> Callable[[FakeConfluence], None]:
    """``top`` (a page) → folder ``f`` → page ``p``, restrictions on the folder and the top."""

    def arrange(wiki: FakeConfluence) -> None:
        wiki.grant_space("group", "g-eng")
        wiki.add_page("top", "<p>Top.</p>")
        wiki.add_folder("f", "top")
        wiki.add_page("p", "<p>Quarterly plan.</p>", "f", parent_type="folder")
        if restricted:
            wiki.restrict("f", users=restricted)
        if top:
            wiki.restrict("top", users=top)

    return arrange


def restricted_page_with_comments(wiki: FakeConfluence) -> None:
    wiki.grant_space("group", "g-eng")
    wiki.add_page("p", "<p>Quarterly plan.</p>")
    wiki.restrict("p", users=(BOB,))
    wiki.comment("c1", "p", "<p>Looks good.</p>")
    wiki.comment("c2", "p", "<p>Agreed.</p>", parent="c1")


def restricted_blogpost(wiki: FakeConfluence) -> None:
    wiki.grant_space("group", "g-eng")
    wiki.add_blogpost("b", "<p>Reorg announcement.</p>")
    wiki.attach("b", "att-b", "org.txt", "text/plain", b"New org chart.")
    wiki.restrict("b", users=(BOB,))


SHAPES = [
    Shape(
        "space permission: user",
        then(lambda w: w.grant_space("user", ALICE), space_group),
        users(ALICE) | SPACE,
    ),
    Shape("space permission: group", space_group, SPACE),
    Shape("space permission: role, held by a group and a user", rbac, SPACE | users(CAROL)),
    Shape(
        "space permission: role, holders unreadable", no_rbac, "nobody: holders of role r-viewer"
    ),
    Shape(
        "space permission: role held by an access class",
        then(rbac, lambda w: w.assign_role("r-viewer", "ACCESS_CLASS", "all-licensed-users")),
        "nobody: access class 'all-licensed-users'",
    ),
    Shape(
        "space permission: anonymous (confidential corpus)",
        then(lambda w: w.grant_space("access_class", "anonymous-users"), space_group),
        "nobody: anyone who has the link",
    ),
    Shape(
        "space permission: unknown principal type",
        then(lambda w: w.grant_space("app", "jira"), space_group),
        "nobody: principal of type 'app'",
    ),
    Shape(
        "page read restriction: user",
        then(space_group, lambda w: w.restrict("p", users=(BOB,))),
        users(BOB),
    ),
    Shape(
        "page read restriction: group",
        then(space_group, lambda w: w.restrict("p", groups=("g-eng",))),
        users(ALICE, BOB),
    ),
    Shape(
        "update-only restriction",
        then(space_group, lambda w: w.restrict("p", users=(BOB,), operation="update")),
        SPACE,
    ),
    Shape(
        "ancestor restriction",
        then(
            lambda w: w.grant_space("group", "g-eng"),
            lambda w: w.add_page("top", "<p>Top.</p>"),
            lambda w: w.add_page("p", "<p>Quarterly plan.</p>", "top"),
            lambda w: w.restrict("top", users=(ALICE,)),
        ),
        users(ALICE),
    ),
    Shape("folder ancestor, unrestricted", under_folder(), SPACE),
    Shape("folder ancestor, restricted", under_folder(restricted=(BOB,)), users(BOB)),
    Shape("page above a folder, restricted", under_folder(top=(ALICE,)), users(ALICE)),
    Shape(
        "parent of another type (whiteboard)",
        then(
            space_group,
            lambda w: w.add_page("q", "<p>Drawn plan.</p>", "wb", parent_type="whiteboard"),
        ),
        "nobody: is a whiteboard",
        document="q",
    ),
    Shape(
        "restriction without results",
        then(space_group, reshaped(without_results)),
        "nobody: not expanded",
    ),
    Shape(
        "restriction: _expandable only",
        then(space_group, reshaped(expandable_only)),
        "nobody: not expanded",
    ),
    Shape(
        "restriction: totalSize above what was returned",
        then(space_group, reshaped(count_says_more)),
        "nobody: says there is more than the 2 entries",
    ),
    Shape(
        "restriction: size above what was returned",
        then(space_group, reshaped(size_says_more)),
        "nobody: says 3 entries",
    ),
    Shape(
        "restriction: another operation",
        then(space_group, reshaped(other_operation)),
        "nobody: operation 'update'",
    ),
    Shape(
        "capped list without a next link",
        then(lambda w: w.add_page("p", "<p>Quarterly plan.</p>"), capped_without_next_link),
        users(ALICE),
    ),
    Shape(
        "restriction: unknown principal type",
        then(
            space_group,
            lambda w: w.restricted_users("p").append({"type": "robot", "accountId": "r2"}),
        ),
        "nobody: principal of type 'robot'",
    ),
    Shape("blog post restricted", restricted_blogpost, users(BOB), document="b"),
    Shape(
        "attachment of a restricted blog post", restricted_blogpost, users(BOB), document="att-b"
    ),
    Shape("comment of a restricted page", restricted_page_with_comments, users(BOB), document="c1"),
    Shape(
        "reply to a comment of a restricted page",
        restricted_page_with_comments,
        users(BOB),
        document="c2",
    ),
    Shape(
        "403 on restrictions",
        then(space_group, lambda w: w.fault("/content/p/restriction/", 403, times=None)),
        "nobody: HTTP 403",
    ),
    Shape(
        "404 on an ancestor's restrictions (deleted while the space was read)",
        then(
            lambda w: w.grant_space("group", "g-eng"),
            lambda w: w.add_page("top", "<p>Top.</p>"),
            lambda w: w.add_page("p", "<p>Quarterly plan.</p>", "top"),
            lambda w: w.restrict("top", users=(ALICE,)),
            lambda w: w.fault("/content/top/restriction/", 404, times=None),
        ),
        "nobody: HTTP 404",
    ),
    Shape(
        "ancestor folder refused (403)",
        then(under_folder(restricted=(BOB,)), lambda w: w.fault("/folders/f", 403, times=None)),
        "nobody: ancestor folder f cannot be read (HTTP 403)",
    ),
    Shape(
        "group restriction named by its name alone (no group id)",
        then(
            space_group,
            lambda w: w.restrict("p", users=(BOB,)),
            lambda w: w.restrictions["p"]["read"][1].append({"type": "group", "name": "eng"}),
        ),
        "nobody: principal of type 'group'",
    ),
]


def shape(name: str) -> Shape:
    (found,) = [s for s in SHAPES if s.name == name]
    return found


class TestConfluenceSharing(SharingShapes):
    """Each shape of the table, on its own space (tests/sources/connector_conformance.py)."""

    SHAPES = SHAPES

    @pytest.fixture
    def src(self, tmp_path: Path) -> Iterator[Site]:
        yield from make_site(tmp_path)

    def share(self, src: Site, shape: Shape, monkeypatch: pytest.MonkeyPatch) -> str:
        shape.arrange(src.wiki)
        return doc(shape.document)


def shared(site: Site, shape: Shape) -> frozenset[str] | str:
    shape.arrange(site.wiki)
    site.synced()
    return site_readers(site, shape.document)


def test_a_reason_for_nobody_reaches_explain(site: Site) -> None:
    found = shared(site, shape("restriction without results"))
    assert isinstance(found, str)
    warnings = site.app.explain(BOB, doc("p"))["warnings"]
    assert any("not expanded" in w for w in warnings)


# --------------------------------------------------------------------------- reverse proofs


def old_reading(
    self: ConfluenceConnector, content_id: str, body: Any
) -> dict[str, Mapping[str, Any]]:
    """The reading before the fix: a missing list is an empty one."""
    restrictions = body.get("restrictions") if isinstance(body, dict) else None
    restrictions = restrictions if isinstance(restrictions, dict) else {}
    return {
        kind: {"results": (restrictions.get(kind) or {}).get("results") or []}
        for kind in ("user", "group")
    }


@pytest.mark.parametrize("name", ["restriction without results", "restriction: _expandable only"])
def test_reverse_proof_reading_missing_lists_as_empty_leaks_to_the_space(
    site: Site, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setattr(ConfluenceConnector, "_restriction_parts", old_reading)
    leaky = shape(name)
    found = shared(site, leaky)
    assert found == SPACE  # the whole space reads a page restricted to alice and bob
    assert not matches(found, leaky.expected)


def test_reverse_proof_stopping_at_the_requested_page_size_drops_users(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old rule: a list has more only when a page holds the 200 entries asked for (or
    a next link says so) — not the 100 the server says it returns at most."""
    original = ConfluenceConnector._restriction_parts

    def asked_limit(
        self: ConfluenceConnector, content_id: str, body: Any
    ) -> dict[str, Mapping[str, Any]]:
        parts = original(self, content_id, body)
        return {kind: {**part, "limit": 200} for kind, part in parts.items()}

    monkeypatch.setattr(ConfluenceConnector, "_restriction_parts", asked_limit)
    capped = shape("capped list without a next link")
    found = shared(site, capped)
    assert not matches(found, capped.expected)


def test_reverse_proof_skipping_folder_levels_leaks_a_restricted_folder(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    chain = ConfluenceConnector._chain

    def pages_only(self: ConfluenceConnector, page_id: str) -> list[str]:
        return [c for c in chain(self, page_id) if c not in site.wiki.folders]

    monkeypatch.setattr(ConfluenceConnector, "_chain", pages_only)
    restricted = shape("folder ancestor, restricted")
    found = shared(site, restricted)
    assert found == SPACE and not matches(found, restricted.expected)


def test_reverse_proof_a_role_read_as_its_whole_assignment_list_is_caught(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading every role assignment of the space (not the role's own) grants the admins'
    role holder a view the space never gave."""
    original = ConfluenceConnector._all

    def filter_ignored(
        self: ConfluenceConnector, path: str, what: str, params: Mapping[str, Any] | None = None
    ) -> list[Any]:
        if what != "role assignments":
            return original(self, path, what, params)
        every = {k: v for k, v in (params or {}).items() if k != "role-id"}
        found = original(self, path, what, every)
        return [{**a, "roleId": (params or {}).get("role-id")} for a in found]

    monkeypatch.setattr(ConfluenceConnector, "_all", filter_ignored)
    role = shape("space permission: role, held by a group and a user")
    found = shared(site, role)
    assert found == SPACE | users(CAROL, "acc-admin") and not matches(found, role.expected)


def test_reverse_proof_a_404_read_as_no_restriction_leaks_to_the_space(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading a restriction that answers 404 as "gone, so unrestricted" (as a listing of
    something deleted is read) opens the page below a restricted ancestor to the space."""
    original = ConfluenceConnector._restriction

    def gone_is_open(self: ConfluenceConnector, content_id: str) -> frozenset[str] | None:
        try:
            return original(self, content_id)
        except SourceError as exc:
            if exc.status != 404:
                raise
            return None

    monkeypatch.setattr(ConfluenceConnector, "_restriction", gone_is_open)
    deleted = shape("404 on an ancestor's restrictions (deleted while the space was read)")
    found = shared(site, deleted)
    assert found == SPACE and not matches(found, deleted.expected)
