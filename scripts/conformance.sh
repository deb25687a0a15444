#!/usr/bin/env bash
# Runs the official MCP conformance suite (npm @modelcontextprotocol/conformance) against the
# server over Streamable HTTP: demo emulator, loopback bind, authentication waived
# (MCP_ALLOW_NO_AUTH=true is only accepted on loopback). Exits non-zero if a required scenario fails.
#
# Usage: scripts/conformance.sh [path-to-binary]
#   The binary: the argument, else $NANDI_BIN, else target/debug/nandi-proxmox-mcp (built if
#   missing; a binary named explicitly must exist). .ci/run points it at the release build.
# Needs: Node 20+ with npx and network access to the npm registry (first run only; cached after).
# .ci/run runs it after the tests (Node and the npm registry are available there); tests/it/http.rs
# covers the same behaviours offline (initialize, tools/list, concurrent SSE streams in one
# session, DNS-rebinding Host/Origin).
set -euo pipefail
cd "$(dirname "$0")/.."

SUITE_VERSION="${CONFORMANCE_VERSION:-0.1.13}" # newer releases need Node 22
BIN="${1:-${NANDI_BIN:-}}"
# The scenarios that apply to this server: tools and prompts are declared; resources and logging are not.
SCENARIOS=(server-initialize ping tools-list server-sse-multiple-streams dns-rebinding-protection prompts-list)

if [ -z "$BIN" ]; then
  BIN=target/debug/nandi-proxmox-mcp
  [ -x "$BIN" ] || cargo build --quiet
fi
[ -x "$BIN" ] || { echo "error: $BIN is not an executable" >&2; exit 1; }
echo "== binary $BIN"
OUT="$(mktemp -d)"
LOG="$OUT/server.log"
cleanup() { [ -n "${SERVER_PID:-}" ] && kill "$SERVER_PID" 2>/dev/null; wait 2>/dev/null || true; }
trap cleanup EXIT

MCP_TRANSPORT=http MCP_HOST=127.0.0.1 MCP_PORT=0 MCP_ALLOW_NO_AUTH=true \
  MCP_RATE_LIMIT_MAX=100000 RUST_LOG=warn,nandi_proxmox_mcp=info \
  "$BIN" run --demo 2>"$LOG" &
SERVER_PID=$!
URL=""
for _ in $(seq 1 100); do
  URL="$(grep -o 'http://127\.0\.0\.1:[0-9]*/mcp' "$LOG" | head -n1 || true)"
  [ -n "$URL" ] && break
  sleep 0.1
done
if [ -z "$URL" ]; then
  echo "server did not start:" >&2
  cat "$LOG" >&2
  exit 1
fi
echo "== server at $URL (suite @modelcontextprotocol/conformance@$SUITE_VERSION)"

failed=()
for scenario in "${SCENARIOS[@]}"; do
  echo "== $scenario"
  if ! npx -y "@modelcontextprotocol/conformance@$SUITE_VERSION" server \
      --url "$URL" --scenario "$scenario" -o "$OUT/$scenario" >"$OUT/$scenario.txt" 2>&1; then
    failed+=("$scenario")
  fi
  # The CLI's exit status has varied between releases: also read its summary line.
  if grep -Eq '(FAILURE|Failed: [1-9])' "$OUT/$scenario.txt"; then
    [[ " ${failed[*]-} " == *" $scenario "* ]] || failed+=("$scenario")
  fi
  tail -n 8 "$OUT/$scenario.txt"
done

if [ "${#failed[@]}" -gt 0 ]; then
  echo "== FAILED: ${failed[*]} (details in $OUT)" >&2
  exit 1
fi
echo "== all ${#SCENARIOS[@]} scenarios passed"
