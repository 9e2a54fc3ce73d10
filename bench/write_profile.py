"""Write's in-process cost per update, for profiling (not a `make bench` section).

The bench's own requests (bench/p4runtime.py: 4,000 l2_fwd entries of roce_switch.p4 in
pre-serialized WriteRequests of 500, after `rocelab apply controller/examples/lab.yaml`)
go through the server's own Write handler as a front end calls it (request deserializer,
handler, response serializer), in this process, with no transport: what p4sim itself
costs per update, apart from gRPC. It prints the thread CPU per update; run under
callgrind, the collector is on only around the measured batches (a marker built with the
C compiler and valgrind/callgrind.h), so the instruction count divided by the updates
printed is the cost per update:

    P4SIM_PROFILE=fast valgrind --tool=callgrind --instr-atstart=no \\
        --collect-atstart=no --callgrind-out-file=/tmp/w.out .venv/bin/python -m bench.write_profile --only insert
    callgrind_annotate /tmp/w.out

(`--instr-atstart=no`: the setup, pushing the program and applying lab.yaml, runs
uninstrumented.) Another checkout's p4sim: run it from that checkout's directory.
"""

from __future__ import annotations

import argparse
import ctypes
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.p4runtime import BATCH, LAB_CONFIG, ROOT, Controller, Switch
from p4rtproto import p4runtime_pb2
from p4sim.server import P4RuntimeServer

_MARKER = """#include <valgrind/callgrind.h>
int cg_running(void) { return RUNNING_ON_VALGRIND; }
void cg_instrument(void) { CALLGRIND_START_INSTRUMENTATION; }
void cg_toggle(void) { CALLGRIND_TOGGLE_COLLECT; }
"""


def _marker() -> Any:
    """The callgrind marker library when this process runs under valgrind, else None."""
    out = Path(tempfile.mkdtemp(prefix="p4sim-cg-"))
    (out / "m.c").write_text(_MARKER)
    r = subprocess.run(
        ["cc", "-O1", "-shared", "-fPIC", "-o", str(out / "m.so"), str(out / "m.c")],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        print(
            f"write_profile: no callgrind marker ({r.stderr.strip()[-200:]}): thread CPU only",
            file=sys.stderr,
        )
        return None
    lib = ctypes.CDLL(str(out / "m.so"))
    return lib if lib.cg_running() else None


class _Context:
    """What Write uses of a gRPC context: an abort here is a failed profile."""

    def abort(self, code: Any, details: str) -> None:
        raise RuntimeError(f"Write answered {code}: {details}")

    def set_trailing_metadata(self, md: Any) -> None:
        pass


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(
        prog="python -m bench.write_profile", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument(
        "--slices", type=int, default=2, help="INSERT + DELETE of all the entries, this many times"
    )
    ap.add_argument(
        "--only",
        choices=["insert", "delete", "both"],
        default="both",
        help="which batches are measured",
    )
    args = ap.parse_args(argv)
    srv = P4RuntimeServer(device_id=0, cpu_port=255, freeze_gc=True, frontend="grpc")
    addr = f"127.0.0.1:{srv.start('127.0.0.1:0')}"
    try:
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "controller.cli",
                "apply",
                str(LAB_CONFIG),
                "--grpc-addr",
                addr,
                "--device-id",
                "0",
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=600,
        )
        if r.returncode != 0:
            raise SystemExit(f"rocelab apply failed: {r.stderr.strip()[-500:]}")
        c = Controller(Switch(addr, 0), 10)  # the primary, as in the bench
        ins, dels = (
            c.write_batches(p4runtime_pb2.Update.INSERT),
            c.write_batches(p4runtime_pb2.Update.DELETE),
        )
        details = type(
            "Details", (), {"method": "/p4.v1.P4Runtime/Write", "invocation_metadata": ()}
        )()
        h = srv._handlers().service(details)
        deser, handle, ser, ctx = (
            h.request_deserializer,
            h.unary_unary,
            h.response_serializer,
            _Context(),
        )

        def write(blobs: list[bytes]) -> None:
            for b in blobs:
                ser(handle(deser(b), ctx))

        for _ in range(2):  # shapes learned, builders bound
            write(ins)
            write(dels)
        cg = _marker()
        if cg is not None:
            cg.cg_instrument()
        n, cpu = 0, 0.0
        for _ in range(args.slices):
            for what, blobs in (("insert", ins), ("delete", dels)):
                measured = args.only in (what, "both")
                if measured and cg is not None:
                    cg.cg_toggle()
                t0 = time.thread_time()
                write(blobs)
                if measured:
                    cpu += time.thread_time() - t0
                    n += BATCH * len(blobs)
                    if cg is not None:
                        cg.cg_toggle()
        print(
            f"{n} updates measured ({args.only}): thread CPU {cpu / n * 1e6:.3f} us per update"
            + (" (under callgrind: instructions / updates)" if cg is not None else "")
        )
        c.close()
    finally:
        srv.stop(grace=0)


if __name__ == "__main__":
    main(sys.argv[1:])
