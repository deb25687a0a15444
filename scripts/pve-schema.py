#!/usr/bin/env python3
"""The official Proxmox VE API schema as the tests read it, made from Proxmox's own file.

Proxmox's API viewer is built from `api-viewer/apidata.js` in the `pve-docs` package: a JS file
that assigns one JSON array (`const apiSchema = [...]`). The tests read two gzipped JSON files
beside the project (`../shared/pve-api/`): the tree as published, and the same flattened per
path and method. This script makes both from `apidata.js`, and checks the tree against a pinned
SHA-256 of its canonical form, so a CI that fetches the package proves it holds the very schema
the committed tables (`src/effects/endpoints.tsv`, the catalog checks) were made from.

    scripts/pve-schema.py from-apidata APIDATA_JS OUT_DIR   # writes both files, checks the pin
    scripts/pve-schema.py check DIR                          # a directory's tree against the pin,
                                                             # and its flat file against the tree
    scripts/pve-schema.py fetch OUT_DIR                      # download pve-docs, then from-apidata

Only the Python standard library is used, and `dpkg-deb` to unpack the package.
"""

import gzip
import hashlib
import json
import os
import sys
import subprocess
import tempfile
import urllib.request

# The schema the project is checked against: PVE 9.1 (pve-docs 9.1.2).
VERSION = "9.1"
PVE_DOCS_VERSION = "9.1.2"
# SHA-256 of the tree's canonical JSON (sorted keys, no spaces, ASCII escapes).
TREE_SHA256 = "8fd51f1fd63a56e315591491a520e7fc44b325d60ee9c947369b7e79b644be82"
# Where Proxmox publishes the package (no-subscription repository of PVE 9, Debian trixie);
# PVE_DOCS_DEB_URL overrides it, e.g. with a mirror. The pin above is what is trusted.
DEFAULT_DEB_URL = (
    "http://download.proxmox.com/debian/pve/dists/trixie/pve-no-subscription/"
    f"binary-amd64/pve-docs_{PVE_DOCS_VERSION}_all.deb"
)
APIDATA_MEMBER = "usr/share/pve-docs/api-viewer/apidata.js"

# The parameter fields the flattened form keeps, in this order.
PARAM_KEYS = (
    "type", "optional", "enum", "pattern", "format", "minimum", "maximum",
    "maxLength", "minLength", "default", "typetext",
)


def fail(message):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(1)


def tree_from_js(text):
    """The JSON array that apidata.js assigns, whatever the statement around it."""
    start = text.find("[")
    if start < 0:
        fail("no JSON array in apidata.js")
    tree, _ = json.JSONDecoder().raw_decode(text[start:])
    if not isinstance(tree, list):
        fail("apidata.js does not hold a JSON array")
    return tree


def canonical_sha256(tree):
    raw = json.dumps(tree, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(raw.encode("ascii")).hexdigest()


def flatten(tree):
    """`{path: {METHOD: {name, allowtoken, protected, permissions, parameters, returns_type}}}`."""
    flat = {}

    def walk(node):
        info = node.get("info")
        if info:
            methods = {}
            for method, entry in info.items():
                properties = (entry.get("parameters") or {}).get("properties") or {}
                methods[method] = {
                    "allowtoken": entry.get("allowtoken"),
                    "name": entry.get("name"),
                    "parameters": {
                        name: {k: spec[k] for k in PARAM_KEYS if k in spec}
                        for name, spec in properties.items()
                    },
                    "permissions": entry.get("permissions"),
                    "protected": entry.get("protected"),
                    "returns_type": (entry.get("returns") or {}).get("type"),
                }
            flat[node["path"]] = methods
        for child in node.get("children") or []:
            walk(child)

    for root in tree:
        walk(root)
    return flat


def write_gz(path, value):
    with gzip.open(path, "wt", encoding="utf-8") as out:
        json.dump(value, out, sort_keys=True)


def check_pin(tree, what):
    digest = canonical_sha256(tree)
    if digest != TREE_SHA256:
        fail(f"{what}: schema SHA-256 {digest}, expected {TREE_SHA256} (PVE {VERSION}, pve-docs {PVE_DOCS_VERSION})")
    return digest


def from_apidata(js_path, out_dir):
    with open(js_path, encoding="utf-8") as f:
        tree = tree_from_js(f.read())
    digest = check_pin(tree, js_path)
    os.makedirs(out_dir, exist_ok=True)
    write_gz(os.path.join(out_dir, f"apidata-pve-{VERSION}.json.gz"), tree)
    flat = flatten(tree)
    write_gz(os.path.join(out_dir, f"endpoints-pve-{VERSION}.json.gz"), flat)
    methods = sum(len(m) for m in flat.values())
    print(f"PVE {VERSION} schema: {len(flat)} paths, {methods} methods, sha256 {digest} -> {out_dir}")


def check(directory):
    with gzip.open(os.path.join(directory, f"apidata-pve-{VERSION}.json.gz"), "rt", encoding="utf-8") as f:
        tree = json.load(f)
    with gzip.open(os.path.join(directory, f"endpoints-pve-{VERSION}.json.gz"), "rt", encoding="utf-8") as f:
        flat = json.load(f)
    digest = check_pin(tree, directory)
    if flatten(tree) != flat:
        fail(f"{directory}: the flattened file is not the flattening of the tree")
    print(f"PVE {VERSION} schema in {directory}: tree sha256 {digest}, flat file matches")


def fetch(out_dir):
    url = os.environ.get("PVE_DOCS_DEB_URL", DEFAULT_DEB_URL)
    print(f"fetching {url}")
    with urllib.request.urlopen(url, timeout=120) as response:
        deb = response.read()
    with tempfile.TemporaryDirectory() as scratch:
        deb_path = os.path.join(scratch, "pve-docs.deb")
        with open(deb_path, "wb") as f:
            f.write(deb)
        unpacked = os.path.join(scratch, "root")
        # dpkg-deb reads every payload compression Debian uses (xz, zstd, gzip).
        subprocess.run(["dpkg-deb", "-x", deb_path, unpacked], check=True)
        from_apidata(os.path.join(unpacked, APIDATA_MEMBER), out_dir)


def main(argv):
    if len(argv) == 4 and argv[1] == "from-apidata":
        from_apidata(argv[2], argv[3])
    elif len(argv) == 3 and argv[1] == "check":
        check(argv[2])
    elif len(argv) == 3 and argv[1] == "fetch":
        fetch(argv[2])
    else:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main(sys.argv)
