"""The forwarding bench's sender: frames offered on an AF_PACKET socket at a paced rate.

The pacing loop is C (bench/sender.c, built here at first use with the C compiler p4sim's
compiled backend uses, cached in p4sim's cache directory keyed by a hash of the source and
compiler) and runs in a thread of its own: ctypes drops the GIL for the call, so the Python
thread beside it reads counters on schedule. One thread, sendmmsg(2) in batches of BATCH:
measured here at 1.3 us of its CPU per frame at 120k pps offered (veth's receive path on
the peer included), a ceiling near 750k pps on one core, several times what any switch here
forwards (the Python loop it replaces topped out near 60k pps, below p4sim's peak). Chosen
over several sender processes (on 2 cores one C thread leaves the other to the switch) and
over PACKET_TX_RING (more code; not measured: sendmmsg already leaves the sender far above
the switches' peaks). Each step's "sent" figure and the sender's CPU per frame show whether
it kept up.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

SOURCE = Path(__file__).with_name("sender.c")
BATCH = 64  # frames per sendmmsg


class SenderUnavailable(Exception):
    """No C compiler, or the sender did not build (one line)."""


class _Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class _Msghdr(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_void_p),
        ("namelen", ctypes.c_uint32),
        ("iov", ctypes.POINTER(_Iovec)),
        ("iovlen", ctypes.c_size_t),
        ("control", ctypes.c_void_p),
        ("controllen", ctypes.c_size_t),
        ("flags", ctypes.c_int),
    ]


class _Mmsghdr(ctypes.Structure):
    _fields_ = [("hdr", _Msghdr), ("len", ctypes.c_uint)]


class _Progress(ctypes.Structure):
    _fields_ = [
        ("sent", ctypes.c_uint64),
        ("refused", ctypes.c_uint64),
        ("cpu_ns", ctypes.c_uint64),
        ("stop", ctypes.c_int),
    ]


_lib: ctypes.CDLL | None = None


def load() -> ctypes.CDLL:
    """sender.c built (once per source and compiler, then from the cache) and loaded."""
    global _lib
    if _lib is not None:
        return _lib
    from p4sim.compiled.build import building, cache_dir

    cc = (os.environ.get("CC") or "cc").split()[0]
    if shutil.which(cc) is None:
        raise SenderUnavailable(f"no C compiler ({cc!r} not found)")
    source = SOURCE.read_text(encoding="utf-8")
    version = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout.splitlines()[
        :1
    ]
    key = hashlib.sha256("\0".join([source, cc, *version]).encode()).hexdigest()[:16]
    root = cache_dir()
    so = os.path.join(root, f"bench_sender_{key}.so")
    if not os.path.exists(so):
        with building(root, os.path.basename(so)):
            if not os.path.exists(so):
                with tempfile.TemporaryDirectory(dir=root, prefix=".build-") as tmp:
                    out = os.path.join(tmp, "sender.so")
                    r = subprocess.run(
                        [cc, "-O2", "-shared", "-fPIC", "-o", out, str(SOURCE)],
                        capture_output=True,
                        text=True,
                        timeout=300,
                    )
                    if r.returncode != 0:
                        last = (r.stderr.strip().splitlines() or ["(no output)"])[-1]
                        raise SenderUnavailable(f"building {SOURCE.name} failed: {last}")
                    os.replace(out, so)
    lib = ctypes.CDLL(so)
    lib.blast.argtypes = [
        ctypes.c_int,
        ctypes.POINTER(_Mmsghdr),
        ctypes.c_uint,
        ctypes.c_uint,
        ctypes.c_double,
        ctypes.c_double,
        ctypes.POINTER(_Progress),
    ]
    lib.blast.restype = ctypes.c_int
    _lib = lib
    return lib


class Sender:
    """`ring`'s frames, cycled, out of the packet socket `sock` at a paced rate."""

    def __init__(self, sock: socket.socket, ring: list[bytes]) -> None:
        self._lib = load()
        self.sock = sock
        n = len(ring) + BATCH  # a batch may start anywhere in the ring: no wrap inside a call
        self._bufs = [
            ctypes.create_string_buffer(ring[i % len(ring)], len(ring[i % len(ring)]))
            for i in range(n)
        ]
        self._iov = (_Iovec * n)(
            *[_Iovec(ctypes.cast(b, ctypes.c_void_p), len(b)) for b in self._bufs]
        )
        self._msgs = (_Mmsghdr * n)()
        for i in range(n):
            self._msgs[i].hdr.iov = ctypes.pointer(self._iov[i])
            self._msgs[i].hdr.iovlen = 1
        self.ring = len(ring)
        self._p = _Progress()

    @property
    def sent(self) -> int:
        """Frames the kernel took so far."""
        return self._p.sent

    @property
    def cpu_s(self) -> float:
        """CPU seconds the sending thread used so far."""
        return self._p.cpu_ns / 1e9

    def paced(self, rate: float, seconds: float, marks: dict[float, object] | None = None) -> float:
        """Offer `rate` frames/s for `seconds`; `marks`: {elapsed: callback} run on the way
        (in this thread, while the C loop sends). Returns the achieved rate."""
        result: list[int] = []
        base = self.sent
        worker = threading.Thread(
            target=lambda: result.append(
                self._lib.blast(
                    self.sock.fileno(),
                    self._msgs,
                    self.ring,
                    BATCH,
                    float(rate),
                    float(seconds),
                    ctypes.byref(self._p),
                )
            )
        )
        t0 = time.perf_counter()
        worker.start()
        try:
            for at, cb in sorted((marks or {}).items()):
                time.sleep(max(0.0, at - (time.perf_counter() - t0)))
                cb()  # type: ignore[operator]
            worker.join()
        except BaseException:
            self._p.stop = 1
            worker.join()
            self._p.stop = 0
            raise
        if result and result[0] < 0:
            raise OSError(-result[0], f"sendmmsg: {os.strerror(-result[0])}")
        return (self.sent - base) / (time.perf_counter() - t0)
