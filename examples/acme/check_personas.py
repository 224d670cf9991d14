"""Independent oracle for the ACME demo corpus: who may retrieve what.

This script deliberately shares no code with ``clearance``. It reads the corpus metadata
directly, applies the documented rules in the most straightforward way it can, and writes (or
checks) ``personas.json``, which tests compare the product against.

Rules implemented here (the public contract of examples/acme):

* **Documents** are the files under the corpus folders (``public/``, ``ops/``, ``dept/``,
  ``customers/``, ``sensitive/``) with a supported extension, plus every ``text`` line of
  ``manifest.jsonl``. ``_meta.json`` and ``*.meta.json`` files are metadata, not documents.
* **Metadata precedence**, lowest to highest: every ``_meta.json`` from the corpus root down to
  the file's folder (nearer folders override farther ones), then the sidecar
  ``<file>.meta.json``, then the file's line in ``manifest.jsonl``. Each key is replaced
  wholesale; lists such as ``acl`` are never merged.
  ``doc_id`` and ``deleted`` are not allowed in ``_meta.json``; ``path``, ``text`` and
  ``deleted`` only in the manifest.
* **doc_id** defaults to ``<source_system>:<path relative to the corpus root>`` (unused here:
  every file's sidecar states its own, so walking the folder and reading the manifest agree).
* **Sensitivity** is the label (or ``[sensitivity].default_level``), raised to RESTRICTED when
  the file name matches a ``restricted_filename_patterns`` glob or the text contains a
  ``restricted_keywords`` entry (case- and width-insensitive: NFKC + casefold). Never lowered.
* **Principal set** of an active user: ``user:<id>``, every group reachable through nested
  membership (cycles terminate), and ``everyone``. A disabled user has no principals.
* **Retrievable for answers** (``expected_docs``): not deleted; ACL ∩ principal set non-empty
  (an absent or empty ACL admits nobody); sensitivity ≤ the corpus ceiling
  (``[corpora.<name>].max_sensitivity``) and never RESTRICTED; not expired
  (``expires_at`` > now); ``ai_allowed`` true.
* ``expected_docs_including_restricted``: the same, except RESTRICTED is allowed when the
  corpus ceiling allows it (the documents a reader may be *named*, never shown to a model).

Usage (from the repository root)::

    .venv/bin/python examples/acme/check_personas.py            # verify personas.json + report
    .venv/bin/python examples/acme/check_personas.py --write    # regenerate personas.json
    .venv/bin/python examples/acme/check_personas.py --as-of 2026-11-30T00:00:00Z

Exit status is non-zero when personas.json is stale or a corpus requirement is violated.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import re
import sys
import tomllib
import unicodedata
from collections import Counter, deque
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
CORPUS_FOLDERS = ("public", "ops", "dept", "customers", "sensitive")
FORMATS = ("md", "txt", "html", "pdf", "docx", "pptx", "xlsx", "csv")
SENSITIVITY = ("PUBLIC", "INTERNAL", "CONFIDENTIAL", "RESTRICTED")
ORIGINS = (
    "system",
    "human",
    "consolidation",
    "external_platform",
    "external_web",
    "email",
    "unknown",
)
KEYS = {
    "path",
    "text",
    "doc_id",
    "title",
    "uri",
    "source_system",
    "corpus",
    "owner",
    "acl",
    "sensitivity",
    "created_at",
    "updated_at",
    "review_at",
    "expires_at",
    "ai_allowed",
    "personal_data",
    "origin",
    "origin_chain",
    "deleted",
}
DATE_KEYS = ("created_at", "updated_at", "review_at", "expires_at")
BOOL_KEYS = ("ai_allowed", "personal_data", "deleted")
PRINCIPAL = re.compile(r"^(?:everyone|(?:user|group):[^\s:][^\s]*)$")

PERSONAS: dict[str, str] = {
    "alice": "Broad employee (Corporate Planning), member of employees and so of all-staff: "
    "public material and company-wide operations documents.",
    "bob": "US sales employee, limited to one department: public, operations and the sales "
    "share, including the US territory plan but not the Japan sales folder.",
    "carol": "Engineering manager of team alpha: her team's documents and engineering-wide "
    "pages, the managers' guide and the ticket-volume report shared with managers, "
    "but never team beta's documents.",
    "dave": "Contractor: public material plus the one team-alpha page shared with him by name "
    "(the Relay firmware build guide). A stale sidecar that still lists contractors on "
    "the release checklist is overridden by the manifest.",
    "erin": "Former employee: disabled in the directory but still listed in sales groups and "
    "named on a customer record. The disabled flag alone must cut her off: nothing.",
    "frank": "Customer-support agent: public, operations, the support share (including the "
    "Slack Connect export with a prompt-injection line) and every customer record.",
    "grace": "IT administrator: public, operations, the Sev-1 runbook, and exactly one "
    "sensitive document, the CONFIDENTIAL security incident report that names her. "
    "Being an admin gives her no HR, legal or board access.",
    "hiro": "Japan sales and Japan account team: sales share and Japan sales folder (Japanese "
    "documents), Japanese customer records and the renewals tracker.",
    "ines": "HR investigator: operations plus the CONFIDENTIAL compensation bands; the two "
    "RESTRICTED investigation files may be named to her but never retrieved.",
    "jun": "Outside director on the board (not in the employees group): public material, the "
    "all-staff notices and office guides, and the CONFIDENTIAL board pack; the "
    "RESTRICTED board minutes may be named to him but never retrieved.",
}


# --------------------------------------------------------------------------- metadata


def read_json(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise SystemExit(f"{path}: expected a JSON object")
    return data


FOLDER_FORBIDDEN = {"path", "text", "doc_id", "deleted"}
SIDECAR_FORBIDDEN = {"path", "text", "deleted"}


def fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def validate(meta: dict[str, Any], where: str, forbidden: set[str] | None = None) -> None:
    unknown = set(meta) - KEYS
    if unknown:
        raise SystemExit(f"{where}: unknown metadata keys {sorted(unknown)}")
    misplaced = set(meta) & (forbidden or set())
    if misplaced:
        raise SystemExit(f"{where}: keys {sorted(misplaced)} are not allowed here")
    if "sensitivity" in meta and meta["sensitivity"] not in SENSITIVITY:
        raise SystemExit(f"{where}: bad sensitivity {meta['sensitivity']!r}")
    if "origin" in meta and meta["origin"] not in ORIGINS:
        raise SystemExit(f"{where}: bad origin {meta['origin']!r}")
    for origin in meta.get("origin_chain", []):
        if origin not in ORIGINS:
            raise SystemExit(f"{where}: bad origin in origin_chain {origin!r}")
    for principal in meta.get("acl", []):
        if not PRINCIPAL.match(principal):
            raise SystemExit(f"{where}: bad principal {principal!r}")
    for key in DATE_KEYS:
        if key in meta:
            parsed = datetime.fromisoformat(meta[key])
            if parsed.tzinfo is None:
                raise SystemExit(f"{where}: {key} must carry a timezone")
    for key in BOOL_KEYS:
        if key in meta and not isinstance(meta[key], bool):
            raise SystemExit(f"{where}: {key} must be a boolean")


def folder_chain(rel: Path) -> list[dict[str, Any]]:
    """``_meta.json`` files from the corpus root down to the file's folder."""
    chain = []
    folder = ROOT
    for part in ("", *rel.parent.parts):
        folder = folder / part if part else folder
        meta_path = folder / "_meta.json"
        if meta_path.is_file():
            meta = read_json(meta_path)
            validate(meta, str(meta_path.relative_to(ROOT)), FOLDER_FORBIDDEN)
            chain.append(meta)
    return chain


def load_manifest() -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    by_path: dict[str, dict[str, Any]] = {}
    inline: list[dict[str, Any]] = []
    for n, line in enumerate((ROOT / "manifest.jsonl").read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        entry = json.loads(line)
        validate(entry, f"manifest.jsonl:{n}")
        if ("path" in entry) == ("text" in entry):
            raise SystemExit(f"manifest.jsonl:{n}: give exactly one of 'path' or 'text'")
        if "path" in entry:
            if entry["path"] in by_path:
                raise SystemExit(f"manifest.jsonl:{n}: {entry['path']} listed twice")
            by_path[entry["path"]] = {k: v for k, v in entry.items() if k != "path"}
        else:
            inline.append(entry)
    return by_path, inline


# --------------------------------------------------------------------------- text extraction


def extract_text(path: Path) -> str:
    """Plain text of a document, only to look for keywords, canaries and Japanese."""
    ext = path.suffix.lower().lstrip(".")
    if ext in ("md", "txt", "csv"):
        return path.read_text(encoding="utf-8")
    if ext == "html":
        return re.sub(r"<[^>]+>", " ", path.read_text(encoding="utf-8"))
    if ext == "docx":
        from docx import Document

        doc = Document(str(path))
        parts = [p.text for p in doc.paragraphs]
        parts += [c.text for t in doc.tables for row in t.rows for c in row.cells]
        return "\n".join(parts)
    if ext == "pptx":
        from pptx import Presentation

        parts = []
        for slide in Presentation(str(path)).slides:
            for shape in slide.shapes:
                if shape.has_text_frame:
                    parts.append(shape.text_frame.text)
                if shape.has_table:
                    parts += [c.text for row in shape.table.rows for c in row.cells]
        return "\n".join(parts)
    if ext == "xlsx":
        from openpyxl import load_workbook

        wb = load_workbook(str(path), read_only=True)
        return "\n".join(
            str(v)
            for ws in wb.worksheets
            for row in ws.iter_rows(values_only=True)
            for v in row
            if v is not None
        )
    if ext == "pdf":
        from pypdf import PdfReader

        return "\n".join(page.extract_text() or "" for page in PdfReader(str(path)).pages)
    raise SystemExit(f"{path}: unsupported format")


def is_japanese(text: str) -> bool:
    chars = [c for c in text if not c.isspace()]
    cjk = sum(1 for c in chars if "\u3040" <= c <= "\u30ff" or "\u4e00" <= c <= "\u9fff")
    return bool(chars) and cjk / len(chars) > 0.2


# --------------------------------------------------------------------------- documents


def load_documents(config: dict[str, Any]) -> list[dict[str, Any]]:
    manifest, inline = load_manifest()
    docs: list[dict[str, Any]] = []
    seen_paths = set()
    for folder in CORPUS_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*")):
            if not path.is_file() or path.name == "_meta.json" or path.name.endswith(".meta.json"):
                continue
            rel = path.relative_to(ROOT)
            if path.suffix.lower().lstrip(".") not in FORMATS:
                raise SystemExit(f"{rel}: not a supported document format")
            meta: dict[str, Any] = {}
            for layer in folder_chain(rel):
                meta.update(layer)
            sidecar = path.with_name(path.name + ".meta.json")
            if not sidecar.is_file() or "doc_id" not in read_json(sidecar):
                raise SystemExit(f"{rel}: needs a sidecar with a doc_id")
            if rel.as_posix() not in manifest:
                raise SystemExit(f"{rel}: not listed in manifest.jsonl")
            if sidecar.is_file():
                layer = read_json(sidecar)
                validate(layer, str(sidecar.relative_to(ROOT)), SIDECAR_FORBIDDEN)
                meta.update(layer)
            meta.update(manifest.get(rel.as_posix(), {}))
            seen_paths.add(rel.as_posix())
            meta.setdefault("doc_id", f"{meta.get('source_system', 'files')}:{rel.as_posix()}")
            docs.append(
                {
                    "meta": meta,
                    "path": rel.as_posix(),
                    "format": path.suffix[1:].lower(),
                    "text": extract_text(path),
                }
            )
    for missing in sorted(set(manifest) - seen_paths):
        raise SystemExit(f"manifest.jsonl: path {missing!r} is not a document under the corpus")
    for entry in inline:
        meta = {k: v for k, v in entry.items() if k != "text"}
        docs.append({"meta": meta, "path": None, "format": "text", "text": entry["text"]})

    sens = config.get("sensitivity", {})
    default_level = sens.get("default_level", "INTERNAL")
    patterns = sens.get("restricted_filename_patterns", [])
    keywords = [fold(k) for k in sens.get("restricted_keywords", []) if k.strip()]
    for doc in docs:
        meta = doc["meta"]
        label = meta.get("sensitivity", default_level)
        level = SENSITIVITY.index(label)
        reasons = []
        if doc["path"]:
            name = fold(doc["path"].rsplit("/", 1)[-1])
            if any(fnmatch.fnmatchcase(name, fold(p)) for p in patterns):
                reasons.append("filename pattern")
        lowered = fold(doc["text"])
        if any(k in lowered for k in keywords):
            reasons.append("keyword")
        if reasons:
            level = SENSITIVITY.index("RESTRICTED")
        doc["label"] = label
        doc["sensitivity"] = SENSITIVITY[level]
        doc["raised_by"] = reasons if SENSITIVITY[level] != label else []
    return docs


# --------------------------------------------------------------------------- directory


def principal_sets(directory: dict[str, Any]) -> dict[str, set[str]]:
    member_of: dict[str, set[str]] = {}
    for group in directory["groups"]:
        for member in group["members"]:
            member_of.setdefault(member, set()).add(f"group:{group['id']}")
    out: dict[str, set[str]] = {}
    for user in directory["users"]:
        if not user.get("active", False):
            out[user["id"]] = set()
            continue
        start = f"user:{user['id']}"
        seen = {start}
        queue = deque([start])
        while queue:
            for group in member_of.get(queue.popleft(), ()):
                if group not in seen:
                    seen.add(group)
                    queue.append(group)
        out[user["id"]] = seen | {"everyone"}
    return out


def check_scim(directory: dict[str, Any]) -> list[str]:
    scim = read_json(ROOT / "directory.scim.json")
    users, groups = {}, {}
    for res in scim["Resources"]:
        if "urn:ietf:params:scim:schemas:core:2.0:User" in res["schemas"]:
            users[res["id"]] = res["active"]
        else:
            groups[res["id"]] = sorted(
                f"{'user' if m['type'] == 'User' else 'group'}:{m['value']}" for m in res["members"]
            )
    want_users = {u["id"]: u["active"] for u in directory["users"]}
    want_groups = {g["id"]: sorted(g["members"]) for g in directory["groups"]}
    problems = []
    if users != want_users:
        problems.append("directory.scim.json users differ from directory.json")
    if groups != want_groups:
        problems.append("directory.scim.json groups differ from directory.json")
    return problems


# --------------------------------------------------------------------------- oracle


def visible(
    doc: dict[str, Any],
    principals: set[str],
    ceilings: dict[str, str],
    now: datetime,
    allow_restricted: bool,
) -> bool:
    meta = doc["meta"]
    if meta.get("deleted", False):
        return False
    if not principals or not set(meta.get("acl", [])) & principals:
        return False
    level = SENSITIVITY.index(doc["sensitivity"])
    ceiling = SENSITIVITY.index(ceilings.get(meta.get("corpus", ""), "CONFIDENTIAL"))
    if level > ceiling:
        return False
    if not allow_restricted and doc["sensitivity"] == "RESTRICTED":
        return False
    if "expires_at" in meta and datetime.fromisoformat(meta["expires_at"]) <= now:
        return False
    return bool(meta.get("ai_allowed", True))


def compute(now: datetime) -> tuple[dict[str, Any], list[dict[str, Any]], list[str]]:
    config = tomllib.loads((ROOT / "clearance.toml").read_text(encoding="utf-8"))
    ceilings = {
        name: c.get("max_sensitivity", "CONFIDENTIAL")
        for name, c in config.get("corpora", {}).items()
    }
    directory = read_json(ROOT / "directory.json")
    docs = load_documents(config)
    sets = principal_sets(directory)
    personas = {}
    for name, description in PERSONAS.items():
        principals = sets[name]
        personas[name] = {
            "description": description,
            "user": name,
            "principals": sorted(principals),
            "expected_docs": sorted(
                d["meta"]["doc_id"] for d in docs if visible(d, principals, ceilings, now, False)
            ),
            "expected_docs_including_restricted": sorted(
                d["meta"]["doc_id"] for d in docs if visible(d, principals, ceilings, now, True)
            ),
        }
    problems = requirements(docs, directory, ceilings) + check_scim(directory)
    return personas, docs, problems


# --------------------------------------------------------------------------- requirements


def requirements(
    docs: list[dict[str, Any]], directory: dict[str, Any], ceilings: dict[str, str]
) -> list[str]:
    """The corpus brief, as checks. Returns human-readable problems (empty = all good)."""
    problems = []
    live = [d for d in docs if not d["meta"].get("deleted")]
    ids = Counter(d["meta"]["doc_id"] for d in docs)
    problems += [f"duplicate doc_id {i}" for i, n in ids.items() if n > 1]
    for d in docs:
        m, where = d["meta"], d["path"] or f"inline {d['meta'].get('doc_id')}"
        for key in (
            "doc_id",
            "title",
            "corpus",
            "source_system",
            "sensitivity",
            "origin",
            "ai_allowed",
            "personal_data",
        ):
            if key not in m:
                problems.append(f"{where}: no explicit {key}")
        if not m["doc_id"].startswith(f"{m.get('source_system')}:"):
            problems.append(f"{where}: doc_id {m['doc_id']} does not start with its source_system")
        if m.get("corpus") not in ceilings:
            problems.append(f"{where}: corpus {m.get('corpus')!r} is not configured")
        elif SENSITIVITY.index(d["sensitivity"]) > SENSITIVITY.index(ceilings[m["corpus"]]):
            problems.append(f"{where}: {d['sensitivity']} is above the {m['corpus']} ceiling")
        if d["path"] and d["path"].split("/")[0] != m.get("corpus"):
            problems.append(
                f"{where}: lives in {d['path'].split('/')[0]}/ but corpus is {m.get('corpus')}"
            )
        canaries = set(re.findall(r"CANARY-[A-Z]+-[A-Z0-9-]+", d["text"]))
        if d["sensitivity"] == "RESTRICTED" and not any(
            c.startswith("CANARY-RESTRICTED-") for c in canaries
        ):
            problems.append(f"{where}: RESTRICTED without a CANARY-RESTRICTED- string")
        if d["sensitivity"] != "RESTRICTED" and any(
            c.startswith("CANARY-RESTRICTED-") for c in canaries
        ):
            problems.append(f"{where}: restricted canary in a non-RESTRICTED document")
        if m.get("corpus") == "customers" and not any(
            c.startswith("CANARY-CUSTOMER-") for c in canaries
        ):
            problems.append(f"{where}: customer record without a CANARY-CUSTOMER- string")
        if m.get("corpus") == "customers" and m.get("personal_data") is not True:
            problems.append(f"{where}: customer record must have personal_data true")
        d["canaries"] = sorted(canaries)
    owners: dict[str, set[str]] = {}
    for d in docs:
        for c in d["canaries"]:
            owners.setdefault(c, set()).add(d["meta"]["doc_id"])
    problems += [
        f"canary {c} appears in several documents: {sorted(o)}"
        for c, o in owners.items()
        if len(o) > 1
    ]

    fmt_counts = Counter(d["format"] for d in live)
    problems += [
        f"only {fmt_counts[f]} .{f} documents (need 3)" for f in FORMATS if fmt_counts[f] < 3
    ]
    if len(live) < 45:
        problems.append(f"only {len(live)} documents (need 45)")
    ja = [d for d in live if is_japanese(d["text"])]
    if len(ja) < 8 or not {"pptx", "docx"} <= {d["format"] for d in ja}:
        problems.append("need 8 Japanese documents including a pptx and a docx")
    if sum(1 for d in docs if d["path"] is None) < 2:
        problems.append("need 2 inline text documents in the manifest")
    systems = {d["meta"].get("source_system") for d in docs}
    for s in ("sharepoint", "gdrive", "confluence", "fileshare", "slack", "email"):
        if s not in systems:
            problems.append(f"no document from source system {s}")

    def count(pred: Any, what: str) -> None:
        if not any(pred(d) for d in live):
            problems.append(f"no {what} document")

    count(lambda d: "acl" not in d["meta"], "ACL-less")
    count(lambda d: d["meta"].get("ai_allowed") is False, "ai_allowed false")
    count(
        lambda d: (
            d["meta"].get("origin") == "external_platform"
            and "ignore all previous instructions" in d["text"].lower()
        ),
        "injection",
    )
    count(lambda d: d["meta"].get("origin") == "email", "email-origin")
    count(lambda d: d["meta"].get("review_at", "").startswith("2025"), "past-review")
    count(
        lambda d: (
            "expires_at" in d["meta"]
            and datetime.fromisoformat(d["meta"]["expires_at"]) < datetime.now(UTC)
        ),
        "expired",
    )
    users = {u["id"]: u for u in directory["users"]}
    if len(users) < 12:
        problems.append("need at least 12 users")
    if users.get("erin", {}).get("active", True):
        problems.append("erin must be disabled")
    return problems


# --------------------------------------------------------------------------- report


def report(docs: list[dict[str, Any]], personas: dict[str, Any]) -> None:
    live = [d for d in docs if not d["meta"].get("deleted")]
    print(
        f"documents: {len(live)} live (+{len(docs) - len(live)} deleted), "
        f"{sum(1 for d in live if is_japanese(d['text']))} Japanese"
    )
    fmt_counts = Counter(d["format"] for d in live)
    print("by format:  " + ", ".join(f"{f} {fmt_counts[f]}" for f in (*FORMATS, "text")))
    corpus_counts = Counter(d["meta"]["corpus"] for d in live)
    print("by corpus:  " + ", ".join(f"{c} {corpus_counts[c]}" for c in CORPUS_FOLDERS))
    sens_counts = Counter(d["sensitivity"] for d in live)
    print("by level:   " + ", ".join(f"{s} {sens_counts[s]}" for s in SENSITIVITY))
    for d in docs:
        if d["raised_by"]:
            print(
                f"raised to RESTRICTED by {' + '.join(d['raised_by'])}: {d['meta']['doc_id']} "
                f"({d['path']}, label {d['label']})"
            )
    for name, p in personas.items():
        print(
            f"{name:6} {len(p['expected_docs']):3} retrievable, "
            f"{len(p['expected_docs_including_restricted']):3} incl. RESTRICTED"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite personas.json")
    parser.add_argument("--as-of", help="ISO 8601 instant used for expiry (default: now)")
    parser.add_argument("--quiet", action="store_true", help="no report, only problems")
    args = parser.parse_args(argv)
    now = datetime.fromisoformat(args.as_of) if args.as_of else datetime.now(UTC)
    personas, docs, problems = compute(now)
    if not args.quiet:
        report(docs, personas)
    out = {
        "_comment": "Generated by check_personas.py (the independent oracle); do not edit by "
        "hand. expected_docs = retrievable for answers; "
        "expected_docs_including_restricted = may be named to the persona; canaries = the "
        "unique strings planted in each RESTRICTED document and customer record, which must "
        "never appear in any prompt, answer, citation or trace.",
        "personas": personas,
        "canaries": {
            d["meta"]["doc_id"]: d["canaries"]
            for d in sorted(docs, key=lambda d: d["meta"]["doc_id"])
            if d["canaries"]
        },
    }
    text = json.dumps(out, ensure_ascii=False, indent=2) + "\n"
    target = ROOT / "personas.json"
    if args.write:
        target.write_text(text, encoding="utf-8")
        print(f"wrote {target.relative_to(ROOT.parent.parent)}")
    elif not target.is_file() or target.read_text(encoding="utf-8") != text:
        problems.append("personas.json is stale: run check_personas.py --write")
    for problem in problems:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
