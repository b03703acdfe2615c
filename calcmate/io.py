"""Atomic, resumable file output shared by every long-running stage.

Long jobs append one JSON line per finished unit (task, trajectory) and fsync it, so a crash
loses at most the unit in flight; whole files (reports, stats) are written via rename.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def atomic_write_text(path: str | Path, text: str) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_json(path: str | Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")


class JsonlAppender:
    """Append-only JSONL with per-record flush+fsync; ``done_keys`` tells a resuming job what to skip.

    A torn last line (crash mid-write) is dropped on open, so the file is always valid JSONL.
    """

    def __init__(self, path: str | Path, key: str):
        self.path, self.key = Path(path), key
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._repair()
        self._f = open(self.path, "a", encoding="utf-8")

    def _repair(self) -> None:
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            cut = data.rfind(b"\n") + 1
            self.path.write_bytes(data[:cut])

    def done_keys(self) -> set[Any]:
        keys: set[Any] = set()
        with open(self.path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    keys.add(json.loads(line).get(self.key))
        return keys

    def records(self) -> list[dict[str, Any]]:
        with open(self.path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]

    def append(self, record: dict[str, Any]) -> None:
        self._f.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())

    def extend(self, records: Iterable[dict[str, Any]]) -> None:
        for r in records:
            self.append(r)

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> "JsonlAppender":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
