"""Building a `Program` (P4Info + device config) from what the user has.

- `from_artifacts(p4info, bmv2_json)`: P4Info (text or binary) and a BMv2 JSON compiled
  elsewhere by p4c (for BMv2 simple_switch_grpc and hardware toolchains).

P4 source becomes a Program through a target kind that compiles it (`registry.from_p4`,
`TargetKind.compile_p4`): this module knows no kind, so the kinds can import it.
"""

from __future__ import annotations

import os
from pathlib import Path

from google.protobuf import text_format

from p4rtproto import p4info_pb2

from .base import Program


def _default_program() -> Path:
    # The source tree's program (editable installs, the repo, the Docker image); from a
    # wheel the program is not packaged: then ./p4src/roce_switch.p4 (or pass --program).
    here = Path(__file__).resolve().parents[2] / "p4src" / "roce_switch.p4"
    if here.is_file():
        return here
    cwd = Path.cwd() / "p4src" / "roce_switch.p4"
    return cwd if cwd.is_file() else here


DEFAULT_PROGRAM = _default_program()


def read_p4info(path: str | os.PathLike[str]) -> bytes:
    data = Path(path).read_bytes()
    msg = p4info_pb2.P4Info()
    try:
        text_format.Parse(data.decode("utf-8"), msg)
    except (UnicodeDecodeError, text_format.ParseError):
        msg.ParseFromString(data)
    return msg.SerializeToString()


def from_artifacts(p4info: str | os.PathLike[str], bmv2_json: str | os.PathLike[str]) -> Program:
    return Program(
        Path(bmv2_json).stem, read_p4info(p4info), Path(bmv2_json).read_bytes(), None, "bmv2-json"
    )
