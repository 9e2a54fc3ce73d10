"""p4runtime-shell as a subprocess: the tests drive it one JSON line at a time.

p4runtime-shell 0.0.6 pins protobuf < 3.21 and the PyPI p4runtime 1.4.1 stubs, the project
runs protobuf >= 6 with finsy's stubs: the two cannot share a process. So the shell lives
in its own venv (the Makefile's .venv-p4rtshell) and this file is two things:
- run by that venv's python (`main`): a loop that reads one request per line on stdin
  ({"op": NAME, ...}), does it with p4runtime_sh and answers one line on stdout
  ({"ok": result} or {"error": message}). Only the fixed operations below exist: the
  requests name operations, they are never evaluated. Messages come back in protobuf
  text format (the test parses them with the project's own classes), bytes as hex.
- imported by the tests (`ShellClient`): starts that process and calls the operations
  (standard library only, so it imports in the project's venv).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
VENV_PYTHON = ROOT / ".venv-p4rtshell" / "bin" / "python"


def shell_python() -> Path | None:
    """The p4runtime-shell venv's interpreter ($P4RTSHELL_PYTHON overrides), None if absent."""
    path = Path(os.environ.get("P4RTSHELL_PYTHON", VENV_PYTHON))
    return path if path.is_file() and os.access(path, os.X_OK) else None


class ShellError(Exception):
    """An operation the shell refused (its exception text), e.g. a failed Write."""


class ShellClient:
    """One p4runtime-shell process; `call(op, **args)` returns the operation's result."""

    def __init__(self, python: Path, timeout_s: float = 30.0) -> None:
        self.timeout_s = timeout_s
        self.proc = subprocess.Popen(
            [str(python), __file__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def call(self, op: str, **args: Any) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"op": op, **args}) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], self.timeout_s)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            self.close()
            err = self.proc.stderr.read() if self.proc.stderr else ""
            raise RuntimeError(
                f"p4runtime-shell gave no answer to {op!r} within {self.timeout_s:g} s; "
                f"its stderr ends: {err[-2000:]}"
            )
        answer = json.loads(line)
        if "error" in answer:
            raise ShellError(answer["error"])
        return answer["ok"]

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()  # type: ignore[union-attr]
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


# ---------------------------------------------------------------- inside the shell's venv


def main() -> None:  # pragma: no cover (runs in the other venv)
    # answers go to the original stdout; anything the shell prints goes to stderr
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    from google.protobuf import text_format
    from p4.config.v1 import p4info_pb2
    from p4runtime_sh import shell as sh
    from p4runtime_sh.context import P4Type

    def text(msg: Any) -> str:
        return text_format.MessageToString(msg)

    def entry(a: dict) -> Any:
        te = (
            sh.TableEntry(a["table"])(action=a["action"])
            if a.get("action")
            else sh.TableEntry(a["table"])
        )
        for name, value in a.get("match", {}).items():
            te.match[name] = value
        for name, value in a.get("params", {}).items():
            te.action[name] = value
        if a.get("priority"):
            te.priority = a["priority"]
        return te

    def setup(a: dict) -> None:
        config = sh.FwdPipeConfig(a["p4info"], a["config"]) if a.get("config") else None
        sh.setup(
            device_id=a["device_id"],
            grpc_addr=a["grpc_addr"],
            election_id=tuple(a["election_id"]),
            config=config,
        )

    def set_p4info(a: dict) -> None:
        info = p4info_pb2.P4Info()
        text_format.Parse(Path(a["path"]).read_text(), info)
        sh.context.set_p4info(info)

    def te_msg(a: dict) -> dict:
        te = entry(a)
        return {
            "msg": text(te.msg()),
            "direct_counter": te._direct_counter is not None,
            "direct_meter": te._direct_meter is not None,
        }

    def read_counter(a: dict) -> list:
        ce = sh.CounterEntry(a["name"])
        ce.index = a["index"]
        return [[c.data.packet_count, c.data.byte_count] for c in ce.read()]

    def packet_out(a: dict) -> None:
        out = sh.PacketOut()
        out.payload = bytes.fromhex(a["payload"])
        for name, value in a["metadata"].items():
            out.metadata[name] = value
        out.send()

    def obj(a: dict) -> str | None:
        o = sh.context.get_obj(P4Type[a["type"]], a["name"])
        return None if o is None else text(o)

    def obj_by_id(a: dict) -> str | None:
        o = sh.context.get_obj_by_id(a["id"])
        return None if o is None else o.preamble.name

    def ap_member(a: dict) -> None:
        m = sh.ActionProfileMember(a["profile"])(member_id=a["member_id"], action=a["action"])
        for name, value in a.get("params", {}).items():
            m.action[name] = value
        m.insert()

    def ap_group(a: dict) -> None:
        g = sh.ActionProfileGroup(a["profile"])(group_id=a["group_id"])
        for mid in a["members"]:
            g.add(mid)
        g.insert()

    def indirect_entry(a: dict) -> None:
        te = sh.TableEntry(a["table"])
        for name, value in a.get("match", {}).items():
            te.match[name] = value
        if "group_id" in a:
            te.group_id = a["group_id"]
        else:
            te.member_id = a["member_id"]
        te.insert()

    ops = {
        "ap_member": ap_member,
        "ap_group": ap_group,
        "indirect_entry": indirect_entry,
        "read_members": lambda a: sorted(
            m.member_id for m in sh.ActionProfileMember(a["profile"]).read()
        ),
        "setup": setup,
        "teardown": lambda a: sh.teardown(),
        "set_p4info": set_p4info,
        "insert": lambda a: entry(a).insert(),
        "read_table": lambda a: [text(te.msg()) for te in sh.TableEntry(a["table"]).read()],
        "te_msg": te_msg,
        "read_counter": read_counter,
        "packet_out": packet_out,
        "sniff": lambda a: [text(m.packet) for m in sh.PacketIn().sniff(timeout=a["timeout"])],
        "obj": obj,
        "obj_by_id": obj_by_id,
        "table_id": lambda a: sh.context.get_table_id(a["name"]),
        "action_id": lambda a: sh.context.get_action_id(a["name"]),
        "mf_id": lambda a: sh.context.get_mf_id(a["table"], a["field"]),
        "param_id": lambda a: sh.context.get_param_id(a["action"], a["param"]),
    }
    for line in sys.stdin:
        request = json.loads(line)
        fn = ops.get(request.get("op"))
        try:
            if fn is None:
                raise ValueError(f"unknown operation {request.get('op')!r}")
            answer = {"ok": fn(request)}
        except Exception as exc:  # the test decides; the loop goes on
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
