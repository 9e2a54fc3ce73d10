"""Preloaded into each worker process of a sweep's LocalCluster (`distributed.worker.preload`).

A Ctrl-C at the terminal reaches every process of the foreground group. The sweep's own
process handles it (the journal keeps the points done, the cluster is closed); the workers
ignore it, or each would print asyncio's KeyboardInterrupt traceback while closing."""

from __future__ import annotations

import signal


def dask_setup(worker: object) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
