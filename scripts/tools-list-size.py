#!/usr/bin/env python3
"""Measure what the tool listing and typical answers cost in a model's context.

Runs the built binary over stdio (no Proxmox needed; no SSH configured, so the SSH tools are
absent) and prints, per surface:

- entries in `tools/list` and the wire bytes of its JSON-RPC `result`;
- model-visible bytes: name + description + compact JSON of inputSchema, summed (clients keep
  `_meta`, annotations and titles for themselves);
- estimated tokens: model-visible bytes / 4 (no tokenizer is needed offline; JSON-heavy text
  runs close to 4 bytes per token with common BPE tokenizers).

Then the answer size of the 10 most used read tools against the demo (`run --demo`), whole and
with a `fields` projection where the tool is a list.

With `--check`, exits 1 when a surface exceeds its budget (issue 22; tests/it/budget.rs enforces
the same figures in-process): default 24,000 B, full/advanced 90,000 B, compact 4,000 B.

    cargo build && python3 scripts/tools-list-size.py [path/to/nandi-proxmox-mcp] [--markdown] [--check]
"""
import json
import os
import subprocess
import sys
import tempfile

ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
MARKDOWN = "--markdown" in sys.argv
CHECK = "--check" in sys.argv
# Model-visible byte budgets by surface label (issue 22).
BUDGETS = {
    "default (read-only, core)": 24_000,
    "full, advanced": 90_000,
    "compact (read-only, core)": 4_000,
    "compact (full, advanced)": 4_000,
}
BINARY = os.path.abspath(ARGS[0] if ARGS else "target/debug/nandi-proxmox-mcp")
FULL_ADVANCED = {"PVE_ACCESS_TIER": "full", "PVE_MODULE_MODE": "advanced"}
SURFACES = [
    ("default (read-only, core)", {}),
    ("read-execute, core", {"PVE_ACCESS_TIER": "read-execute"}),
    ("full, core", {"PVE_ACCESS_TIER": "full"}),
    ("full, advanced", FULL_ADVANCED),
    ("full, advanced, aliases listed", {**FULL_ADVANCED, "PVE_ALIASES": "listed"}),
    ("compact (read-only, core)", {"PVE_TOOL_SURFACE": "compact"}),
    ("compact (full, advanced)", {**FULL_ADVANCED, "PVE_TOOL_SURFACE": "compact"}),
]
# The reads a session uses most: orientation, inventory, one guest, storage, tasks.
READS = [
    ("pve_list_nodes", {}, ["node", "status"]),
    ("pve_list_cluster_resources", {}, ["id", "type", "node", "status"]),
    ("pve_get_node_status", {"node": "pve01"}, None),
    ("pve_list_qemu_vms", {"node": "pve01"}, ["vmid", "name", "status"]),
    ("pve_list_lxc_containers", {"node": "pve01"}, ["vmid", "name", "status"]),
    ("pve_get_qemu_status", {"node": "pve01", "vmid": 101}, None),
    ("pve_get_qemu_config", {"node": "pve01", "vmid": 101}, None),
    ("pve_list_node_storage", {"node": "pve01"}, ["storage", "avail"]),
    ("pve_list_tasks", {"node": "pve01"}, ["upid", "status"]),
    ("pve_get_cluster_status", {}, None),
]


class Session:
    """One `nandi-proxmox-mcp run` over stdio."""

    def __init__(self, env_extra, demo=False):
        self.home = tempfile.TemporaryDirectory()
        env = {"PATH": os.environ.get("PATH", ""), "HOME": self.home.name, "RUST_LOG": "error",
               **env_extra}
        argv = [BINARY, "run"] + (["--demo"] if demo else [])
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, cwd=self.home.name, env=env,
                                     text=True)
        self.next_id = 1
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "size", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        ident = self.next_id
        self.send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        for line in self.proc.stdout:
            reply = json.loads(line)
            if reply.get("id") == ident:
                return reply
        raise RuntimeError(f"no answer to {method}")

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=10)
        self.home.cleanup()


def compact_len(value):
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def model_visible(tools):
    return sum(len(t["name"].encode()) + len(t.get("description", "").encode())
               + compact_len(t["inputSchema"]) for t in tools)


def measure_listing(env_extra):
    session = Session(env_extra)
    result = session.request("tools/list", {})["result"]
    session.close()
    tools = result["tools"]
    return len(tools), compact_len(result), model_visible(tools)


def measure_reads():
    session = Session({}, demo=True)
    rows = []
    for name, arguments, fields in READS:
        reply = session.request("tools/call", {"name": name, "arguments": arguments})
        whole = compact_len(reply["result"]["structuredContent"])
        lean = None
        if fields:
            shaped = session.request("tools/call", {"name": name,
                                                    "arguments": {**arguments, "fields": fields}})
            lean = compact_len(shaped["result"]["structuredContent"])
        rows.append((name, whole, lean, fields))
    session.close()
    return rows


def over_budget(listings):
    """Labels and sizes of the surfaces above their budget."""
    return [(label, visible, BUDGETS[label]) for label, _, _, visible in listings
            if label in BUDGETS and visible > BUDGETS[label]]


def main():
    listings = [(label, *measure_listing(extra)) for label, extra in SURFACES]
    if CHECK:
        failures = over_budget(listings)
        for label, visible, budget in failures:
            print(f"over budget: {label}: {visible:,} B > {budget:,} B", file=sys.stderr)
        for label, _, _, visible in listings:
            if label in BUDGETS:
                print(f"{label:32} model-visible {visible:7} B  budget {BUDGETS[label]:7} B")
        sys.exit(1 if failures else 0)
    reads = measure_reads()
    if MARKDOWN:
        print("| surface | entries | wire bytes | model-visible bytes | est. tokens |")
        print("|---|---:|---:|---:|---:|")
        for label, count, wire, visible in listings:
            print(f"| {label} | {count} | {wire:,} | {visible:,} | {visible // 4:,} |")
        print()
        print("| read tool (demo) | envelope bytes | with `fields` | fields |")
        print("|---|---:|---:|---|")
        for name, whole, lean, fields in reads:
            lean_cell = f"{lean:,}" if lean is not None else "—"
            fields_cell = ", ".join(fields) if fields else "—"
            print(f"| `{name}` | {whole:,} | {lean_cell} | {fields_cell} |")
        return
    for label, count, wire, visible in listings:
        print(f"{label:32} {count:4} tools  wire {wire:7} B  model-visible {visible:7} B"
              f"  ~{visible // 4:6} tokens")
    print()
    for name, whole, lean, _ in reads:
        lean_text = f"  with fields {lean:6} B" if lean is not None else ""
        print(f"{name:32} {whole:7} B{lean_text}")


if __name__ == "__main__":
    main()
