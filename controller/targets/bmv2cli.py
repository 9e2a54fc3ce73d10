"""BMv2's Thrift CLI (`simple_switch_CLI`), kept open: what P4Runtime cannot do on BMv2.

simple_switch_grpc answers register reads and writes with UNIMPLEMENTED ("Register reads
are not supported yet", PI's bmv2 back end), so the STF runner and the differential read and
write registers through the Thrift CLI. One CLI process serves a switch (it fetches the
switch's JSON once, about 0.8 s, when it starts): each command is a line on its stdin, its
answer everything printed before the next prompt.
"""

from __future__ import annotations

import os
import re
import select
import subprocess
import time

from .base import TargetError

PROMPT = b"RuntimeCmd: "
_ERROR = re.compile(r"^(Error|Invalid|\*\*\* Unknown syntax)", re.MULTILINE)


class Bmv2Cli:
    def __init__(self, thrift_port: int, exe: str | None = None, timeout_s: float = 30.0):
        self.timeout_s = timeout_s
        if exe is None:  # the toolchain's (PATH or ROCELAB_BMV2_PREFIX)
            from .toolchain import toolchain

            exe = str(toolchain().simple_switch_cli or "simple_switch_CLI")
        try:
            self.proc = subprocess.Popen(
                [exe, "--thrift-port", str(thrift_port)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=dict(os.environ, PYTHONUNBUFFERED="1"),
            )
        except OSError as e:
            raise TargetError(f"{exe}: {e}", "UNAVAILABLE") from None
        try:
            self._answer()
        except BaseException:
            self.close()
            raise

    def _answer(self) -> str:
        assert self.proc.stdout is not None
        buf = b""
        deadline = time.monotonic() + self.timeout_s
        while not buf.endswith(PROMPT):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                raise TargetError(
                    f"simple_switch_CLI: no answer in {self.timeout_s:.0f} s: "
                    f"{buf[-300:].decode(errors='replace')}",
                    "DEADLINE_EXCEEDED",
                )
            chunk = self.proc.stdout.read1(65536)
            if not chunk:
                raise TargetError(
                    f"simple_switch_CLI exited: {buf[-300:].decode(errors='replace')}",
                    "UNAVAILABLE",
                )
            buf += chunk
        return buf[: -len(PROMPT)].decode(errors="replace")

    def run(self, command: str) -> str:
        """The CLI's answer to one command; TargetError when it reports an error."""
        if "\n" in command:
            raise ValueError("one CLI command per call")
        assert self.proc.stdin is not None
        self.proc.stdin.write(command.encode() + b"\n")
        self.proc.stdin.flush()
        out = self._answer()
        if _ERROR.search(out):
            raise TargetError(f"simple_switch_CLI {command!r}: {out.strip()}", "INVALID_ARGUMENT")
        return out

    def register_read(self, name: str, index: int | None = None) -> list[int]:
        """One cell ([value]) or, without index, every cell of the register array."""
        out = self.run(f"register_read {name}" + ("" if index is None else f" {index}"))
        values = out.rsplit("=", 1)[-1]
        return [int(v) for v in values.replace(",", " ").split()]

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                if self.proc.stdin is not None:
                    self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
