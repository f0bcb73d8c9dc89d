#!/usr/bin/env python3
"""Turn CustomResourceDefinitions into ailint's compact JSON Schemas (`schemas/crds/`).

    python schemas/generate.py                    # ../shared/ref/crds -> schemas/crds
    python schemas/generate.py --crds DIR --sources SOURCES.tsv --out DIR
    python schemas/generate.py --check            # exit 1 when schemas/crds is stale

One file per served group, version and kind (`<group>_<version>_<Kind>.json`, JSON Schema
2020-12) keeps the structure, types, enums, required fields, defaults and the value
constraints (pattern, minimum/maximum, lengths, item counts) of the CRD's
`openAPIV3Schema`, and drops the `description` prose. Objects get
`additionalProperties: false` unless the CRD preserves unknown fields there, because the
API server prunes (or, with strict field validation, rejects) every field its structural
schema does not name. `x-kubernetes-int-or-string` becomes `type: [integer, string]`, and
the resource-quantity pattern becomes `format: quantity`. Repeated subtrees (pod specs,
containers) are stored once under `$defs`. CEL rules (`x-kubernetes-validations`) are not
kept: the few that matter are re-implemented in `linter/schema.py`.

`index.json` maps group -> kind -> versions (storage version first) and file names, and
`README.md` records each CRD's source repository, commit, path and licence, so a fresh
clone needs nothing outside the repository to validate.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_REF = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "ref"))
SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
LICENCE = "Apache-2.0"

# Kubernetes' resource.Quantity pattern, as controller-gen writes it into every CRD.
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)

# Kept keywords (renamed where OpenAPI v3.0 and JSON Schema 2020-12 differ).
_SCALAR_KEYS = (
    "type",
    "enum",
    "default",
    "required",
    "pattern",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "uniqueItems",
)
_DEDUPE_MIN_CHARS = 300

# The root `metadata` of a custom resource is a full ObjectMeta, validated by the API server
# whatever the CRD says (controller-gen writes `type: object`). A compact copy of it:
OBJECT_META: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string"},
        "generateName": {"type": "string"},
        "namespace": {"type": "string"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        "finalizers": {"type": "array", "items": {"type": "string"}},
        "ownerReferences": {"type": "array", "items": {"type": "object"}},
        "managedFields": {"type": "array", "items": {"type": "object"}},
        "uid": {"type": "string"},
        "resourceVersion": {"type": "string"},
        "selfLink": {"type": "string"},
        "generation": {"type": "integer"},
        "creationTimestamp": {"type": "string"},
        "deletionTimestamp": {"type": "string"},
        "deletionGracePeriodSeconds": {"type": "integer"},
    },
}


def compact(node: Any) -> Any:
    """One OpenAPI v3 schema node of a CRD as compact JSON Schema 2020-12."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    int_or_string = bool(node.get("x-kubernetes-int-or-string"))
    preserve = bool(node.get("x-kubernetes-preserve-unknown-fields"))
    for key in _SCALAR_KEYS:
        if key in node:
            out[key] = node[key]
    if node.get("exclusiveMinimum") is True and "minimum" in out:
        out["exclusiveMinimum"] = out.pop("minimum")
    if node.get("exclusiveMaximum") is True and "maximum" in out:
        out["exclusiveMaximum"] = out.pop("maximum")
    if int_or_string:
        out["type"] = ["integer", "string"]
        if out.get("pattern") == QUANTITY_PATTERN:
            del out["pattern"]
            out["format"] = "quantity"
    for key in ("allOf", "oneOf", "anyOf"):
        if key in node and not int_or_string:
            out[key] = [compact(x) for x in node[key]]
    if "not" in node:
        out["not"] = compact(node["not"])
    if "properties" in node:
        out["properties"] = {k: compact(v) for k, v in node["properties"].items()}
    if "items" in node:
        out["items"] = compact(node["items"])
    if "additionalProperties" in node:
        ap = node["additionalProperties"]
        out["additionalProperties"] = compact(ap) if isinstance(ap, dict) else ap
    if node.get("x-kubernetes-embedded-resource"):
        props = out.setdefault("properties", {})
        props.setdefault("apiVersion", {"type": "string"})
        props.setdefault("kind", {"type": "string"})
        props.setdefault("metadata", {"$ref": "#/$defs/ObjectMeta"})
    if node.get("type") == "object" and not preserve and "additionalProperties" not in node:
        out["additionalProperties"] = False
    return out


def version_schema(open_api: dict[str, Any]) -> dict[str, Any]:
    body = compact(open_api)
    props = body.setdefault("properties", {})
    props.setdefault("apiVersion", {"type": "string"})
    props.setdefault("kind", {"type": "string"})
    props["metadata"] = {"$ref": "#/$defs/ObjectMeta"}
    return body


# -- deduplication of repeated subtrees --------------------------------------------------
def _canon(node: Any) -> str:
    return json.dumps(node, sort_keys=True, separators=(",", ":"))


def dedupe(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Store each subtree that occurs more than once (and is not tiny) under `$defs`."""
    counts: dict[str, int] = {}
    memo: dict[int, str] = {}

    def count(node: Any) -> str:
        """The canonical JSON text of `node` (as `_canon`), built from its children's."""
        if isinstance(node, dict):
            key = "{" + ",".join(json.dumps(k) + ":" + count(node[k]) for k in sorted(node)) + "}"
            memo[id(node)] = key
            if len(key) >= _DEDUPE_MIN_CHARS:
                counts[key] = counts.get(key, 0) + 1
            return key
        if isinstance(node, list):
            return "[" + ",".join(count(v) for v in node) + "]"
        return _canon(node)

    count(schema)
    names: dict[str, str] = {}  # canonical text -> def name
    used: set[str] = set(defs)

    def name_for(hint: str) -> str:
        base = "".join(ch if ch.isalnum() else "_" for ch in hint) or "def"
        name, i = base, 2
        while name in used:
            name, i = f"{base}{i}", i + 1
        used.add(name)
        return name

    def rewrite(node: Any, hint: str, top: bool = False) -> Any:
        if isinstance(node, dict):
            key = memo.get(id(node))
            if not top and key is not None and counts.get(key, 0) > 1:
                if key not in names:
                    names[key] = name_for(hint)
                    defs[names[key]] = None  # reserve before recursing (keeps names stable)
                    defs[names[key]] = rewrite(node, hint, top=True)
                return {"$ref": f"#/$defs/{names[key]}"}
            out = {}
            for k, v in node.items():
                if k == "properties" and isinstance(v, dict):
                    out[k] = {pk: rewrite(pv, pk) for pk, pv in v.items()}
                elif k == "items":
                    out[k] = rewrite(v, hint + "Item")
                elif k == "additionalProperties":
                    out[k] = rewrite(v, hint + "Value")
                else:
                    out[k] = rewrite(v, hint)
            return out
        if isinstance(node, list):
            return [rewrite(v, hint) for v in node]
        return node

    root = rewrite(schema, "root", top=True)
    _inline_single_use(root, defs)
    return root


def _inline_single_use(root: dict[str, Any], defs: dict[str, Any]) -> None:
    """Put back the `$defs` referenced only once (an artefact of nested repetition)."""
    while True:
        refs: dict[str, int] = {}

        def scan(node: Any) -> None:
            if isinstance(node, dict):
                r = node.get("$ref")
                if isinstance(r, str) and r.startswith("#/$defs/"):
                    refs[r[8:]] = refs.get(r[8:], 0) + 1  # noqa: B023 - called within this iteration
                for v in node.values():
                    scan(v)
            elif isinstance(node, list):
                for v in node:
                    scan(v)

        scan(root)
        scan(defs)
        single = {n for n in defs if refs.get(n, 0) == 1 and n != "ObjectMeta"}
        if not single:
            for n in [n for n in defs if refs.get(n, 0) == 0 and n != "ObjectMeta"]:
                del defs[n]
            return

        def inline(node: Any) -> Any:
            if isinstance(node, dict):
                r = node.get("$ref")
                if isinstance(r, str) and r[8:] in single and len(node) == 1:  # noqa: B023 - called within this iteration
                    return inline(defs[r[8:]])
                return {k: inline(v) for k, v in node.items()}
            if isinstance(node, list):
                return [inline(v) for v in node]
            return node

        new_root = inline(root)
        root.clear()
        root.update(new_root)
        for n in list(defs):
            if n not in single:
                defs[n] = inline(defs[n])
        for n in single:
            del defs[n]


# -- whole CRDs --------------------------------------------------------------------------
def crd_schemas(crd: dict[str, Any]) -> list[tuple[str, str, str, bool, bool, dict[str, Any]]]:
    """(group, version, kind, storage, deprecated, schema) for each served version."""
    spec = crd.get("spec") or {}
    group, kind = spec["group"], spec["names"]["kind"]
    out = []
    for v in spec.get("versions") or []:
        if not v.get("served", True):
            continue
        open_api = ((v.get("schema") or {}).get("openAPIV3Schema")) or {"type": "object"}
        defs: dict[str, Any] = {"ObjectMeta": OBJECT_META}
        body = dedupe(version_schema(open_api), defs)
        schema: dict[str, Any] = {
            "$schema": SCHEMA_DIALECT,
            "$id": f"https://ailint.dev/schemas/crds/{group}/{v['name']}/{kind}",
            "x-kubernetes-group-version-kind": {"group": group, "version": v["name"], "kind": kind},
        }
        schema.update(body)
        schema["$defs"] = dict(sorted(defs.items()))
        out.append((group, v["name"], kind, bool(v.get("storage")), bool(v.get("deprecated")), schema))
    return out


def read_sources(path: str) -> dict[str, dict[str, str]]:
    """SOURCES.tsv rows keyed by the copy's file name."""
    rows: dict[str, dict[str, str]] = {}
    if not os.path.isfile(path):
        return rows
    with open(path, encoding="utf-8") as fh:
        header = fh.readline().rstrip("\n").split("\t")
        for line in fh:
            if not line.strip():
                continue
            row = dict(zip(header, line.rstrip("\n").split("\t")))
            rows[os.path.basename(row.get("copy", ""))] = row
    return rows


def generate(crd_dir: str, sources_path: str | None = None) -> dict[str, str]:
    """Every output file name -> its text, generated from the CRDs in `crd_dir`."""
    import yaml

    sources = read_sources(sources_path or os.path.join(os.path.dirname(crd_dir), "SOURCES.tsv"))
    files: dict[str, str] = {}
    index: dict[str, dict[str, Any]] = {}
    notes: list[tuple[str, str, list[str], dict[str, str]]] = []
    for name in sorted(os.listdir(crd_dir)):
        if not name.endswith((".yaml", ".yml")):
            continue
        with open(os.path.join(crd_dir, name), encoding="utf-8") as fh:
            docs = [d for d in yaml.load_all(fh, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) if d]
        for crd in docs:
            if crd.get("kind") != "CustomResourceDefinition":
                continue
            made = []
            for group, version, kind, storage, deprecated, schema in crd_schemas(crd):
                fname = f"{group}_{version}_{kind}.json"
                files[fname] = json.dumps(schema, indent=1, sort_keys=False) + "\n"
                made.append(fname)
                entry = index.setdefault(group, {}).setdefault(kind, {"versions": [], "deprecated": [], "files": {}})
                if storage:
                    entry["versions"].insert(0, version)
                else:
                    entry["versions"].append(version)
                if deprecated:
                    entry["deprecated"].append(version)
                entry["files"][version] = fname
            if made:
                notes.append((name, crd["spec"]["names"]["kind"], made, sources.get(name, {})))
    files["index.json"] = json.dumps(dict(sorted(index.items())), indent=1, sort_keys=True) + "\n"
    files["README.md"] = _readme(notes)
    return files


def _readme(notes: list[tuple[str, str, list[str], dict[str, str]]]) -> str:
    lines = [
        "# Compact schemas of custom resources",
        "",
        "Generated by `schemas/generate.py` from the CustomResourceDefinitions listed below; do",
        "not edit by hand. Regenerate with `python schemas/generate.py` (it reads",
        "`../shared/ref/crds/` by default) and commit the result; a test fails when these files",
        "are stale.",
        "",
        "Each file is a JSON Schema 2020-12 for one served group, version and kind: structure,",
        "types, enums, required fields, defaults and value constraints, without the `description`",
        "prose. CEL rules (`x-kubernetes-validations`) are not kept; ailint re-implements the",
        "ones that matter in `linter/schema.py`.",
        "",
        "## Notice",
        "",
        f"The schemas are derived from the following files, all licensed under {LICENCE}",
        "(http://www.apache.org/licenses/LICENSE-2.0). Only structural data is kept.",
        "",
        "| Kind | Source repository | Commit | Path | Licence | Generated files |",
        "|---|---|---|---|---|---|",
    ]
    for copy, kind, made, src in notes:
        repo = f"https://github.com/{src['repo']}" if src.get("repo") else "unknown"
        commit = src.get("commit", "unknown")
        path = src.get("path", copy)
        lines.append(
            f"| {kind} | {repo} | `{commit}` | `{path}` | {LICENCE} | " + ", ".join(f"`{m}`" for m in made) + " |"
        )
    return "\n".join(lines) + "\n"


def write(out_dir: str, files: dict[str, str]) -> None:
    os.makedirs(out_dir, exist_ok=True)
    for old in os.listdir(out_dir):
        if old.endswith(".json") and old not in files:
            os.remove(os.path.join(out_dir, old))
    for name, text in files.items():
        path = os.path.join(out_dir, name)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.replace(tmp, path)


def stale(out_dir: str, files: dict[str, str]) -> list[str]:
    """Names of files that differ between `out_dir` and a fresh generation."""
    diff = []
    present = {n for n in os.listdir(out_dir) if n.endswith((".json", ".md"))} if os.path.isdir(out_dir) else set()
    for name, text in files.items():
        path = os.path.join(out_dir, name)
        try:
            with open(path, encoding="utf-8") as fh:
                if fh.read() != text:
                    diff.append(name)
        except OSError:
            diff.append(name)
    diff.extend(sorted(present - set(files)))
    return diff


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--crds", default=os.path.join(DEFAULT_REF, "crds"), help="folder of CRD YAML files")
    ap.add_argument("--sources", default=None, help="SOURCES.tsv naming repo/commit/path of each CRD")
    ap.add_argument("--out", default=os.path.join(HERE, "crds"), help="output folder")
    ap.add_argument("--check", action="store_true", help="only report whether --out is stale")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.crds):
        print(f"generate.py: no CRD folder at {args.crds}", file=sys.stderr)
        return 2
    files = generate(args.crds, args.sources)
    if args.check:
        diff = stale(args.out, files)
        for name in diff:
            print(f"stale: {name}")
        return 1 if diff else 0
    write(args.out, files)
    print(f"wrote {len(files)} files to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
