#!/usr/bin/env bash
# Binary-level smoke of a built nandi-proxmox-mcp (CI points it at the release build, the
# binary users get): `tools --json` lists the catalog, and over stdio against `run --demo`
# an `initialize`, `tools/list` and one read `tools/call` (pve_list_nodes) each get a
# well-formed answer within 30 s. Runs in a temporary HOME, so no user file is read or written.
#
# Usage: scripts/smoke-binary.sh [path-to-binary]   (default: $NANDI_BIN, else target/release/nandi-proxmox-mcp)
# Needs: python3.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN="${1:-${NANDI_BIN:-target/release/nandi-proxmox-mcp}}"
[ -x "$BIN" ] || { echo "error: $BIN is not an executable (build it first)" >&2; exit 1; }
BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")"
HOME_DIR="$(mktemp -d)"
trap 'rm -rf "$HOME_DIR"' EXIT

echo "== $BIN --version: $(env -i PATH="$PATH" HOME="$HOME_DIR" "$BIN" --version)"

echo "== tools --json"
env -i PATH="$PATH" HOME="$HOME_DIR" "$BIN" tools --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
names = [t["name"] for t in d["tools"]]
assert d["toolCount"] == len(names) > 0, d["toolCount"]
assert "pve_list_nodes" in names, "pve_list_nodes missing"
print("   %d tools (tier %s, module %s)" % (len(names), d["tier"], d["module"]))
'

echo "== stdio: initialize, tools/list, tools/call pve_list_nodes against run --demo"
env -i PATH="$PATH" HOME="$HOME_DIR" RUST_LOG=warn python3 - "$BIN" <<'PY'
import json, select, subprocess, sys, time

proc = subprocess.Popen([sys.argv[1], "run", "--demo"], stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

def send(message):
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()

def answer(id, limit=30.0):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        line = proc.stdout.readline()
        if not line:
            sys.exit(f"server closed stdout before answering request {id}")
        value = json.loads(line)
        if value.get("id") == id:
            if "error" in value:
                sys.exit(f"request {id} failed: {value['error']}")
            return value["result"]
    sys.exit(f"no answer to request {id} within {limit} s")

try:
    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "smoke-binary", "version": "1"}}})
    init = answer(1)
    print(f"   initialize: {init['serverInfo']['name']} {init['serverInfo']['version']}, protocol {init['protocolVersion']}")
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
    tools = answer(2)["tools"]
    assert any(t["name"] == "pve_list_nodes" for t in tools), "pve_list_nodes not listed"
    print(f"   tools/list: {len(tools)} tools")
    send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
          "params": {"name": "pve_list_nodes", "arguments": {}}})
    result = answer(3)
    assert result.get("isError") is False, result
    envelope = result["structuredContent"]
    assert envelope["ok"] is True, envelope
    assert json.loads(result["content"][0]["text"]) == envelope, "text and structuredContent differ"
    print(f"   tools/call pve_list_nodes: ok, {len(envelope['data'])} nodes")
finally:
    proc.stdin.close()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
PY
echo "== smoke passed"
