"""`p4sim` command line: run STF tests, show compiler stages, write P4Info.

    p4sim stf PROGRAM.p4 TEST.stf [--strict] [-I DIR]
    p4sim compile --emit ast|ir|python PROGRAM.p4 [-I DIR]
    p4sim p4info PROGRAM.p4 [-o FILE] [--format text|binary|json] [-I DIR]

Exit codes: 0 ok, 1 failed check (STF mismatch, P4 error), 2 bad usage.
Errors go to stderr on one line (file:line:column: error: reason).
"""

from __future__ import annotations

import argparse
import sys

from p4sim import cliargs, profile
from p4sim.frontend.errors import P4SourceError
from p4sim.profile import SettingError


def _load(args):
    from p4sim.runtime.instance import load_program  # lowering + what the runtime checks

    compiled = load_program(args.program, include_dirs=args.include)
    _print_warnings(compiled.program.warnings)
    return compiled


def _print_warnings(warnings: list[str]) -> None:
    # #warning lines and deprecated forms: shown, never fatal (as p4c does)
    for w in warnings:
        print(w, file=sys.stderr)


def cmd_stf(args) -> int:
    from p4sim.runtime.switch import Switch
    from p4sim.stf import StfError, StfRunner

    text = cliargs.read_text_input(args.stf, MAX_STF_BYTES)  # InputError: one line in main
    prog = _load(args)
    sw = Switch(prog, cpu_port=args.cpu_port)
    try:
        res = StfRunner(sw, args.stf, strict=args.strict).run_text(text)
    except StfError as e:
        print(f"{e}", file=sys.stderr)
        return 2
    _print_warnings(res.warnings)
    print(res.report())
    return 0 if res.ok else 1


def _ir(prog) -> str:
    """The checked program: every type with its widths, the control-plane objects, the
    pipeline entry points (what the code generator worked from)."""
    from p4sim import externs
    from p4sim.check.types import TStack, TStruct, width_of

    lines = [f"program {prog.model.source} (arch {prog.model.arch})", "", "types:"]
    seen: set[str] = set()

    def show_type(t) -> None:
        if isinstance(t, TStack):
            show_type(t.elem)
            return
        if not isinstance(t, TStruct) or t.name in seen:
            return
        seen.add(t.name)
        for _, ft in t.fields:
            show_type(ft)
        size = f" ({width_of(t)} bits)" if t.kind == "header" else ""
        lines.append(f"  {t.kind} {t.name}{size}")
        for fname, ft in t.fields:
            w = width_of(ft)
            lines.append(
                f"    {fname}: {ft.show()}"
                + (f"  [{w}]" if w and not isinstance(ft, TStruct) else "")
            )

    for t in prog.struct_types.values():
        show_type(t)
    m = prog.model
    lines += ["", "tables:"]
    for t in m.tables.values():
        keys = ", ".join(f"{k.name}:{k.match_kind}<{k.bitwidth}>" for k in t.keys) or "(keyless)"
        lines.append(
            f"  {t.name} key {{{keys}}} size {t.size}"
            + (" const-entries" if t.const_entries else "")
        )
        lines.append(
            f"    actions {', '.join(a.name for a in t.actions)}; default {t.default_action}"
            f"{tuple(t.default_params) if t.default_params else ''}"
            + (" (const)" if t.const_default_action else "")
        )
    lines += ["", "actions:"]
    for a in m.actions.values():
        lines.append(f"  {a.name}({', '.join(f'{p.name}: bit<{p.bitwidth}>' for p in a.params)})")
    lines += ["", "externs:"]
    for ext in externs.with_model():
        lines += [f"  {ext.describe(x)}" for x in ext.objects(m).values()]
    for h in m.controller_headers.values():
        lines.append(
            f"  controller_header {h.name}: "
            + ", ".join(f"{f.name}<{f.bitwidth}>" for f in h.fields)
        )
    pl = prog.pipeline
    lines += [
        "",
        "pipeline:",
        f"  parser {pl.parser} -> verify {pl.verify} -> ingress {pl.ingress} -> TM"
        f" -> egress {pl.egress} -> compute {pl.compute} -> deparser {pl.deparser}",
    ]
    if pl.field_lists:
        lines.append("  field lists: " + ", ".join(str(i) for i in sorted(pl.field_lists)))
    return "\n".join(lines) + "\n"


def cmd_compile(args) -> int:
    if args.emit == "python":
        prog = _load(args)
        sys.stdout.write(prog.python)
        return 0
    if args.emit == "ir":
        sys.stdout.write(_ir(_load(args)))
        return 0
    import os

    from p4sim.frontend import parse_program
    from p4sim.lower import ARCH_DIR

    prog_ast = parse_program(
        args.program,
        include_dirs=list(args.include)
        + [os.path.dirname(os.path.abspath(args.program)), ARCH_DIR],
    )
    _print_warnings(prog_ast.warnings)
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


def _stf_epilog() -> str:
    """The STF commands the extern modules define (`Extern.stf_commands`), one line each."""
    from p4sim import externs

    lines = []
    for op, f in sorted(externs.all_stf_commands().items()):
        usage = (f.__doc__ or op).strip().splitlines()[0]
        lines.append(f"  {usage if usage.startswith(op) else op}")
    return "extern commands (besides add, setdefault, packet, expect, wait, mc_*):\n" + "\n".join(
        lines
    )


MAX_PROGRAM_BYTES = 4 << 20  # the largest P4 source here is ~60 KB; p4c's samples under 1 MB
MAX_STF_BYTES = 16 << 20


def build_parser() -> cliargs.Parser:
    ap = cliargs.Parser(
        prog="p4sim",
        description="p4sim: a P4_16 v1model target (pure-Python reference, compiled fast path)",
    )
    ap.add_argument(
        "--version",
        action="store_true",
        help="print the version and the pieces that run, then exit",
    )
    ap.add_argument(
        "--profile",
        choices=profile.PROFILES,
        default=None,
        help="fast (default: compiled backend and write path) or reference (pure Python);"
        " default from env P4SIM_PROFILE",
    )
    sub = ap.add_subparsers(dest="cmd")
    program = cliargs.input_file(MAX_PROGRAM_BYTES, what="program")
    s = sub.add_parser(
        "stf",
        help="run an STF test against a program",
        epilog=_stf_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("program", type=program)
    s.add_argument("stf", type=cliargs.input_file(MAX_STF_BYTES, what="STF file"))
    s.add_argument("--cpu-port", type=cliargs.int_range(0, 511, "--cpu-port"), default=None)
    s.add_argument(
        "--strict",
        action="store_true",
        help="also fail on packets at ports the test never names, and on unknown "
        "commands (default: p4c's runner, which ignores both)",
    )
    c = sub.add_parser("compile", help="show a compiler stage")
    c.add_argument("program", type=program)
    c.add_argument(
        "--emit",
        choices=("ast", "ir", "python"),
        default="python",
        help="ast: the parse tree; ir: the checked program; python: the generated code",
    )
    i = sub.add_parser("p4info", help="write the program's P4Info")
    i.add_argument("program", type=program)
    i.add_argument("-o", "--output", type=cliargs.output_file("-o"))
    i.add_argument("--format", choices=("text", "binary", "json"), default="text")
    for p in (s, c, i):
        p.add_argument(
            "-I",
            "--include",
            type=cliargs.input_dir("-I"),
            action="append",
            default=[],
            metavar="DIR",
        )
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    args = cliargs.parse_argv(ap, argv)  # every input checked here, before any compile
    if isinstance(args, int):
        return args
    try:
        if args.profile:
            profile.choose(args.profile)
        profile.selected()
    except SettingError as e:
        print(f"p4sim: {cliargs.one_line(str(e))}", file=sys.stderr)
        return 2
    if args.version:
        from p4sim.server_cli import version

        print(f"p4sim {version()}: {profile.describe(*profile.pieces())}")
        return 0
    if args.cmd is None:
        print("p4sim: a command is required (stf, compile, p4info; p4sim -h)", file=sys.stderr)
        return 2
    try:
        return {"stf": cmd_stf, "compile": cmd_compile, "p4info": cmd_p4info}[args.cmd](args)
    except P4SourceError as e:
        print(e.headline(), file=sys.stderr)
        return 1
    except (cliargs.InputError, FileNotFoundError, SettingError) as e:
        print(f"p4sim: {cliargs.one_line(str(e))}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
