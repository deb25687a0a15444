"""Benchmark driver for stdio MCP servers (and the Streamable HTTP transport of ours).

Role: one driver for every server measured, so the figures of two servers are comparable.
Invariant: loopback only, every run bounded in calls and in time (each read has a deadline),
every child process is stopped before the driver returns. Python 3.11 standard library only.
"""

import argparse
import http.client
import json
import os
import select
import shlex
import ssl
import statistics
import subprocess
import sys
import threading
import time

HZ = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
DEADLINE = 30.0  # seconds any single read may take before the run is abandoned
SESSION_PROBES = 64  # HTTP sessions opened to measure the memory one holds


def cpu_seconds(pid):
    """User + system CPU of a whole process (every thread, live or exited), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / HZ


def memory_kib(pid, key):
    """VmRSS / VmHWM of a process in KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


class Stdio:
    """A server started as an MCP client starts it: command line, environment, pipes."""

    def __init__(self, argv, env):
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=env, bufsize=0)
        self.out = self.proc.stdout
        self.buf = b""
        self.next_id = 1

    def send(self, message):
        self.proc.stdin.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def line(self):
        while b"\n" not in self.buf:
            ready, _, _ = select.select([self.out], [], [], DEADLINE)
            if not ready:
                raise TimeoutError("no answer within the deadline")
            chunk = os.read(self.out.fileno(), 1 << 20)
            if not chunk:
                raise EOFError("server closed stdout")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def request_bytes(self, method, params):
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            raw = self.line()
            msg = json.loads(raw)
            if msg.get("id") == rid:
                return msg, len(raw)

    def request(self, method, params):
        return self.request_bytes(method, params)[0]

    def initialize(self):
        answer = self.request("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def call(self, tool, arguments):
        return self.request("tools/call", {"name": tool, "arguments": arguments})

    def stop(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except Exception:
            self.proc.kill()
            self.proc.wait()


def checked_call(server, tool, arguments):
    answer = server.call(tool, arguments)
    result = answer.get("result") or {}
    if result.get("isError") or "error" in answer:
        raise RuntimeError(f"{tool} failed: {json.dumps(answer)[:400]}")


def cold_start(argv, env):
    """Seconds from spawn to the initialize answer."""
    start = time.perf_counter()
    server = Stdio(argv, env)
    server.initialize()
    elapsed = time.perf_counter() - start
    server.stop()
    return elapsed


def first_listing(argv, env):
    """Seconds from spawn to the first tools/list answer (clients list right after initialize)."""
    start = time.perf_counter()
    server = Stdio(argv, env)
    server.initialize()
    server.request_bytes("tools/list", {})
    elapsed = time.perf_counter() - start
    server.stop()
    return elapsed


def true_start():
    start = time.perf_counter()
    subprocess.run(["/bin/true"], check=True)
    return time.perf_counter() - start


def cold_start_rounds(starts, rounds):
    """Median seconds of each start over `rounds` interleaved rounds.

    `starts` maps a name to a function that spawns, waits for readiness and stops one process.
    Every round runs each of them once, in an order rotated by one each round, so a slow moment
    of the machine (or the first spawn after other work) falls on every contender alike; the
    ratios of these medians are what the goal table reports.
    """
    names = list(starts)
    times = {name: [] for name in names}
    for round_no in range(rounds):
        shift = round_no % len(names)
        for name in names[shift:] + names[:shift]:
            times[name].append(starts[name]())
    return {name: statistics.median(values) for name, values in times.items()}


def https_get_latency(emu, path, count):
    """Median seconds of a GET over one persistent HTTPS connection (Python's own client)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # loopback emulator with a throw-away certificate
    conn = http.client.HTTPSConnection(emu["PROXMOX_HOST"], int(emu["PROXMOX_PORT"]),
                                       context=context, timeout=DEADLINE)
    headers = {"Authorization": emu["authorization"]}
    samples = []
    for i in range(count + 50):
        start = time.perf_counter()
        conn.request("GET", "/api2/json" + path, headers=headers)
        body = conn.getresponse().read()
        json.loads(body)
        if i >= 50:
            samples.append(time.perf_counter() - start)
    conn.close()
    return statistics.median(samples)


def stdio_run(argv, env, tool, arguments, calls, inflight_calls, emulator_pid):
    """One server process: idle RSS (and its anonymous and file-backed parts), sequential latency
    and CPU, 8-in-flight throughput with the CPU each of the three processes spent on it (server,
    emulator, this driver: they share the machine's CPUs), peak RSS."""
    server = Stdio(argv, env)
    server.initialize()
    pid = server.proc.pid
    checked_call(server, tool, arguments)
    for _ in range(200):  # warm-up: connection pool, allocator
        checked_call(server, tool, arguments)
    time.sleep(0.3)
    rss_idle = memory_kib(pid, "VmRSS")
    rss_anon, rss_file = memory_kib(pid, "RssAnon"), memory_kib(pid, "RssFile")
    cpu0 = cpu_seconds(pid)
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        checked_call(server, tool, arguments)
        samples.append(time.perf_counter() - start)
    cpu_per_call = (cpu_seconds(pid) - cpu0) / calls
    # Eight requests in flight: a new one is sent as each answer arrives.
    params = {"name": tool, "arguments": arguments}
    sent = answered = 0
    start = time.perf_counter()
    cpu0, emu0, driver0 = cpu_seconds(pid), cpu_seconds(emulator_pid), time.process_time()
    while sent < 8:
        server.send({"jsonrpc": "2.0", "id": 10_000_000 + sent, "method": "tools/call", "params": params})
        sent += 1
    while answered < inflight_calls:
        raw = server.line()
        if b'"isError":true' in raw or b'"error":{' in raw:
            raise RuntimeError(f"in-flight call failed: {raw[:300]!r}")
        answered += 1
        if sent < inflight_calls:
            server.send({"jsonrpc": "2.0", "id": 10_000_000 + sent, "method": "tools/call", "params": params})
            sent += 1
    elapsed = time.perf_counter() - start
    cpu_inflight = (cpu_seconds(pid) - cpu0) / inflight_calls
    emu_inflight = (cpu_seconds(emulator_pid) - emu0) / inflight_calls
    driver_inflight = (time.process_time() - driver0) / inflight_calls
    rss_peak = memory_kib(pid, "VmHWM")
    server.stop()
    return {
        "call_ms": statistics.median(samples) * 1e3,
        "cpu_ms_per_call": cpu_per_call * 1e3,
        "inflight_calls_per_s": inflight_calls / elapsed,
        "cpu_ms_per_call_inflight": cpu_inflight * 1e3,
        "emulator_cpu_ms_per_call_inflight": emu_inflight * 1e3,
        "driver_cpu_ms_per_call_inflight": driver_inflight * 1e3,
        "rss_idle_mib": rss_idle / 1024,
        "rss_idle_anon_mib": rss_anon / 1024,
        "rss_idle_file_mib": rss_file / 1024,
        "rss_peak_mib": rss_peak / 1024,
    }


def tools_list(argv, env):
    server = Stdio(argv, env)
    server.initialize()
    server.request_bytes("tools/list", {})  # first listing may build caches
    samples, size = [], 0
    for _ in range(20):
        start = time.perf_counter()
        _, size = server.request_bytes("tools/list", {})
        samples.append(time.perf_counter() - start)
    server.stop()
    return size, statistics.median(samples) * 1e3


class HttpSession:
    """One Streamable HTTP MCP session over one persistent connection."""

    def __init__(self, host, port, token):
        self.conn = http.client.HTTPConnection(host, port, timeout=DEADLINE)
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                        "Accept": "application/json, text/event-stream",
                        "Mcp-Protocol-Version": "2025-06-18"}
        answer = self.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"}}})
        if "result" not in answer:
            raise RuntimeError(f"HTTP initialize failed: {answer}")
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def post(self, message):
        self.conn.request("POST", "/mcp", body=json.dumps(message), headers=self.headers)
        response = self.conn.getresponse()
        session = response.getheader("Mcp-Session-Id")
        if session:
            self.headers["Mcp-Session-Id"] = session
        body = response.read()
        for line in body.splitlines():
            if line.startswith(b"data:") and line[5:].strip():
                return json.loads(line[5:])
        return json.loads(body) if body.strip().startswith(b"{") else {}

    def close(self):
        self.conn.close()


def http_run(binary, env, tool, arguments, calls, workers, stateless=False):
    """Calls/s and server CPU per request over Streamable HTTP: `workers` clients on persistent
    connections; with `stateless`, MCP_STATELESS=true (no sessions, plain JSON answers)."""
    token = "bench-" + os.urandom(8).hex()
    env = dict(env, MCP_TRANSPORT="http", MCP_HOST="127.0.0.1", MCP_PORT="0",
               MCP_AUTH_TOKEN=token, MCP_RATE_LIMIT_MAX="100000000", RUST_LOG="warn,nandi_proxmox_mcp=info",
               MCP_STATELESS="true" if stateless else "false")
    proc = subprocess.Popen([binary, "run"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=env)
    try:
        port = None
        deadline = time.time() + DEADLINE
        while port is None and time.time() < deadline:
            line = proc.stderr.readline().decode(errors="replace")
            if not line:
                break
            if "http://127.0.0.1:" in line:
                port = int(line.split("http://127.0.0.1:", 1)[1].split("/", 1)[0])
        if port is None:
            raise RuntimeError("HTTP server did not report its address")
        threading.Thread(target=lambda: proc.stderr.read(), daemon=True).start()
        memory = {}
        if not stateless:
            # Idle with a bearer token, then the memory each further open session holds: 64
            # sessions initialized (one connection each, closed after), RSS before and after.
            probe = HttpSession("127.0.0.1", port, token)
            probe.close()
            time.sleep(0.3)
            idle = memory_kib(proc.pid, "VmRSS")
            extra = [HttpSession("127.0.0.1", port, token) for _ in range(SESSION_PROBES)]
            for s in extra:
                s.close()
            time.sleep(0.3)
            memory = {"http_rss_idle_mib": idle / 1024,
                      "http_kib_per_session": (memory_kib(proc.pid, "VmRSS") - idle) / SESSION_PROBES}
        sessions = [HttpSession("127.0.0.1", port, token) for _ in range(workers)]
        message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": tool, "arguments": arguments}}
        for s in sessions:
            for _ in range(50):
                answer = s.post(message)
                if answer.get("result", {}).get("isError") is not False:
                    raise RuntimeError(f"HTTP call failed: {answer}")
        errors = []

        def work(session, n):
            for _ in range(n):
                answer = session.post(message)
                if answer.get("result", {}).get("isError") is not False:
                    errors.append(answer)

        cpu0 = cpu_seconds(proc.pid)
        start = time.perf_counter()
        threads = [threading.Thread(target=work, args=(s, calls // workers)) for s in sessions]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - start
        done = (calls // workers) * workers
        cpu = (cpu_seconds(proc.pid) - cpu0) / done
        if errors:
            raise RuntimeError(f"{len(errors)} HTTP calls failed: {errors[0]}")
        for s in sessions:
            s.close()
        prefix = "http_stateless" if stateless else "http"
        return dict(memory, **{f"{prefix}_calls_per_s": done / elapsed,
                               f"{prefix}_cpu_ms_per_request": cpu * 1e3})
    finally:
        proc.terminate()
        proc.wait(timeout=10)


SURFACES = [
    ("read-only/core", {}),
    ("read-execute/core", {"PVE_ACCESS_TIER": "read-execute"}),
    ("full/core", {"PVE_ACCESS_TIER": "full"}),
    ("full/advanced", {"PVE_ACCESS_TIER": "full", "PVE_MODULE_MODE": "advanced"}),
]


def summary(values):
    values = [v for v in values if v is not None]
    if not values:
        return "n/a"
    med, lo, hi = statistics.median(values), min(values), max(values)
    fmt = (lambda v: f"{v:,.0f}") if med >= 100 else (lambda v: f"{v:.3g}")
    return f"{fmt(med)} ({fmt(lo)}–{fmt(hi)})"


def stats(values):
    values = [v for v in values if v is not None]
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


# Figures that vary with the machine rather than with the code; `--check` reports them but they
# never fail it (compare the ratios, which the same run measures against its own yardstick).
# Wall-clock latencies (`*_ms` other than CPU, `tools_list_ms[...]` included) are among them,
# and so are throughputs (`*_calls_per_s`): calls per second of wall time move with the machine.
ABSOLUTE = ("true_ms", "https_get_ms", "cold_start_ms", "cold_start_full_ms", "call_ms")
# How far a new median may sit outside the recorded min–max before it counts as drift.
SLACK = 0.25


def check(recorded, measured):
    """Prints each recorded figure next to the new median; returns how many drifted."""
    drift = 0
    print(f"\ncheck against figures of {recorded['date']} (load {recorded['load']}, {recorded['runs']} runs):")
    for name, keys in recorded["figures"].items():
        if name == "previous" and name not in measured["figures"]:
            print("  (the recorded previous build's figures are not checked: run with --previous to)")
            continue
        for key, old in keys.items():
            new = measured["figures"].get(name, {}).get(key)
            if new is None:
                print(f"  {name}.{key:36} not measured")
                drift += 1
                continue
            low, high = old["min"] * (1 - SLACK), old["max"] * (1 + SLACK)
            ok = low <= new["median"] <= high
            machine = key in ABSOLUTE or key.startswith("tools_list_ms") or key.endswith("_calls_per_s")
            verdict = "ok" if ok else ("machine" if machine else "DRIFT")
            if verdict == "DRIFT":
                drift += 1
            print(f"  {name}.{key:36} recorded {old['median']:.4g} ({old['min']:.4g}–{old['max']:.4g})"
                  f"  now {new['median']:.4g}  {verdict}")
    return drift


GOALS = [
    ("cold start ÷ `/bin/true`, default", "nandi", "cold_start_vs_true", "≤ 2.5×", "{:.2f}×"),
    ("cold start ÷ `/bin/true`, full/advanced", "nandi", "cold_start_full_vs_true", "≤ 2.5×", "{:.2f}×"),
    ("spawn → first listing ÷ `/bin/true`, default, TLS verify", "nandi",
     "first_listing_verify_default_vs_true", "≤ 2.5×", "{:.2f}×"),
    ("spawn → first listing ÷ `/bin/true`, full/advanced, TLS verify", "nandi",
     "first_listing_verify_full_vs_true", "≤ 2.5×", "{:.2f}×"),
    ("spawn → first listing ÷ `/bin/true`, full/advanced, CA file", "nandi",
     "first_listing_ca_file_full_vs_true", "≤ 2.5×", "{:.2f}×"),
    ("server CPU per sequential stdio call", "nandi", "cpu_ms_per_call", "≤ 0.10 ms", "{:.3f} ms"),
    ("MCP call latency ÷ plain HTTPS GET", "nandi", "call_vs_https_get", "≤ 1.3×", "{:.2f}×"),
    ("8 in flight over stdio", "nandi", "inflight_calls_per_s", "≥ 10,000 calls/s", "{:,.0f} calls/s"),
    ("HTTP CPU per request (4 sessions)", "nandi", "http_cpu_ms_per_request", "≤ 0.10 ms", "{:.3f} ms"),
    ("HTTP CPU per request (stateless)", "nandi", "http_stateless_cpu_ms_per_request", "≤ 0.10 ms", "{:.3f} ms"),
    ("RSS idle", "nandi", "rss_idle_mib", "≤ 8 MiB", "{:.1f} MiB"),
    ("RSS idle over HTTP with a bearer token", "nandi", "http_rss_idle_mib", "≤ 12 MiB", "{:.1f} MiB"),
    ("memory per open HTTP session", "nandi", "http_kib_per_session", "≤ 64 KiB", "{:.0f} KiB"),
]


def render(recorded):
    """The Markdown table docs/PERFORMANCE.md shows for a figures file."""
    previous = recorded["figures"].get("previous")
    lines = [f"Measured {recorded['date']}, `{recorded['command']}`, {recorded['runs']} interleaved runs, "
             f"{recorded['cpus']} CPUs, load average {recorded['load']}; median (min–max).", ""]
    if previous:
        lines += [f"| figure | goal | measured | {recorded.get('previous_label', 'previous')}, same runs |",
                  "|---|---|---|---|"]
    else:
        lines += ["| figure | goal | measured |", "|---|---|---|"]

    def cell(fig, fmt):
        if fig is None:
            return "—"
        return f"{fmt.format(fig['median'])} ({fmt.format(fig['min'])} – {fmt.format(fig['max'])})"

    for label, name, key, goal, fmt in GOALS:
        fig = recorded["figures"].get(name, {}).get(key)
        if fig is None:
            continue
        row = f"| {label} | {goal} | {cell(fig, fmt)} |"
        if previous:
            row += f" {cell(previous.get(key), fmt)} |"
        lines.append(row)
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--binary", required=True)
    parser.add_argument("--emulator", required=True, help="emulator launcher binary")
    parser.add_argument("--compare", action="append", default=[], help="another stdio MCP server command")
    parser.add_argument("--previous", help="an earlier build of this server, measured figure for figure "
                        "beside --binary (every figure, HTTP included), as `previous`")
    parser.add_argument("--previous-label", default="previous",
                        help="what the goal table calls --previous (e.g. its commit)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cold-rounds", type=int, default=15,
                        help="interleaved cold starts of each contender (and /bin/true) per run")
    parser.add_argument("--calls", type=int, default=2000, help="sequential calls per run")
    parser.add_argument("--inflight-calls", type=int, default=10000)
    parser.add_argument("--http-calls", type=int, default=4000)
    parser.add_argument("--tool", default="pve_list_nodes")
    parser.add_argument("--json", help="also write the raw samples here")
    parser.add_argument("--record", help="write the medians (with min/max, load, runs) to this figures file")
    parser.add_argument("--check", help="compare the medians with this figures file; exit 1 on drift")
    parser.add_argument("--render", help="print the Markdown table of this figures file and exit")
    args = parser.parse_args()
    if args.render:
        print(render(json.load(open(args.render))), end="")
        return

    ca_file = None
    emu_proc = subprocess.Popen([args.emulator], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
    try:
        emu = json.loads(emu_proc.stdout.readline())
        base_env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp"),
                    "RUST_LOG": os.environ.get("BENCH_RUST_LOG", "warn,nandi_proxmox_mcp=info")}
        base_env.update({k: v for k, v in emu.items() if k.startswith("PROXMOX_")})
        ca_file = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"bench-ca-{os.getpid()}.pem")
        with open(ca_file, "w") as f:
            f.write(emu["certificate_pem"])
        servers = [("nandi", [args.binary, "run"])]
        if args.previous:
            servers.append(("previous", [args.previous, "run"]))
        ours = {name: argv for name, argv in servers}  # builds of this server: every figure
        servers += [(f"compare{i + 1}", shlex.split(c)) for i, c in enumerate(args.compare)]
        samples = {name: {} for name, _ in servers}
        samples["baseline"] = {}

        def add(name, key, value):
            samples[name].setdefault(key, []).append(value)

        for run in range(args.runs):
            print(f"run {run + 1}/{args.runs}", file=sys.stderr, flush=True)
            full = dict(base_env, **SURFACES[-1][1])
            starts = {"true": true_start}
            for name, argv in servers:
                starts[name] = lambda argv=argv: cold_start(argv, base_env)
            for name, argv in ours.items():
                starts[f"{name} full"] = lambda argv=argv: cold_start(argv, full)
            # Spawn → first listing with certificate checks on: against the system store (the
            # default TLS mode, no pin) and against a CA file, default and full/advanced.
            verify = {k: v for k, v in base_env.items() if k != "PROXMOX_TLS_FINGERPRINT"}
            ca_env = dict(verify, PROXMOX_TLS_CA_FILE=ca_file)
            for name, argv in ours.items():
                for label, env in (("verify", verify), ("ca_file", ca_env)):
                    for surface, extra in (("default", {}), ("full", SURFACES[-1][1])):
                        starts[f"{name} list {label} {surface}"] = (
                            lambda argv=argv, env=dict(env, **extra): first_listing(argv, env))
            cold = {k: v * 1e3 for k, v in cold_start_rounds(starts, args.cold_rounds).items()}
            add("baseline", "true_ms", cold["true"])
            get_ms = https_get_latency(emu, "/nodes", 500) * 1e3
            add("baseline", "https_get_ms", get_ms)
            for name, argv in servers:  # interleaved: every server once per run
                add(name, "cold_start_ms", cold[name])
                add(name, "cold_start_vs_true", cold[name] / cold["true"])
                if name in ours:
                    add(name, "cold_start_full_ms", cold[f"{name} full"])
                    add(name, "cold_start_full_vs_true", cold[f"{name} full"] / cold["true"])
                    for label in ("verify", "ca_file"):
                        for surface in ("default", "full"):
                            add(name, f"first_listing_{label}_{surface}_vs_true",
                                cold[f"{name} list {label} {surface}"] / cold["true"])
                result = stdio_run(argv, base_env, args.tool, {}, args.calls, args.inflight_calls,
                                   emu_proc.pid)
                for key, value in result.items():
                    add(name, key, value)
                add(name, "call_vs_https_get", result["call_ms"] / get_ms)
                if name in ours:
                    for surface, extra in SURFACES:
                        size, ms = tools_list(argv, dict(base_env, **extra))
                        add(name, f"tools_list_bytes[{surface}]", size)
                        add(name, f"tools_list_ms[{surface}]", ms)
                    for stateless in (False, True):
                        http = http_run(argv[0], base_env, args.tool, {}, args.http_calls, 4, stateless)
                        for key, value in http.items():
                            add(name, key, value)
                else:
                    size, ms = tools_list(argv, base_env)
                    add(name, "tools_list_bytes[default]", size)
                    add(name, "tools_list_ms[default]", ms)

        load = open("/proc/loadavg").read().split()[:3]
        print(f"\nmedian (min–max) over {args.runs} interleaved runs; load average {' '.join(load)}; "
              f"{os.cpu_count()} CPUs; tool {args.tool}")
        for name in samples:
            print(f"\n[{name}]")
            for key, values in samples[name].items():
                print(f"  {key:38} {summary(values)}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(samples, f, indent=1)
        figures = {
            "command": " ".join(["scripts/bench"] + sys.argv[5:]),
            "date": time.strftime("%Y-%m-%d"),
            "load": " ".join(load),
            "cpus": os.cpu_count(),
            "runs": args.runs,
            "previous_label": args.previous_label,
            "figures": {name: {key: stats(values) for key, values in keys.items()}
                        for name, keys in samples.items()},
        }
        if args.record:
            with open(args.record, "w") as f:
                json.dump(figures, f, indent=1, sort_keys=True)
                f.write("\n")
        if args.check:
            drift = check(json.load(open(args.check)), figures)
            if drift:
                sys.exit(f"{drift} figure(s) of {args.check} did not reproduce")
    finally:
        emu_proc.stdin.close()
        emu_proc.wait(timeout=10)
        if ca_file and os.path.exists(ca_file):
            os.remove(ca_file)


if __name__ == "__main__":
    main()
