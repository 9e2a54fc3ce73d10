"""One closing line for `make test`, which runs pytest twice (the p4sim run, then the BMv2
tier with --target bmv2): each run writes its counts (ROCELAB_PYTEST_SUMMARY=FILE, see
plugin.pytest_terminal_summary); this adds them up and prints pytest's own closing-line
format, so whoever reads the last line of the log reads the whole picture.

    python -m controller.testing.summary build/pytest/*.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# pytest's order and words (_pytest/terminal.py, KNOWN_TYPES and build_summary_stats_line)
ORDER = ("failed", "passed", "skipped", "deselected", "xfailed", "xpassed", "error")


def counts_line(counts: dict[str, int], seconds: float) -> str:
    parts = []
    for key in ORDER:
        n = counts.get(key, 0)
        if n:
            parts.append(f"{n} {'errors' if key == 'error' and n > 1 else key}")
    return f"{', '.join(parts) or 'no tests ran'} in {seconds:.2f}s"


def main(argv: list[str]) -> int:
    runs = []
    for path in argv:
        try:
            runs.append((Path(path).stem, json.loads(Path(path).read_text())))
        except (OSError, ValueError) as e:
            print(f"summary: {path}: {e}", file=sys.stderr)
            return 2
    if not runs:
        print("summary: no pytest run wrote its counts", file=sys.stderr)
        return 2
    total = {k: sum(r["counts"].get(k, 0) for _, r in runs) for k in ORDER}
    seconds = sum(r["seconds"] for _, r in runs)
    if len(runs) > 1:
        print(
            "make test: "
            + "; ".join(f"{name}: {counts_line(r['counts'], r['seconds'])}" for name, r in runs)
        )
    print(f" {counts_line(total, seconds)} ".center(80, "="))
    return 1 if total["failed"] or total["error"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
