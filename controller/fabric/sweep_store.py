"""Where a sweep's rows live: a journal appended (and fsynced) one point at a time, so a
killed or interrupted sweep keeps what it computed, and the final CSV and Parquet files
written atomically (a temporary file in the same folder, fsync, os.replace), so a kill in the
middle of a write leaves the previous file or none, never half of one.

    point_key(scenario, params)  the identity of a point (the journal's and the dedupe's key)
    Journal(path)                load() -> {key: row}; reset(); append(key, row)
    atomic_write(path, fill)     fill(temporary path), then fsync and rename over `path`
    write_csv / write_parquet    the same typed table, each written atomically
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Callable
from pathlib import Path

JOURNAL = "sweep.journal.jsonl"


def point_key(scenario: str, params: dict) -> str:
    return json.dumps({"scenario": scenario, **params}, sort_keys=True, separators=(",", ":"))


class Journal:
    """One JSON line per computed point: {"key": point_key, "row": row}. A line is written
    with one write(2) and fsynced before the point counts as done; a torn last line (the
    process killed mid-append) is dropped on load and cut off before the next append."""

    def __init__(self, path: Path):
        self.path = path
        self._f = None

    def load(self) -> dict[str, dict]:
        """The rows of the journal by key, the first of each key (a point is kept once)."""
        rows: dict[str, dict] = {}
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return rows
        for line in data.split(b"\n"):
            try:
                entry = json.loads(line)
                key, row = entry["key"], entry["row"]
            except (ValueError, TypeError, KeyError):
                continue  # a torn or foreign line: that point is computed again
            if isinstance(key, str) and isinstance(row, dict):
                rows.setdefault(key, row)
        return rows

    def reset(self) -> None:
        """Start afresh (a sweep without --resume)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.close()
        self._f = open(self.path, "wb")  # noqa: SIM115 (kept open across appends)
        _fsync_dir(self.path.parent)

    def append(self, key: str, row: dict) -> None:
        if self._f is None:
            self._open_for_append()
        self._f.write(json.dumps({"key": key, "row": row}).encode() + b"\n")
        self._f.flush()
        os.fsync(self._f.fileno())

    def _open_for_append(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f = open(self.path, "ab+")  # noqa: SIM115
        size = self._f.seek(0, os.SEEK_END)
        if size:  # cut a torn last line, so the next line starts on its own
            self._f.seek(0)
            data = self._f.read()
            self._f.truncate(data.rfind(b"\n") + 1)
            self._f.seek(0, os.SEEK_END)

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, fill: Callable[[Path], None]) -> None:
    """`fill` writes the whole file at a temporary path beside `path`; once it is on disk
    (fsync) it replaces `path` in one rename, and the folder is fsynced so the rename lasts."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fill(tmp)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    _fsync_dir(path.parent)


def remove_stale_temporaries(folder: Path) -> None:
    """The temporary files of writers that were killed before their rename."""
    for name in ("sweep.csv", "sweep.parquet"):
        for tmp in folder.glob(f".{name}.*.tmp"):
            tmp.unlink(missing_ok=True)


def columns(rows: list[dict]) -> list[str]:
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    return keys


def normalise(rows: list[dict]) -> list[dict]:
    """One type per column, so the CSV and the Parquet file hold the same values: a column
    of ints and floats (a metric that is -1 when absent, a time otherwise) becomes floats;
    a missing cell is None."""
    keys = columns(rows)
    floats = {
        k
        for k in keys
        if any(isinstance(r.get(k), float) for r in rows)
        and all(
            isinstance(r.get(k), int | float | None) and not isinstance(r.get(k), bool)
            for r in rows
        )
    }
    return [
        {k: (float(r[k]) if k in floats and r.get(k) is not None else r.get(k)) for k in keys}
        for r in rows
    ]


def write_csv(rows: list[dict], path: Path) -> None:
    def fill(tmp: Path) -> None:
        with tmp.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=columns(rows))
            w.writeheader()
            w.writerows(rows)

    atomic_write(path, fill)


def write_parquet(rows: list[dict], path: Path) -> None:
    """The same table as write_csv, typed (int64, float64, string), through pyarrow."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    keys = columns(rows)
    table = pa.table({k: [r.get(k) for r in rows] for k in keys})
    atomic_write(path, lambda tmp: pq.write_table(table, tmp))
