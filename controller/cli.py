"""`rocelab`: check a switch config, program a target, read its telemetry, run scenarios.

    rocelab check CONFIG [--json]                     validate (exit 0 ok, 1 findings, 2 usage)
    rocelab apply CONFIG [target options]             program a target from a config
    rocelab counters [--config CONFIG] [--json] [target options]
    rocelab run SCENARIO [--out DIR] [--seed N] [--duration-us T] [--json]
    rocelab list                                      the scenarios shipped
    rocelab experiment list|NAME|all [--out DIR] [--json]   the RoCE primer's claims, measured
    rocelab packet-out --port N HEX [target options]  PacketOut through the program's header
    rocelab packet-in [--timeout S] [target options]  print PacketIns
    rocelab stf FILE.stf... [--strict] [target options]  p4c's STF tests on any target
    rocelab schema switch|scenario|fabric|lab|sweep   JSON Schema of a file kind (for editors)

Target options: --target KIND (default p4sim, in this process; `rocelab apply -h` lists the
kinds, one module each in controller/targets/kinds/), --grpc-addr HOST:PORT, --device-id N
(default 0), --election-id N, --connect-timeout S, --p4-artifacts DIR,
--grpc-ssl [--grpc-ca PEM] [--grpc-cert PEM --grpc-key PEM] (TLS, mutual TLS), --program FILE.p4,
--p4info FILE --bmv2-json FILE (artifacts compiled by p4c), --port-map 1=veth1,...,
--no-push (use the pipeline already on the device).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import NoReturn

from p4sim import cliargs

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
SCHEMA_KINDS = ("switch", "scenario", "fabric", "lab", "sweep")  # controller.schemas.kinds()


# the bounds of the files a command reads (p4sim.cliargs reads each once while parsing)
MAX_CONFIG_BYTES = 1 << 20  # as controller.inputs.MAX_BYTES
MAX_PROGRAM_BYTES = 4 << 20  # as p4sim.cli
MAX_ARTIFACT_BYTES = 64 << 20  # a BMv2 JSON of a large program is a few MB
MAX_STF_BYTES = 16 << 20
MAX_FRAME_HEX = 2 * 16384  # a jumbo frame and then some


class _Parser(cliargs.Parser):
    """Usage errors: one line on stderr, `rocelab: ...`, exit 2 (p4sim.cliargs.Parser)."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"rocelab: {cliargs.one_line(message)}\n")
        raise SystemExit(EXIT_USAGE)


def _port_map(text: str) -> dict:
    from controller.targets.config import ConfigError, parse_port_map

    try:
        ports = parse_port_map(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    bad = [p for p in ports if not 0 <= p <= 511]
    if bad:
        raise argparse.ArgumentTypeError(
            f"switch ports are 0..511 (v1model's 9 bits), not {bad[0]}"
        )
    return ports


def _target_args(p: argparse.ArgumentParser) -> None:
    """The options every kind shares, then each kind's own (controller/targets/kinds/)."""
    from controller.targets import registry

    g = p.add_argument_group("target", "kinds: " + registry.choices_help())
    g.add_argument("--target", default="p4sim", choices=registry.names())
    g.add_argument(
        "--grpc-addr",
        type=cliargs.address(1, 65535, "--grpc-addr"),
        default=None,
        help="P4Runtime server HOST:PORT",
    )
    g.add_argument(
        "--device-id",
        type=cliargs.int_range(0, (1 << 64) - 1, "--device-id"),
        default=0,
        help="P4Runtime device id (default 0, as p4sim-switch and simple_switch_grpc)",
    )
    g.add_argument(
        "--program",
        type=cliargs.input_file(MAX_PROGRAM_BYTES, what="--program"),
        default=None,
        help="P4 source (default p4src/roce_switch.p4)",
    )
    g.add_argument(
        "--p4info",
        type=cliargs.input_file(MAX_ARTIFACT_BYTES, text_file=False, what="--p4info"),
        default=None,
        help="P4Info (text or binary) compiled by p4c",
    )
    g.add_argument(
        "--bmv2-json",
        type=cliargs.input_file(MAX_ARTIFACT_BYTES, what="--bmv2-json"),
        default=None,
        help="BMv2 JSON compiled by p4c",
    )
    g.add_argument(
        "--port-map",
        type=cliargs.pattern(_port_map, "--port-map", 4096),
        default=None,
        help="switch port to interface: 1=veth1,2=ns1/veth2",
    )
    g.add_argument("--no-push", action="store_true", help="keep the pipeline already installed")
    registry.add_options(g.add_argument, "cli")


def _open(args):
    from controller.targets import DEFAULT_PROGRAM, from_artifacts, registry
    from controller.targets.config import ConfigError, TargetConfig

    program = args.program or DEFAULT_PROGRAM
    if args.p4info or args.bmv2_json:
        if not (args.p4info and args.bmv2_json):
            raise _Usage("--p4info and --bmv2-json go together")
        program = from_artifacts(args.p4info, args.bmv2_json)
    options, explicit = registry.option_values(lambda dest: getattr(args, dest), "cli")
    cfg = TargetConfig(
        kind=args.target,
        grpc_addr=args.grpc_addr,
        device_id=args.device_id,
        port_map=args.port_map or {},
        program=program,
        push=not args.no_push,
        options=options,
    )
    try:
        kind = registry.check(cfg, explicit, "cli")
    except ConfigError as exc:
        raise _Usage(str(exc)) from None
    if not kind.in_process and not cfg.grpc_addr:  # a command never starts a switch
        raise _Usage(f"--target {kind.name} needs --grpc-addr HOST:PORT")
    return kind.open(cfg, kind.program(cfg))


class _Usage(Exception):
    pass


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="rocelab", description="RoCEv2 data-plane testbed: configs, targets, scenarios"
    )
    sub = p.add_subparsers(dest="cmd", parser_class=_Parser)
    c = sub.add_parser("check", help="validate a switch config")
    config = cliargs.input_file(MAX_CONFIG_BYTES, what="config")
    c.add_argument("config", type=config)
    c.add_argument("--json", action="store_true")
    c.add_argument("-v", "--verbose", action="store_true", help="also show what passed")
    a = sub.add_parser("apply", help="program a target from a config")
    a.add_argument("config", type=config)
    _target_args(a)
    k = sub.add_parser("counters", help="telemetry per port and class")
    k.add_argument("--config", type=config, default=None, help="apply this config first")
    k.add_argument("--json", action="store_true")
    _target_args(k)
    p.add_argument(
        "--profile",
        choices=("fast", "reference"),
        default=None,
        help="p4sim's configuration: fast (default: compiled) or reference (pure Python);"
        " default from env P4SIM_PROFILE (p4sim.profile)",
    )
    r = sub.add_parser("run", help="run a scenario in virtual time on p4sim")
    r.add_argument("scenario", type=cliargs.name_or_file(MAX_CONFIG_BYTES, "scenario"))
    r.add_argument(
        "--out",
        type=cliargs.output_dir("--out"),
        default=None,
        help="directory for plots, pcap and summary",
    )
    r.add_argument("--seed", type=cliargs.int_range(0, 2**32 - 1, "--seed"), default=None)
    r.add_argument(
        "--duration-us",
        type=cliargs.float_range(0, 1e9, "--duration-us", lo_open=True),
        default=None,
    )
    r.add_argument(
        "--program", type=cliargs.input_file(MAX_PROGRAM_BYTES, what="--program"), default=None
    )
    r.add_argument("--json", action="store_true")
    r.add_argument("--no-progress", action="store_true")
    sub.add_parser("list", help="list the scenarios")
    e = sub.add_parser("experiment", help="run the RoCE primer's experiments (virtual time)")
    e.add_argument(
        "name", type=cliargs.text("experiment", 64), help="an experiment, 'all', or 'list'"
    )
    e.add_argument(
        "--out",
        type=cliargs.output_dir("--out"),
        default=None,
        help="directory for each experiment's JSON and plot",
    )
    e.add_argument("--json", action="store_true")
    po = sub.add_parser("packet-out", help="send a frame through PacketOut")
    po.add_argument("--port", type=cliargs.int_range(0, 511, "--port"), required=True)
    po.add_argument("hex", type=cliargs.pattern(_frame_hex, "HEX", MAX_FRAME_HEX))
    _target_args(po)
    pi = sub.add_parser("packet-in", help="print PacketIns")
    pi.add_argument("--timeout", type=cliargs.duration(0, 3600, "--timeout"), default=1.0)
    _target_args(pi)
    st = sub.add_parser("stf", help="run p4c STF tests (the .p4 beside them) on a target")
    st.add_argument(
        "stf",
        nargs="+",
        type=cliargs.input_file(MAX_STF_BYTES, what="STF file"),
        help="STF files (program: --program, else NAME.p4 beside "
        "the file, else the one .p4 in the folder above)",
    )
    st.add_argument(
        "--strict",
        action="store_true",
        help="check every port and refuse unknown commands (p4c: named ports only)",
    )
    _target_args(st)
    sc = sub.add_parser("schema", help="JSON Schema of a file kind (YAML language server, editors)")
    sc.add_argument("kind", choices=SCHEMA_KINDS)
    from controller.fabric.sweep import add_parser as add_sweep_parser

    add_sweep_parser(sub)
    return p


def cmd_check(args) -> int:
    from controller.config import ConfigError, check, load_yaml_lines, parse_config
    from controller.inputs import InputError

    try:
        data, lines = load_yaml_lines(args.config)
    except InputError as exc:  # not a readable file (missing, a directory, a FIFO, too big)
        sys.stderr.write(f"rocelab: {exc}\n")
        return EXIT_USAGE
    except ConfigError as exc:
        findings_json = [{"level": "error", "key": exc.key, "message": exc.message}]
        if args.json:
            print(json.dumps({"ok": False, "findings": findings_json}, indent=2))
        else:
            print(f"ERROR {exc.key}: {exc.message}")
        return EXIT_FAIL
    cfg, errors = parse_config(data, args.config, lines)
    findings = check(cfg, errors)
    for f in findings:  # the cross-field findings say where their key is too
        if not f.where and f.key in lines:
            f.where = f"{args.config}:{lines[f.key]}"
    bad = [f for f in findings if f.level == "error"]
    if args.json:
        print(
            json.dumps(
                {
                    "ok": not bad,
                    "findings": [
                        {
                            "level": f.level,
                            "key": f.key,
                            "message": f.message,
                            "arithmetic": f.arithmetic,
                            "where": f.where,
                        }
                        for f in findings
                    ],
                },
                indent=2,
            )
        )
    else:
        for f in findings:
            if f.level == "error" or args.verbose or f.arithmetic:
                print(f)
        print(f"{args.config}: {'OK' if not bad else f'{len(bad)} error(s)'}")
    return EXIT_FAIL if bad else EXIT_OK


def cmd_apply(args) -> int:
    from controller.config import apply_config, check, load_config

    cfg = load_config(args.config)
    # what `rocelab check` rejects (headroom, XON >= XOFF, ...) is not programmed either
    bad = [f for f in check(cfg) if f.level == "error"]
    if bad:
        for f in bad:
            print(f)
        sys.stderr.write(
            f"rocelab: {args.config}: {len(bad)} error(s); not applied "
            f"(rocelab check {args.config})\n"
        )
        return EXIT_FAIL
    with _open(args) as target:
        comp = apply_config(cfg, target)
        print(f"{target.name}: wrote {len(comp.entities)} entities from {args.config}")
        for n in dict.fromkeys(comp.notes):
            print(f"note: {n}")
    return EXIT_OK


def cmd_counters(args) -> int:
    from controller.config import apply_config, load_config
    from controller.telemetry import format_table, from_counters

    with _open(args) as target:
        if args.config:
            apply_config(load_config(args.config), target)
        tel = from_counters(target.counters())
        if args.json:
            print(json.dumps(tel.as_json(), indent=2))
        else:
            print(format_table(tel))
    return EXIT_OK


def cmd_run(args) -> int:
    from controller.config import ConfigError
    from controller.scenarios.kinds import kind_of
    from controller.scenarios.report import summary_text, write_outputs
    from controller.scenarios.scenario import load_scenario, reproduce_command, run_scenario
    from controller.scenarios.schema import validate
    from controller.targets import DEFAULT_PROGRAM
    from controller.targets.p4sim import P4SimTarget, profile_line

    # a bad scenario or option is bad usage: one line, exit 2, before anything runs
    try:
        sc = load_scenario(args.scenario)
        validate(sc, duration_us=args.duration_us)
        if args.seed is not None and not 0 <= args.seed < 2**32:
            raise _Usage(f"--seed {args.seed}: expected 0 .. 2^32-1")
    except (ConfigError, FileNotFoundError) as exc:
        raise _Usage(str(exc)) from None
    kind = kind_of(sc)
    if kind is not None:  # another kind of file (a fabric's, controller/fabric/runner.py: it
        return kind.cmd_run(args, sc)  # prints the profile line once its options are checked)
    sys.stderr.write(f"rocelab: {profile_line()}\n")  # which p4sim runs (fast, or the reference)
    program = Path(args.program) if args.program else DEFAULT_PROGRAM
    seed = int(sc.get("seed", 1) if args.seed is None else args.seed)

    def factory(s: int) -> P4SimTarget:
        return P4SimTarget(program, seed=s)

    res = run_scenario(sc, factory, seed, args.duration_us, progress=not args.no_progress)
    files = write_outputs(res, args.out) if args.out else []
    if args.json:
        print(
            (Path(args.out) / "summary.json").read_text()
            if args.out
            else json.dumps(
                {"ok": res.ok, "verdicts": [v.__dict__ for v in res.verdicts]}, indent=2
            )
        )
    else:
        print(summary_text(res))
        if files:
            print("")
            print(f"outputs in {args.out}/:")
            for f in files:
                print(f"  {f}")
    if not res.ok:
        sys.stderr.write(
            f"rocelab: scenario {sc['name']} FAILED (seed {seed}); reproduce with: "
            f"{reproduce_command(sc, seed, args.duration_us)}\n"
        )
        return EXIT_FAIL
    return EXIT_OK


def cmd_list(args) -> int:
    from controller.config import ConfigError
    from controller.scenarios.scenario import list_scenarios, load_scenario

    rc = EXIT_OK
    for name in list_scenarios():
        try:
            sc = load_scenario(name)
            kind = "control" if sc.get("expect_fail") else "scenario"
            print(f"{name:22} {kind:8} {sc.get('title', '')}")
        except ConfigError as exc:
            sys.stderr.write(f"rocelab: {exc}\n")
            rc = EXIT_FAIL
    return rc


def cmd_experiment(args) -> int:
    from controller.experiments import REGISTRY, summary_text, write_outputs

    if args.name == "list":
        for name, exp in REGISTRY.items():
            print(f"{name:20} {exp.question}")
        return EXIT_OK
    if args.name != "all" and args.name not in REGISTRY:
        raise _Usage(f"no experiment {args.name!r} (known: {', '.join(REGISTRY)}, all, list)")
    names = list(REGISTRY) if args.name == "all" else [args.name]
    if args.out and Path(args.out).exists() and not Path(args.out).is_dir():
        raise _Usage(f"--out {args.out}: not a directory")
    results = []
    for name in names:
        res = REGISTRY[name].run()
        results.append(res)
        files = write_outputs(res, args.out) if args.out else []
        if not args.json:
            print(summary_text(res))
            for f in files:
                print(f"  wrote {Path(args.out) / f}")
            print("")
    if args.json:
        print(json.dumps([r.as_json() for r in results], indent=2, default=str))
    failed = [r.name for r in results if not r.ok]
    if failed:
        sys.stderr.write(f"rocelab: experiment(s) FAILED: {', '.join(failed)}\n")
        return EXIT_FAIL
    return EXIT_OK


def cmd_schema(args) -> int:
    from controller.schemas import json_schema

    print(json.dumps(json_schema(args.kind), indent=2))
    return EXIT_OK


def _frame_hex(text: str) -> bytes:
    try:
        frame = bytes.fromhex(text.replace(":", "").replace(" ", ""))
    except ValueError:
        raise argparse.ArgumentTypeError("must be the frame in hexadecimal") from None
    if not frame:
        raise argparse.ArgumentTypeError("an empty frame")
    return frame


def cmd_packet_out(args) -> int:
    frame = args.hex  # bytes (_frame_hex)
    with _open(args) as target:
        target.packet_out(frame, {"egress_port": args.port})
        if target.virtual_time:
            target.advance(1_000_000)
            for out in target.receive():
                print(f"port {out.port} t={out.time_ns} ns: {out.data.hex()}")
        print(f"PacketOut of {len(frame)} bytes to port {args.port}")
    return EXIT_OK


def cmd_packet_in(args) -> int:
    with _open(args) as target:
        end = time.monotonic() + args.timeout
        while time.monotonic() < end:
            for p in target.packet_in():
                print(json.dumps({"metadata": p.metadata, "frame": p.data.hex()}))
            time.sleep(0.05)
    return EXIT_OK


def cmd_stf(args) -> int:
    from controller.stf import run_cli

    return run_cli(args, _Usage)


def main(argv: list[str] | None = None) -> int:
    from controller.config import ConfigError
    from controller.inputs import InputError
    from controller.targets import TargetError
    from controller.targets.config import ConfigError as TargetConfigError
    from controller.targets.p4sim import use_profile

    try:
        parser = build_parser()  # imports the target kinds: a broken plug-in is one line
    except TargetConfigError as exc:
        sys.stderr.write(f"rocelab: {exc}\n")
        return EXIT_USAGE
    args = cliargs.parse_argv(parser, argv)  # every option and file checked, before anything runs
    if isinstance(args, int):
        return args
    if not args.cmd:
        sys.stderr.write("rocelab: a command is required (rocelab -h lists them)\n")
        return EXIT_USAGE
    try:
        use_profile(args.profile)
    except TargetConfigError as exc:
        sys.stderr.write(f"rocelab: {exc}\n")
        return EXIT_USAGE
    if args.cmd == "sweep":  # fabric parameter sweeps (controller/fabric/sweep.py)
        from controller.fabric.sweep import cmd_sweep

        return cmd_sweep(args)
    fn = {
        "check": cmd_check,
        "apply": cmd_apply,
        "counters": cmd_counters,
        "run": cmd_run,
        "list": cmd_list,
        "experiment": cmd_experiment,
        "packet-out": cmd_packet_out,
        "packet-in": cmd_packet_in,
        "stf": cmd_stf,
        "schema": cmd_schema,
    }[args.cmd]
    try:
        return fn(args)
    except TargetConfigError as exc:
        sys.stderr.write(f"rocelab: {cliargs.one_line(str(exc), 2000)}\n")
        return EXIT_USAGE
    except (_Usage, InputError, FileNotFoundError, ConfigError, TargetError) as exc:
        code = f" ({exc.code})" if isinstance(exc, TargetError) else ""
        sys.stderr.write(f"rocelab: {cliargs.one_line(str(exc), 2000)}{code}\n")
        return EXIT_FAIL if isinstance(exc, ConfigError | TargetError) else EXIT_USAGE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
