"""Building a `Program` (P4Info + device config) from what the user has.

- `from_p4(path)`: P4 source; p4sim compiles it here to derive the P4Info (the same
  P4Info the p4sim server derives), and the device config is p4sim's source bundle
  (through `controller.targets.p4sim`, the controller's one door into p4sim).
- `from_artifacts(p4info, bmv2_json)`: P4Info (text or binary) and a BMv2 JSON compiled
  elsewhere by p4c (for BMv2 simple_switch_grpc and hardware toolchains).
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


def from_p4(path: str | os.PathLike[str] = DEFAULT_PROGRAM) -> Program:
    from .p4sim import compile_program, p4info_and_device_config  # loads p4sim lazily

    src = Path(path)
    if not src.is_file():
        raise FileNotFoundError(f"P4 program {src} not found")
    compiled = compile_program(src)
    p4info, device_config = p4info_and_device_config(compiled, src)
    prog = Program(src.stem, p4info, device_config, src, "p4-source")
    prog.compiled = compiled  # type: ignore[attr-defined]  # reused by the in-process target
    return prog


def read_p4info(path: str | os.PathLike[str]) -> bytes:
    data = Path(path).read_bytes()
    msg = p4info_pb2.P4Info()
    try:
        text_format.Parse(data.decode("utf-8"), msg)
    except (UnicodeDecodeError, text_format.ParseError):
        msg.ParseFromString(data)
    return msg.SerializeToString()


def from_artifacts(p4info: str | os.PathLike[str], bmv2_json: str | os.PathLike[str]) -> Program:
    return Program(Path(bmv2_json).stem, read_p4info(p4info), Path(bmv2_json).read_bytes(),
                   None, "bmv2-json")
