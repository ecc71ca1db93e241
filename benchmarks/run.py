#!/usr/bin/env python3
"""Measure loopkit against a plain bash loop and print one markdown table.

    python benchmarks/run.py [--rounds 20] [--iterations 200] [--blocked-seconds 10] [--rows a,b]

Not part of the test suite. Standard library only, Linux only (it reads ``/proc``). Every
process it starts runs in its own session and is killed (SIGTERM, then SIGKILL, to each
process group of its tree) before the script exits. See ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import random
import select
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

BLOCKED = "BLOCKED.md"
SETTLE = 0.1  # seconds between "really waiting" and the unblock
BASH_POLL = 1.0  # the baseline's `sleep 1`
WAIT_TIMEOUT = 15.0  # any single wait in this script
CHECK_RUNS = 30
OVERHEAD_REPEATS = 3


class BenchError(Exception):
    """A clear, one-line reason the benchmark cannot go on."""


# --- processes ---------------------------------------------------------------------------

_started: list[subprocess.Popen[bytes]] = []


def spawn(argv: list[str], cwd: Path, log: Path | None = None) -> subprocess.Popen[bytes]:
    """Start ``argv`` in a new session (its own process group), remembered for cleanup."""
    out = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115 - closed below
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    finally:
        if log:
            out.close()  # type: ignore[union-attr]
    _started.append(proc)
    return proc


def _children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        kids.setdefault(int(fields[1]), []).append(int(entry))
    return kids


def descendants(pid: int) -> list[int]:
    kids, out, todo = _children_map(), [], [pid]
    while todo:
        for child in kids.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def stop(proc: subprocess.Popen[bytes], grace: float = 3.0) -> None:
    """SIGTERM the whole tree (every process group in it), then SIGKILL what is left."""
    tree = [proc.pid, *descendants(proc.pid)] if proc.poll() is None else []
    groups = {g for g in (_pgid(p) for p in tree) if g is not None and g != os.getpgid(0)}
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for group in groups:
            with contextlib.suppress(OSError):
                os.killpg(group, sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            proc.poll()
            if not any(_alive(p) for p in tree):
                break
            time.sleep(0.02)
        else:
            tree = [p for p in tree if _alive(p)]
            for pid in tree:  # stragglers that left their group
                if sig == signal.SIGKILL:
                    with contextlib.suppress(OSError):
                        os.kill(pid, sig)
            continue
        break
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace)


def stop_all() -> None:
    while _started:
        stop(_started.pop())


# --- small helpers -----------------------------------------------------------------------


def wait_for(what: str, cond: Callable[[], bool], timeout: float = WAIT_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise BenchError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.002)


def read_state(ws: Path) -> dict[str, object]:
    try:
        data = json.loads((ws / ".loopkit" / "state.json").read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


def find_loopkit() -> str:
    beside = Path(sys.executable).parent / "loopkit"
    exe = str(beside) if os.access(beside, os.X_OK) else shutil.which("loopkit")
    if not exe:
        raise BenchError(
            f"loopkit not found (neither {beside} nor on PATH); "
            "install it (pip install -e .) or run this with the venv's python"
        )
    try:
        probe = subprocess.run([exe, "--help"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BenchError(f"{exe} does not run: {exc}") from None
    if probe.returncode != 0:
        err = probe.stderr.decode(errors="replace").strip().splitlines()
        raise BenchError(f"{exe} --help exited {probe.returncode}: {err[-1] if err else ''}")
    return exe


def interpreter_of(exe: str) -> str:
    """The python a console script runs with (its shebang), else sys.executable."""
    with contextlib.suppress(OSError, UnicodeDecodeError):
        first = Path(exe).read_bytes()[:256].split(b"\n", 1)[0].decode()
        if first.startswith("#!"):
            parts = first[2:].split()
            if parts and "python" in Path(parts[0]).name and os.access(parts[0], os.X_OK):
                return parts[0]
    return sys.executable


def write_config(ws: Path, agent: str | list[str], verify: str | None = None) -> None:
    def toml(value: str | list[str]) -> str:
        if isinstance(value, str):
            return json.dumps(value)  # a JSON string is a valid TOML basic string
        return "[" + ", ".join(json.dumps(v) for v in value) + "]"

    lines = ["[loop]", f"agent = {toml(agent)}"]
    if verify is not None:
        lines.append(f"verify = {toml(verify)}")
    lines += ['pause = "0s"', 'iteration_timeout = "1m"', "[escalation]", 'channel = "none"']
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "loopkit.toml").write_text("\n".join(lines) + "\n")


class Fifo:
    """A FIFO held open read-write, so writers never block and EOF never fires."""

    def __init__(self, path: Path) -> None:
        os.mkfifo(path)
        self.path = path
        self.fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
        self.poll = select.poll()
        self.poll.register(self.fd, select.POLLIN)

    def drain(self) -> bytes:
        data = b""
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(self.fd, 65536):
                data += chunk
        return data

    def wait_line(self, timeout: float = WAIT_TIMEOUT) -> bytes:
        """Block until at least one whole line has arrived; return what was read."""
        deadline = time.monotonic() + timeout
        data = b""
        while not data.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0:
                raise BenchError(f"timed out after {timeout:.0f} s waiting for the agent to start")
            if self.poll.poll(left * 1000):
                data += self.drain()
        return data

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


# --- (a) unblock -> agent restarted ------------------------------------------------------


@dataclass
class Latency:
    rm: list[float]
    mv: list[float]


def _unblock(ws: Path, method: str, away: Path, n: int) -> None:
    if method == "rm":
        os.unlink(ws / BLOCKED)
    else:
        os.rename(ws / BLOCKED, away / f"{BLOCKED}.{n}")


def _lk_blocked(proc: subprocess.Popen[bytes], ws: Path, after_iteration: int) -> bool:
    """BLOCKED.md exists and state.json says blocked in an iteration after ``after_iteration``."""
    if proc.poll() is not None:
        raise BenchError(f"loopkit run exited {proc.returncode} (see {ws}.log)")
    st = read_state(ws)
    it = st.get("iteration")
    return (
        (ws / BLOCKED).exists()
        and st.get("status") == "blocked"
        and isinstance(it, int)
        and it > after_iteration
    )


def latency_loopkit(loopkit: str, root: Path, method: str, rounds: int) -> list[float]:
    ws, away = root / f"lat-lk-{method}", root / f"lat-lk-{method}-away"
    ws.mkdir()
    away.mkdir()
    fifo = Fifo(root / f"lat-lk-{method}.fifo")
    escalate = [
        loopkit,
        "-C",
        str(ws),
        "escalate",
        "--question",
        "Benchmark block?",
        "--context",
        "loopkit benchmark round",
        "--attempted",
        "nothing, this is a benchmark",
        "--choice",
        "Continue — the benchmark goes on",
    ]
    script = f"echo started > {shlex.quote(str(fifo.path))}; exec {shlex.join(escalate)}"
    write_config(ws, ["/bin/sh", "-c", script], verify="true")
    proc = spawn([loopkit, "-C", str(ws), "run"], ws, root / f"lat-lk-{method}.log")
    out: list[float] = []
    try:
        fifo.wait_line()  # the first iteration
        last_iteration = 0
        for n in range(rounds):
            wait_for("loopkit to be blocked", lambda i=last_iteration: _lk_blocked(proc, ws, i))
            last_iteration = int(read_state(ws)["iteration"])  # type: ignore[call-overload]
            time.sleep(SETTLE)
            if not _lk_blocked(proc, ws, last_iteration - 1):
                raise BenchError("loopkit left the blocked state by itself during the settle")
            fifo.drain()
            t0 = time.perf_counter()
            _unblock(ws, method, away, n)
            fifo.wait_line()
            out.append((time.perf_counter() - t0) * 1000)
    finally:
        stop(proc)
        fifo.close()
    return out


def latency_bash(root: Path, method: str, rounds: int, rng: random.Random) -> list[float]:
    ws, away = root / f"lat-sh-{method}", root / f"lat-sh-{method}-away"
    ws.mkdir()
    away.mkdir()
    fifo = Fifo(root / f"lat-sh-{method}.fifo")
    agent = f"echo started > {shlex.quote(str(fifo.path))}; echo blocked > {BLOCKED}"
    loop = (
        f"while :; do while [ -f {BLOCKED} ]; do sleep 1; done; "
        f"/bin/sh -c {shlex.quote(agent)}; done"
    )
    proc = spawn(["bash", "-c", loop], ws)
    out: list[float] = []
    try:
        fifo.wait_line()
        for n in range(rounds):
            wait_for("the bash loop to be blocked", lambda: (ws / BLOCKED).exists())
            # The baseline polls once a second: unblock at a random phase of that period
            # (otherwise the fixed settle would always hit the same point of its sleep).
            time.sleep(SETTLE + rng.uniform(0, BASH_POLL))
            fifo.drain()
            t0 = time.perf_counter()
            _unblock(ws, method, away, n)
            fifo.wait_line()
            out.append((time.perf_counter() - t0) * 1000)
    finally:
        stop(proc)
        fifo.close()
    return out


# --- (b) per-iteration overhead ----------------------------------------------------------


def _exited(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Wait for ``proc``'s exit, seen the moment it happens (a pidfd): ``Popen.wait(timeout)``
    polls in sleeps of up to 50 ms, which put (b)'s T0 and TN on a 50 ms grid — ±0.25 ms per
    iteration over 200."""
    fd = os.pidfd_open(proc.pid)
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


def _timed(argv: list[str], cwd: Path, timeout: float = 120.0) -> float:
    proc = spawn(argv, cwd)
    t0 = time.perf_counter()
    try:
        if not _exited(proc, timeout):
            raise BenchError(f"{shlex.join(argv)} took more than {timeout:.0f} s")
        elapsed = time.perf_counter() - t0
        code = proc.wait()
    finally:
        stop(proc)
        _started.remove(proc)
    if code != 0:
        raise BenchError(f"{shlex.join(argv)} exited {code}")
    return elapsed * 1000


# The agent of (b) writes a new file each iteration: an agent that breaks no new ground —
# changing nothing, or only a counter in the same file — is stuck (SPEC §19, §25) and loopkit
# would ask after 3 iterations. Both loops run it the same way.
PROGRESS_AGENT = 'echo "step $LOOPKIT_ITERATION" > "step-$LOOPKIT_ITERATION.txt"'


def overhead(loopkit: str, root: Path, iterations: int) -> dict[str, float]:
    lk: dict[int, list[float]] = {0: [], iterations: []}
    sh: dict[int, list[float]] = {0: [], iterations: []}
    for rep in range(OVERHEAD_REPEATS):
        for n in (0, iterations):
            ws = root / f"ovh-lk-{n}-{rep}"  # fresh workspace: no state carried over
            write_config(ws, PROGRESS_AGENT, verify="true")
            lk[n].append(_timed([loopkit, "-C", str(ws), "run", "--max-iterations", str(n)], ws))
            ws = root / f"ovh-sh-{n}-{rep}"
            ws.mkdir()
            loop = (
                f"for ((i=1;i<={n};i++)); do [ -f {BLOCKED} ] && exit 2; "
                f"LOOPKIT_ITERATION=$i sh -c {shlex.quote(PROGRESS_AGENT)}; sh -c true; "
                "done; exit 0"
            )
            sh[n].append(_timed(["bash", "-c", loop], ws))
    med = {k: statistics.median(v) for k, v in lk.items()}
    bmed = {k: statistics.median(v) for k, v in sh.items()}
    return {
        "lk_t0": med[0],
        "lk_tn": med[iterations],
        "lk_per": (med[iterations] - med[0]) / iterations,
        "sh_t0": bmed[0],
        "sh_tn": bmed[iterations],
        "sh_per": (bmed[iterations] - bmed[0]) / iterations,
    }


# --- (c)+(d) CPU and RSS while blocked ---------------------------------------------------

TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")


def tree_cpu_ms(pid: int) -> float:
    """utime+stime+cutime+cstime of ``pid`` and its live descendants (all their threads)."""
    total = 0
    for p in (pid, *descendants(pid)):
        with contextlib.suppress(OSError):
            stat = Path(f"/proc/{p}/stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            total += sum(int(f) for f in fields[11:15])  # fields 14-17 of proc(5)
    return total * TICK_MS


def tree_oncpu_ms(pid: int) -> float:
    """On-CPU time (ns resolution, /proc/*/task/*/schedstat) of the live threads of the tree."""
    total = 0
    for p in (pid, *descendants(pid)):
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{p}/task"):
                with contextlib.suppress(OSError, ValueError, IndexError):
                    total += int(Path(f"/proc/{p}/task/{task}/schedstat").read_text().split()[0])
    return total / 1e6


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise BenchError(f"no VmRSS for pid {pid}")


def blocked_cost(loopkit: str, root: Path, seconds: float) -> dict[str, float]:
    """Side by side for the same ``seconds``, each measured by its own pid: loopkit on a
    hand-written BLOCKED.md (no ``requests/`` folder yet), loopkit on one whose workspace
    already has ``requests/`` (as after any ``loopkit escalate``), and the bash loop."""
    ws = {k: root / f"idle-{k}" for k in ("lk", "lkreq", "sh")}
    for key, path in ws.items():
        if key == "sh":
            path.mkdir()
        else:
            write_config(path, "true", verify="true")
        (path / BLOCKED).write_text("# Blocked\n\nBenchmark: stay blocked.\n")
    (ws["lkreq"] / "requests").mkdir()
    procs = {
        k: spawn([loopkit, "-C", str(ws[k]), "run"], ws[k], root / f"idle-{k}.log")
        for k in ("lk", "lkreq")
    }
    procs["sh"] = spawn(["bash", "-c", f"while [ -f {BLOCKED} ]; do sleep 1; done"], ws["sh"])
    try:

        def blocked(key: str) -> bool:
            proc = procs[key]
            if proc.poll() is not None:
                raise BenchError(f"loopkit run exited {proc.returncode} (see {ws[key]}.log)")
            return read_state(ws[key]).get("status") == "blocked"

        for key in ("lk", "lkreq"):
            wait_for(f"loopkit ({key}) to report blocked", lambda k=key: blocked(k))
        time.sleep(SETTLE)
        before = {k: (tree_cpu_ms(p.pid), tree_oncpu_ms(p.pid)) for k, p in procs.items()}
        time.sleep(seconds)
        after = {k: (tree_cpu_ms(p.pid), tree_oncpu_ms(p.pid)) for k, p in procs.items()}
        if any(p.poll() is not None for p in procs.values()):
            raise BenchError("a blocked process exited during the CPU measurement")
        out: dict[str, float] = {}
        for k, proc in procs.items():
            out[f"{k}_cpu"] = after[k][0] - before[k][0]
            out[f"{k}_fine"] = after[k][1] - before[k][1]
            out[f"{k}_rss"] = rss_mb(proc.pid)
            out[f"{k}_threads"] = float(len(os.listdir(f"/proc/{proc.pid}/task")))
        return out
    finally:
        for proc in procs.values():
            stop(proc)


# --- (e) check start-up ------------------------------------------------------------------


def startup(loopkit: str, python: str, root: Path) -> dict[str, float]:
    ws = root / "check"
    ws.mkdir(parents=True, exist_ok=True)
    # The workspace a user has: the loopkit.toml `loopkit init` writes (it sets blocked_file).
    subprocess.run(
        [loopkit, "-C", str(ws), "init", "--agent", "true"],
        check=True,
        capture_output=True,
        timeout=30,
    )
    # What Claude Code hands the PreToolUse hook for an everyday call (no rule matches).
    call = json.dumps(
        {
            "session_id": "s",
            "cwd": str(ws),
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "pytest -q"},
        }
    ).encode()
    # Codex's PreToolUse and Gemini CLI's BeforeTool (JSON.stringify: no spaces) for the same.
    codex = json.dumps({**json.loads(call), "turn_id": "1", "model": "gpt-5-codex"}).encode()
    gemini = json.dumps(
        {**json.loads(call), "hook_event_name": "BeforeTool", "tool_name": "run_shell_command"},
        separators=(",", ":"),
    ).encode()
    # A call a gate rule holds (in a workspace of its own: its question raises a block):
    # under `loopkit run` with its question open (denied, waiting: the same answer each
    # time), and — where this loopkit has standing approvals (SPEC §30) — one that a rule of
    # .loopkit/allow.toml lets through.
    gws = root / "gate"
    gws.mkdir(parents=True, exist_ok=True)
    subprocess.run([loopkit, "-C", str(gws), "init", "--agent", "true"], check=True,
                   capture_output=True, timeout=30)  # fmt: skip
    gated = {**json.loads(call), "cwd": str(gws)}
    waiting = json.dumps({**gated, "tool_input": {"command": "git push --force"}}).encode()
    inputs = {"hook": call, "codex": codex, "gemini": gemini, "waiting": waiting}
    runs: dict[str, list[float]] = {"lk": [], "hook": [], "codex": [], "gemini": [], "py": [],
                                    "waiting": []}  # fmt: skip
    gates = [("waiting", [loopkit, "hook", "claude", "pretooluse"])]
    if (
        subprocess.run([loopkit, "rules", "--help"], capture_output=True, timeout=30).returncode
        == 0
    ):
        command = "rm -rf build"
        inputs["rule"] = json.dumps({**gated, "tool_input": {"command": command}}).encode()
        runs["rule"] = []
        gates.append(("rule", [loopkit, "hook", "claude", "pretooluse"]))
        sha = hashlib.sha256(command.encode()).hexdigest()
        (gws / ".loopkit").mkdir(exist_ok=True)
        (gws / ".loopkit" / "allow.toml").write_text(
            f'[[allow]]\nworkspace = "{gws.resolve()}"\nfolder = "."\ncommand = "{command}"\n'
            f'command_sha256 = "{sha}"\n'
        )
    # As installed: with bytecode caching (PYTHONDONTWRITEBYTECODE=1 would compile every
    # module at every start), warmed up once so the caches exist.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for _ in range(CHECK_RUNS + 1):  # interleaved, so drift hits all alike; the first warms
        for key, argv in (
            ("lk", [loopkit, "-C", str(ws), "check"]),
            ("hook", [loopkit, "hook", "claude", "pretooluse"]),
            ("codex", [loopkit, "hook", "codex", "pretooluse"]),
            ("gemini", [loopkit, "hook", "gemini", "beforetool"]),
            *gates,
            ("py", [python, "-c", "pass"]),
        ):
            stdin = inputs.get(key)
            run_env = {**env, "LOOPKIT_AGENT_SESSION": "bench"} if key == "waiting" else env
            here = gws if key in ("waiting", "rule") else ws
            t0 = time.perf_counter()
            done = subprocess.run(
                argv, cwd=here, capture_output=True, timeout=30, input=stdin, env=run_env
            )
            runs[key].append((time.perf_counter() - t0) * 1000)
            if done.returncode != 0:
                raise BenchError(f"{shlex.join(argv)} exited {done.returncode}")
    return {k: statistics.median(v[1:]) for k, v in runs.items()}


# --- report ------------------------------------------------------------------------------


def verdict(value: float, target: float, must: float | None = None) -> str:
    if value <= target:
        return "pass"
    if must is not None and value <= must:
        return f"miss target, within must (≤ {must:g})"
    return "**MISS**"


def machine() -> Iterator[str]:
    yield f"- machine: {platform.platform()} ({platform.machine()})"
    yield f"- python: {platform.python_implementation()} {platform.python_version()}"
    yield f"- cpus: {os.cpu_count()} (usable: {len(os.sched_getaffinity(0))})"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                yield f"- cpu: {line.split(':', 1)[1].strip()}"
                break


ROWS = ("a", "b", "c", "e", "g")  # (c) brings (d), (e) brings (f): each pair is one run


def parse_rows(text: str) -> set[str]:
    """``--rows a,b``: the rows to run; (d) is measured with (c), (f) with (e)."""
    alias = {"d": "c", "f": "e"}
    picked = {alias.get(w.strip(), w.strip()) for w in text.lower().split(",") if w.strip()}
    unknown = picked - set(ROWS)
    if unknown or not picked:
        raise argparse.ArgumentTypeError(
            f"unknown row(s) {', '.join(sorted(unknown)) or '(none given)'}: "
            "pick from a,b,c,d,e,f,g"
        )
    return picked


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20, help="unblock rounds per method (≥ 1)")
    ap.add_argument("--iterations", type=int, default=200, help="iterations for the overhead")
    ap.add_argument("--blocked-seconds", type=float, default=10.0, help="idle CPU window")
    ap.add_argument("--keep", action="store_true", help="keep the temporary workspaces")
    ap.add_argument("--startup-runs", type=int, default=30, help="runs per everyday command")
    ap.add_argument("--only-unblock", action="store_true", help="run only row (a), loopkit's side")
    ap.add_argument(
        "--rows",
        type=parse_rows,
        default=set(ROWS),
        help="the rows to run, e.g. a,b (default: all; d comes with c, f with e)",
    )
    args = ap.parse_args()
    if args.rounds < 1 or args.iterations < 1 or args.blocked_seconds <= 0:
        ap.error("--rounds and --iterations must be ≥ 1, --blocked-seconds > 0")
    if not Path("/proc/self/stat").exists():
        raise BenchError("this benchmark needs Linux /proc")
    if not shutil.which("bash"):
        raise BenchError("bash not found on PATH (needed for the baseline)")

    rows_wanted: set[str] = {"a"} if args.only_unblock else args.rows
    loopkit = find_loopkit()
    python = interpreter_of(loopkit)
    wall0 = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix="loopkit-bench-"))
    os.environ["LOOPKIT_HOME"] = str(root / "loopkit-home")  # not the user's registry
    rng = random.Random(20240601)
    lat_lk = lat_sh = None
    ovh = idle = st = None
    everyday_py, everyday = 0.0, {}
    try:
        print(f"running in {root} …", file=sys.stderr)
        if "a" in rows_wanted:
            lat_lk = Latency(
                latency_loopkit(loopkit, root, "rm", args.rounds),
                latency_loopkit(loopkit, root, "mv", args.rounds),
            )
            print("  (a) loopkit done", file=sys.stderr)
            if args.only_unblock:
                for label, lk in (
                    ("rm BLOCKED.md", lat_lk.rm),
                    ("mv out of the folder", lat_lk.mv),
                ):
                    p50, p95 = pct(lk, 50), pct(lk, 95)
                    print(
                        f"(a) unblock → agent restarted, {label}: p50 {p50:.1f} ms, "
                        f"p95 {p95:.1f} ms — {verdict(p50, 15)} / {verdict(p95, 30)}"
                    )
                return 0
            lat_sh = Latency(
                latency_bash(root, "rm", args.rounds, rng),
                latency_bash(root, "mv", args.rounds, rng),
            )
            print("  (a) bash done", file=sys.stderr)
        if "b" in rows_wanted:
            ovh = overhead(loopkit, root, args.iterations)
            print("  (b) done", file=sys.stderr)
        if "c" in rows_wanted:
            idle = blocked_cost(loopkit, root, args.blocked_seconds)
            print("  (c)(d) done", file=sys.stderr)
        if "e" in rows_wanted:
            st = startup(loopkit, python, root)
            print("  (e)(f) done", file=sys.stderr)
        if "g" in rows_wanted:
            from startup import measure  # startup.py imports this module: not at the top

            everyday_py, found = measure([("loopkit", loopkit)], python, args.startup_runs)
            everyday = found["loopkit"]
            print("  (g) done", file=sys.stderr)
    finally:
        stop_all()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    wall = time.perf_counter() - wall0

    ms = "{:.1f} ms".format
    n_it, secs = args.iterations, args.blocked_seconds
    rows: list[tuple[str, str, str, str, str]] = []
    add = rows.append
    if lat_lk is not None and lat_sh is not None:
        for label, lk, sh in (
            ("`rm BLOCKED.md`", lat_lk.rm, lat_sh.rm),
            ("`mv` out of the folder", lat_lk.mv, lat_sh.mv),
        ):
            p50, p95 = pct(lk, 50), pct(lk, 95)
            metric = f"(a) unblock → agent restarted, {label}"
            add((f"{metric}, p50", ms(p50), ms(pct(sh, 50)), "≤ 15 ms (SPEC §20)",
                 verdict(p50, 15)))  # fmt: skip
            add((f"{metric}, p95", ms(p95), ms(pct(sh, 95)), "≤ 30 ms (SPEC §20)",
                 verdict(p95, 30)))  # fmt: skip
    if ovh is not None:
        ratio = ovh["lk_per"] / ovh["sh_per"] if ovh["sh_per"] > 0 else float("inf")
        add(
            (
                f"(b) per-iteration overhead, (T{n_it} − T0)/{n_it}",
                ms(ovh["lk_per"]),
                ms(ovh["sh_per"]),
                "—",
                "—",
            )
        )
        add(
            (
                "(b) per-iteration ratio loopkit / bash",
                f"{ratio:.2f}×",
                "1.00×",
                "≤ 1.3× (SPEC §20)",
                verdict(ratio, 1.3),
            )
        )
        add(
            (
                f"(b) T0 (`--max-iterations 0`) / T{n_it}",
                f"{ovh['lk_t0']:.0f} / {ovh['lk_tn']:.0f} ms",
                f"{ovh['sh_t0']:.0f} / {ovh['sh_tn']:.0f} ms",
                "—",
                "—",
            )
        )
    if idle is not None:
        cpu_target = 20 * args.blocked_seconds / 10
        for key, what in (("lk", "hand-written BLOCKED.md"), ("lkreq", "`requests/` exists")):
            add(
                (
                    f"(c) CPU while blocked {secs:g} s, {what} (tick {TICK_MS:g} ms)",
                    f"{ms(idle[f'{key}_cpu'])} (schedstat {idle[f'{key}_fine']:.1f} ms)",
                    ms(idle["sh_cpu"]),
                    f"≤ {cpu_target:g} ms",
                    verdict(idle[f"{key}_cpu"], cpu_target),
                )
            )
        add(
            (
                "(d) RSS while blocked (VmRSS)",
                f"{idle['lk_rss']:.1f} MB ({idle['lk_threads']:.0f} threads)",
                f"{idle['sh_rss']:.1f} MB",
                "≤ 40 MB",
                verdict(idle["lk_rss"], 40),
            )
        )
    if st is not None:
        add(
            (
                f"(e) `loopkit check` vs `python -c pass`, median of {CHECK_RUNS}",
                ms(st["lk"]),
                ms(st["py"]),
                "≤ 1.5× `python -c pass`",
                f"{st['lk'] / st['py']:.2f}× — " + verdict(st["lk"] / st["py"], 1.5),
            )
        )
        add(
            (
                f"(f) `loopkit hook claude pretooluse`, no rule matches, vs `python -c pass`, "
                f"median of {CHECK_RUNS}",
                ms(st["hook"]),
                ms(st["py"]),
                "≤ 2× `python -c pass`",
                f"{st['hook'] / st['py']:.2f}× — " + verdict(st["hook"] / st["py"], 2.0),
            )
        )
        for key, what in (
            ("waiting", "a gated call under `loopkit run`, its question open (deny)"),
            ("rule", "a gated call a standing rule lets through (SPEC §30)"),
        ):
            if key in st:
                add(
                    (
                        f"(f) `loopkit hook claude pretooluse`, {what}, median of {CHECK_RUNS}",
                        ms(st[key]),
                        ms(st["py"]),
                        "—",
                        f"{st[key] / st['py']:.2f}×",
                    )
                )
        for key, words in (
            ("codex", "hook codex pretooluse"),
            ("gemini", "hook gemini beforetool"),
        ):
            add(
                (
                    f"(f) `loopkit {words}`, no rule matches, vs `python -c pass`, "
                    f"median of {CHECK_RUNS}",
                    ms(st[key]),
                    ms(st["py"]),
                    "≤ 2× `python -c pass`",
                    f"{st[key] / st['py']:.2f}× — " + verdict(st[key] / st["py"], 2.0),
                )
            )
    for command, took in everyday.items():
        add(
            (
                f"(g) `loopkit {command}` start-up vs `python -c pass`, median of "
                f"{args.startup_runs}",
                ms(took),
                ms(everyday_py),
                "≤ 4× `python -c pass`",
                f"{took / everyday_py:.2f}× — " + verdict(took / everyday_py, 4.0),
            )
        )

    print("## loopkit benchmark\n")
    for line in machine():
        print(line)
    print(f"- loopkit: {loopkit} (python {python})")
    with contextlib.suppress(OSError):
        print(
            f"- load average at the end: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}"
        )
    print(
        f"- rows {','.join(sorted(rows_wanted))}; rounds {args.rounds} per unblock method, "
        f"{args.iterations} iterations × {OVERHEAD_REPEATS} repeats (median), "
        f"{args.blocked_seconds:g} s blocked; wall time {wall:.1f} s\n"
    )
    print("| metric | loopkit | baseline (bash, same run) | target | verdict |")
    print("|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    if lat_lk is not None:
        print(
            f"\nBaseline (a): `while :; do while [ -f BLOCKED.md ]; do sleep 1; done; <agent>; "
            f"done`, unblocked {SETTLE * 1000:.0f} ms + U(0, 1 s) after it blocked, so it is "
            f"sampled over its whole poll period; loopkit is unblocked {SETTLE * 1000:.0f} ms "
            "after BLOCKED.md exists and state.json says blocked."
        )
    return 0


def _on_sigterm(signum: int, _frame: object) -> None:
    print("benchmark: terminated; cleaning up", file=sys.stderr)
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        sys.exit(main())
    except BenchError as exc:
        print(f"benchmark: {exc}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        print("benchmark: interrupted", file=sys.stderr)
        sys.exit(130)
    finally:
        stop_all()
