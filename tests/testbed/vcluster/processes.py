"""Ports, the processes this CLI starts (recorded by PID and start time), and waiting."""
from __future__ import annotations

import contextlib
import http.client
import os
import random
import shlex
import signal
import socket
import ssl
import subprocess
import time
import urllib.parse

from .common import die, log
from .state import State


def free_port(taken=()) -> int:
    """A free loopback port BELOW the kernel's ephemeral range, so that no outgoing connection
    (our own clients talk to the apiserver a lot) can take it between now and the bind; never one
    of ``taken`` (the ports already given to this cluster's other components)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    lo, hi = (10000, low - 1) if low > 12000 else (low, 65535)
    for _ in range(200):
        port = random.randint(lo, hi)
        if port in taken:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    die("no free loopback port found")


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # like Go's listeners: connections of a killed server in TIME_WAIT do not make the port
        # "taken" (a restarted component keeps its port, so running clients reconnect)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def _stat_fields(pid: int):
    """The fields of /proc/PID/stat after the command name (state first), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def proc_state(pid: int) -> str:
    """The state letter of /proc/PID/stat (R, S, T = stopped, Z, ...), "" when there is none."""
    fields = _stat_fields(pid)
    return fields[0] if fields else ""


def proc_start_time(pid: int):
    fields = _stat_fields(pid)
    return fields[19] if fields else None


def alive(rec) -> bool:
    """Whether the process of this record still runs (same PID AND start time, not a zombie)."""
    if not rec:
        return False
    fields = _stat_fields(rec["pid"])
    return bool(fields) and fields[19] == rec.get("start_time") and fields[0] != "Z"


def start_process(st: State, comp: str, argv: list, env=None, cwd=None) -> None:
    logf = st.path("logs", f"{comp}.log")
    os.makedirs(os.path.dirname(logf), exist_ok=True)
    e = dict(os.environ)
    e.pop("KUBECONFIG", None)
    e.update(env or {})
    with open(logf, "ab") as out:
        out.write(f"\n==== {time.strftime('%F %T')} {shlex.join(argv)}\n".encode())
        out.flush()
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             env=e, cwd=cwd, start_new_session=True)
    # argv, the extra env and cwd are recorded so that ``testbed chaos start`` can start the
    # component again exactly as ``up`` did (vcluster/chaos.py)
    st.data.setdefault("procs", {})[comp] = {
        "pid": p.pid, "start_time": proc_start_time(p.pid), "argv": argv, "log": logf,
        "env": dict(env or {}), "cwd": cwd,
    }
    with open(st.path(f"{comp}.pid"), "w") as f:
        f.write(f"{p.pid}\n")
    st.save()


def stop_process(st: State, comp: str, timeout: float = 15.0) -> None:
    rec = st.proc(comp)
    if rec and alive(rec):
        pid = rec["pid"]
        try:
            os.kill(pid, signal.SIGCONT)  # a process frozen by ``testbed chaos freeze`` cannot stop
            os.killpg(pid, signal.SIGTERM)  # the process group we created (start_new_session)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and alive(rec):
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            time.sleep(0.1)
        if alive(rec):
            log(f"{comp} (pid {pid}) did not stop in {timeout:.0f}s, sending SIGKILL")
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            time.sleep(0.2)
        log(f"stopped {comp} (pid {pid})")
    st.data.get("procs", {}).pop(comp, None)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(st.path(f"{comp}.pid"))
    st.save()


def tail(path: str, n: int = 25) -> str:
    try:
        with open(path, "rb") as f:
            return b"".join(f.readlines()[-n:]).decode(errors="replace")
    except OSError:
        return ""


def run(cmd: list, **kw) -> str:
    """stdout of ``cmd``; on failure ``die`` with its output."""
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        die(f"{shlex.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r.stdout


def wait_for(what: str, fn, timeout: float, interval: float = 0.25, procs=()):
    """Poll ``fn`` until it returns a true value (returned); ``die`` on timeout, or as soon as one
    of ``procs`` ((State, component) pairs) has exited, with the tail of its log."""
    deadline = time.monotonic() + timeout
    last_err = None
    while time.monotonic() < deadline:
        try:
            v = fn()
            if v:
                return v
        except Exception as e:  # noqa: BLE001 - report the last one on timeout
            last_err = e
        for st, comp in procs:
            rec = st.proc(comp)
            if rec and not alive(rec):
                die(f"{comp} exited while waiting for {what}; last log lines of {rec['log']}:\n"
                    f"{tail(rec['log'])}")
        time.sleep(interval)
    die(f"timed out after {timeout:.0f}s waiting for {what}" + (f" (last error: {last_err})" if last_err else ""))


def http_ok(url: str, ctx=None) -> bool:
    u = urllib.parse.urlparse(url)
    cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
    kw = {"context": ctx} if u.scheme == "https" else {}
    c = cls(u.hostname, u.port, timeout=2, **kw)
    try:
        c.request("GET", u.path or "/")
        r = c.getresponse()
        r.read()
        return r.status == 200
    finally:
        c.close()


def insecure_ctx():
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx
