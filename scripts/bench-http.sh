#!/usr/bin/env bash
# Load benchmark of the Streamable HTTP transport (loopback only): REQUESTS `tools/call` of
# pve_list_nodes against the demo emulator, CONCURRENCY sequential workers, one MCP session each,
# with bearer authentication on. Reports req/s, latency percentiles (hey), server CPU per request
# (from /proc/PID/stat) and peak RSS (VmHWM). The emulator runs inside the server process
# (`run --demo`), so its TLS and JSON work is included in the server's CPU and memory figures.
#
# Usage: scripts/bench-http.sh [binary]   (default target/release/nandi-proxmox-mcp)
# Needs: hey (`apt-get install hey`; it reports percentiles for a fixed request count), curl.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN="${1:-target/release/nandi-proxmox-mcp}"
REQUESTS="${REQUESTS:-20000}"
CONCURRENCY="${CONCURRENCY:-16}"
TOKEN="bench-token-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
[ -x "$BIN" ] || { echo "build first: cargo build --release (or pass a binary)" >&2; exit 1; }
command -v hey >/dev/null || { echo "hey is required (apt-get install hey)" >&2; exit 1; }

LOG="$(mktemp)"
cleanup() { [ -n "${PID:-}" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null || true; rm -f "$LOG"; }
trap cleanup EXIT
MCP_TRANSPORT=http MCP_HOST=127.0.0.1 MCP_PORT=0 MCP_AUTH_TOKEN="$TOKEN" \
  MCP_RATE_LIMIT_MAX=100000000 RUST_LOG=warn,nandi_proxmox_mcp=info \
  "$BIN" run --demo 2>"$LOG" &
PID=$!
URL=""
for _ in $(seq 1 100); do
  URL="$(grep -o 'http://127\.0\.0\.1:[0-9]*/mcp' "$LOG" | head -n1 || true)"
  [ -n "$URL" ] && break
  sleep 0.1
done
[ -n "$URL" ] || { cat "$LOG" >&2; exit 1; }

post() { # post SESSION BODY: one JSON-RPC POST, prints headers + body
  curl -s -D - "$URL" -H "Authorization: Bearer $TOKEN" ${1:+-H "Mcp-Session-Id: $1"} \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'Mcp-Protocol-Version: 2025-06-18' -d "$2"
}
new_session() {
  local sid
  sid="$(post "" '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}' \
    | tr -d '\r' | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}')"
  post "$sid" '{"jsonrpc":"2.0","method":"notifications/initialized"}' >/dev/null
  echo "$sid"
}
CALL='{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"pve_list_nodes","arguments":{}}}'
# One session per concurrent worker: JSON-RPC ids must be unique among a session's requests in
# flight, and hey repeats one body, so each session carries one request at a time.
SIDS=()
for _ in $(seq 1 "$CONCURRENCY"); do SIDS+=("$(new_session)"); done
# The call must really succeed, or the figures would measure error paths.
post "${SIDS[0]}" "$CALL" | grep -q '"isError":false' || { echo "tools/call failed" >&2; exit 1; }

CSV="$(mktemp -d)"
load() { # load N: N calls in total over CONCURRENCY sequential workers (keep-alive), per-call CSV
  local per=$(( $1 / CONCURRENCY )) i=0 pids=()
  for sid in "${SIDS[@]}"; do
    i=$((i + 1))
    hey -n "$per" -c 1 -t 10 -o csv -m POST -T application/json \
      -A 'application/json, text/event-stream' -H "Authorization: Bearer $TOKEN" \
      -H "Mcp-Session-Id: $sid" -H 'Mcp-Protocol-Version: 2025-06-18' -d "$CALL" "$URL" \
      >"$CSV/$i.csv" &
    pids+=($!)
  done
  wait "${pids[@]}" # not a bare `wait`: the server is a background job too
}
load 2000 # warm-up (connection pool to the emulator, allocator), not measured

ticks() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
HZ="$(getconf CLK_TCK)"
CPU0="$(ticks)"
T0="$(date +%s.%N)"
load "$REQUESTS"
T1="$(date +%s.%N)"
CPU1="$(ticks)"
post "${SIDS[0]}" "$CALL" | grep -q '"isError":false' || { echo "tools/call failed after the run" >&2; exit 1; }

# hey CSV columns: response-time,DNS+dialup,DNS,Request-write,Response-delay,Response-read,status-code,offset
cat "$CSV"/*.csv | awk -F, '$1 ~ /^[0-9.]+$/ {print $1, $7}' >"$CSV/all"
TOTAL="$(wc -l <"$CSV/all")"
OK="$(awk '$2 == 200' "$CSV/all" | wc -l)"
sort -n -k1,1 "$CSV/all" | awk -v n="$TOTAL" -v t0="$T0" -v t1="$T1" '
  { v[NR] = $1 * 1000 }
  END {
    printf "calls: %d in %.2f s = %.0f calls/s\n", n, t1 - t0, n / (t1 - t0)
    printf "latency ms: p50 %.2f  p90 %.2f  p99 %.2f  max %.2f\n",
      v[int(n * 0.50)], v[int(n * 0.90)], v[int(n * 0.99)], v[n]
  }'
echo "HTTP 200: $OK of $TOTAL"
awk -v t=$((CPU1 - CPU0)) -v hz="$HZ" -v n="$TOTAL" \
  'BEGIN { printf "server CPU: %.2f s for %d calls = %.0f us per call\n", t / hz, n, t / hz / n * 1e6 }'
echo "server memory: peak RSS $(awk '/VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$PID/status") MB, now $(awk '/VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$PID/status") MB"
rm -rf "$CSV"
[ "$OK" -eq "$TOTAL" ] && [ "$TOTAL" -eq "$REQUESTS" ] || { echo "some calls failed" >&2; exit 1; }
echo "machine: $(nproc) CPUs, $(uname -sr); $("$BIN" --version)"
