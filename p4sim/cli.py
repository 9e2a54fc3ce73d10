"""`p4sim` command line: run STF tests, show compiler stages, write P4Info.

    p4sim stf PROGRAM.p4 TEST.stf [-I DIR]
    p4sim compile --emit ir|python PROGRAM.p4 [-I DIR]
    p4sim p4info PROGRAM.p4 [-o FILE] [--format text|binary|json] [-I DIR]

Exit codes: 0 ok, 1 failed check (STF mismatch, P4 error), 2 bad usage.
Errors go to stderr on one line (file:line:column: error: reason).
"""

from __future__ import annotations

import argparse
import sys

from p4sim.frontend.errors import P4SourceError


def _load(args):
    from p4sim.lower import load_program

    return load_program(args.program, include_dirs=args.include)


def cmd_stf(args) -> int:
    from p4sim.runtime.switch import Switch
    from p4sim.stf import StfError, StfRunner

    prog = _load(args)
    sw = Switch(prog, cpu_port=args.cpu_port)
    try:
        with open(args.stf, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        print(f"p4sim: {e}", file=sys.stderr)
        return 2
    try:
        res = StfRunner(sw, args.stf).run_text(text)
    except StfError as e:
        print(f"{e}", file=sys.stderr)
        return 2
    print(res.report())
    return 0 if res.ok else 1


def cmd_compile(args) -> int:
    if args.emit == "python":
        prog = _load(args)
        sys.stdout.write(prog.python)
        return 0
    import os

    from p4sim.frontend import parse_program
    from p4sim.lower import ARCH_DIR

    prog_ast = parse_program(args.program, include_dirs=list(args.include) + [
        os.path.dirname(os.path.abspath(args.program)), ARCH_DIR])
    from p4sim.frontend.ast import dump

    sys.stdout.write(dump(prog_ast).rstrip("\n") + "\n")
    return 0


def cmd_p4info(args) -> int:
    from p4sim.p4info import p4info_from_model

    prog = _load(args)
    info = p4info_from_model(prog.model)
    fmt = args.format
    if fmt == "binary":
        data: bytes = info.SerializeToString()
    elif fmt == "json":
        from google.protobuf import json_format

        data = json_format.MessageToJson(info).encode()
    else:
        from google.protobuf import text_format

        data = text_format.MessageToString(info).encode()
    if args.output:
        with open(args.output, "wb") as f:
            f.write(data)
    else:
        sys.stdout.buffer.write(data)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="p4sim", description="p4sim: a pure-Python P4_16 v1model target")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("stf", help="run an STF test against a program")
    s.add_argument("program")
    s.add_argument("stf")
    s.add_argument("--cpu-port", type=int, default=None)
    c = sub.add_parser("compile", help="show a compiler stage")
    c.add_argument("program")
    c.add_argument("--emit", choices=("ir", "python"), default="python")
    i = sub.add_parser("p4info", help="write the program's P4Info")
    i.add_argument("program")
    i.add_argument("-o", "--output")
    i.add_argument("--format", choices=("text", "binary", "json"), default="text")
    for p in (s, c, i):
        p.add_argument("-I", "--include", action="append", default=[], metavar="DIR")
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0) and 2
    try:
        return {"stf": cmd_stf, "compile": cmd_compile, "p4info": cmd_p4info}[args.cmd](args)
    except P4SourceError as e:
        print(e.headline(), file=sys.stderr)
        return 1
    except FileNotFoundError as e:
        print(f"p4sim: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
