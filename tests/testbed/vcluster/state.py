"""The per-cluster state directory: state.json (ports, processes, paths) and its lock."""
from __future__ import annotations

import contextlib
import fcntl
import json
import os

from .common import RUN_ROOT


class State:
    def __init__(self, name: str):
        self.name = name
        self.dir = os.path.join(RUN_ROOT, name)
        self.file = os.path.join(self.dir, "state.json")
        self.data: dict = {}
        if os.path.exists(self.file):
            with open(self.file) as f:
                self.data = json.load(f)

    def path(self, *p: str) -> str:
        return os.path.join(self.dir, *p)

    def proc(self, comp: str):
        """The process record of ``comp`` (pid, start_time, argv, log), or None."""
        return (self.data.get("procs") or {}).get(comp)

    def save(self) -> None:
        tmp = self.file + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.data, f, indent=2, sort_keys=True)
        os.replace(tmp, self.file)

    @contextlib.contextmanager
    def lock(self):
        os.makedirs(self.dir, exist_ok=True)
        with open(os.path.join(RUN_ROOT, f".{self.name}.lock"), "w") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)
