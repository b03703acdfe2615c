"""The ``run_python`` sandbox: a pool of warm workers, each running calls in confined forked children.

What is guaranteed, and how (see ``_sandbox_worker.py`` for the child side):

- **Separate process** per call, forked from a warm worker that already imported numpy, math
  and statistics (a call costs a fork, not an interpreter start).
- **Limits:** wall clock (the process group is SIGKILLed), CPU seconds (RLIMIT_CPU), address
  space (RLIMIT_AS), processes (RLIMIT_NPROC, per sandbox uid), file size (RLIMIT_FSIZE, which
  also bounds output), open files, no core dumps; returned output is capped in characters.
- **No environment:** workers start with an empty environment under ``python -I``, so nothing
  of the parent's environment (API keys) is visible.
- **Fresh temp dir** per call as the working directory, deleted afterwards.
- **Filesystem:** Landlock (kernel ABI >= 1) allows writes only beneath that temp dir. As root,
  the child also runs as an unprivileged uid unique to the worker (``slot_uid``) that owns nothing else.
- **Network:** as root, workers run in a fresh network namespace (``unshare --net``: no interfaces
  but a down loopback); with Landlock ABI >= 4, TCP bind/connect is denied too, and ABI >= 6
  scopes abstract Unix sockets and signals. Unix sockets on the filesystem are governed by file
  permissions (the embedded PostgreSQL socket directory is private to its own user).

Where a mechanism is unavailable (not root, old kernel) the pool still runs and ``guarantees()``
says what is in force.
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

WORKER = Path(__file__).with_name("_sandbox_worker.py")
SLOT_UID_BASE = 1_000_000  # sandbox uids: unique per (owning process, slot), owned by nothing on disk


def slot_uid(slot: int) -> int:
    """A uid no other live pool uses: after each call the worker kills every process of its uid,
    so pools in different processes must never share one."""
    return SLOT_UID_BASE + (os.getpid() * 64 + slot) % 2_000_000_000


@dataclass(frozen=True)
class SandboxLimits:
    wall_s: float = 30.0  # the official harness's python_executor uses 30 s
    cpu_s: int = 30
    mem_mb: int = 2048
    max_chars: int = 20_000
    nproc: int = 16
    fsize_mb: int = 8


@dataclass(frozen=True)
class RunResult:
    output: str
    exit_code: int | None
    timed_out: bool
    signal: str | None
    truncated: bool
    output_bytes: int
    wall_s: float
    stderr: str = ""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def text(self, limits: SandboxLimits) -> str:
        """What the model sees: the output plus an explicit notice for anything abnormal."""
        merged = self.output + self.stderr
        parts = [merged.rstrip("\n")] if merged.strip() else []
        if self.truncated:
            parts.append(f"[output truncated: {self.output_bytes} bytes produced, showing the first {limits.max_chars} characters]")
        if self.timed_out:
            parts.append(f"[killed: wall-clock limit of {limits.wall_s:g} s exceeded]")
        elif self.signal == "SIGXCPU" or (self.signal == "SIGKILL" and self.exit_code is None):
            parts.append(f"[killed by {self.signal}: CPU limit of {limits.cpu_s} s or another resource limit exceeded]")
        elif self.signal == "SIGXFSZ":
            parts.append(f"[killed: file/output size limit of {limits.fsize_mb} MB exceeded]")
        elif self.signal:
            parts.append(f"[killed by {self.signal}]")
        elif self.exit_code not in (0, None):
            parts.append(f"[exit code {self.exit_code}]")
        if not parts:
            parts.append("(no output; use print() to show results)")
        return "\n".join(parts)


class _Worker:
    def __init__(self, slot: int, root: Path, use_netns: bool):
        self.slot = slot
        cmd = [sys.executable, "-I", str(WORKER), "--uid", str(slot_uid(slot)), "--root", str(root / f"w{slot}")]
        if use_netns:
            cmd = ["unshare", "--net", "--", *cmd]
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
               "MKL_NUM_THREADS": "1"}
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env, cwd="/", text=True, bufsize=1)
        hello = self.proc.stdout.readline()
        if not hello:
            raise RuntimeError(f"sandbox worker failed to start: {' '.join(cmd)}")
        self.info = json.loads(hello)

    def run(self, req: dict) -> dict:
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("sandbox worker died")
        return json.loads(line)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(5)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


def _netns_available() -> bool:
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return False
    try:
        return subprocess.run(["unshare", "--net", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class SandboxPool:
    """``size`` warm workers; ``run(code)`` blocks a thread (call it via ``asyncio.to_thread``)."""

    def __init__(self, size: int = 2, limits: SandboxLimits | None = None):
        self.limits = limits or SandboxLimits()
        self.root = Path(tempfile.mkdtemp(prefix="calcmate-sandbox-"))
        os.chmod(self.root, 0o711)
        self._netns = _netns_available()
        self._free: queue.Queue[_Worker] = queue.Queue()
        self._all: list[_Worker] = []
        self._lock = threading.Lock()
        self._closed = False
        for slot in range(size):
            w = _Worker(slot, self.root, self._netns)
            self._all.append(w)
            self._free.put(w)
        atexit.register(self.close)

    def guarantees(self) -> dict:
        info = self._all[0].info if self._all else {}
        return {
            "separate_process": True, "empty_environment": True, "fresh_tmpdir": True,
            "unprivileged_uid": info.get("uid") is not None, "network_namespace": bool(info.get("isolated_net")),
            "landlock_abi": info.get("landlock_abi", 0), "numpy": info.get("numpy", False),
        }

    def run(self, code: str, limits: SandboxLimits | None = None) -> RunResult:
        if self._closed:
            raise RuntimeError("sandbox pool is closed")
        lim = limits or self.limits
        req = {"code": code, "wall_s": lim.wall_s, "cpu_s": lim.cpu_s, "mem_mb": lim.mem_mb,
               "max_chars": lim.max_chars, "nproc": lim.nproc, "fsize_mb": lim.fsize_mb}
        w = self._free.get()
        try:
            try:
                reply = w.run(req)
            except (RuntimeError, OSError, ValueError):  # restart a dead worker once
                w.close()
                w = self._replace(w)
                reply = w.run(req)
        finally:
            self._free.put(w)
        if "error" in reply:
            raise RuntimeError("sandbox worker error: " + reply["error"])
        return RunResult(reply["output"], reply["exit_code"], reply["timed_out"], reply["signal"], reply["truncated"],
                         reply["output_bytes"], reply["wall_s"], reply.get("stderr", ""))

    def _replace(self, dead: _Worker) -> _Worker:
        with self._lock:
            w = _Worker(dead.slot, self.root, self._netns)
            self._all[self._all.index(dead)] = w
            return w

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for w in self._all:
            w.close()
        shutil.rmtree(self.root, ignore_errors=True)


_POOL: SandboxPool | None = None
_POOL_LOCK = threading.Lock()


def get_pool(size: int | None = None) -> SandboxPool:
    """The process-wide pool (``$CALCMATE_SANDBOX_WORKERS`` workers, default 2), started on first use."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL._closed:
            _POOL = SandboxPool(size or int(os.environ.get("CALCMATE_SANDBOX_WORKERS", "2")))
        return _POOL
