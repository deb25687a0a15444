#!/usr/bin/env python3
"""Measure the size of the `tools/list` answer under several settings.

Runs the built binary over stdio (no Proxmox needed) and prints, per setting, the number of tools
and the bytes of the JSON-RPC `result` as the client receives it.

    cargo build && python3 scripts/tools-list-size.py [path/to/nandi-proxmox-mcp]
"""
import json
import os
import subprocess
import sys
import tempfile

BINARY = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/debug/nandi-proxmox-mcp")
SETTINGS = [
    ("default (read-only/core)", {}),
    ("read-execute/core", {"PVE_ACCESS_TIER": "read-execute"}),
    ("full/core", {"PVE_ACCESS_TIER": "full"}),
    ("full/advanced", {"PVE_ACCESS_TIER": "full", "PVE_MODULE_MODE": "advanced"}),
]


def measure(env_extra):
    with tempfile.TemporaryDirectory() as home:
        env = {"PATH": os.environ.get("PATH", ""), "HOME": home, "RUST_LOG": "error", **env_extra}
        messages = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "size", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
        ]
        proc = subprocess.Popen([BINARY, "run"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                cwd=home, env=env, text=True)
        for message in messages:
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
        for line in proc.stdout:
            reply = json.loads(line)
            if reply.get("id") == 2:
                result = json.dumps(reply["result"], separators=(",", ":"))
                proc.stdin.close()
                proc.wait(timeout=10)
                return len(reply["result"]["tools"]), len(result.encode())
    raise RuntimeError("no tools/list answer")


for label, extra in SETTINGS:
    count, size = measure(extra)
    print(f"{label:28} {count:4} tools  {size:7} bytes  ({size / 1024:.1f} KiB)")
