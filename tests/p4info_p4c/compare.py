"""P4Info from p4sim (p4sim/p4info.py) against P4Info from real p4c-bm2-ss, program by program.

Each program is compiled by p4c (found by controller/targets/toolchain.py: PATH or
ROCELAB_BMV2_PREFIX; `--p4runtime-files NAME.p4info.txtpb`) and loaded by p4sim; both P4Infos
are put in a canonical form and compared field by field, one line per difference.

Canonical form: every top-level list (tables, actions, counters, ...) ordered by id. p4c lists
objects in program order and p4sim by name; P4Runtime gives that order no meaning (objects are
found by id). Lists inside an object (match fields, params, action refs) keep their order:
p4c's order there is the program's and is meaningful (match field and param ids follow it).

A program whose P4Info differs for a known reason is listed in EXCEPTIONS with that reason;
an entry whose program now compares equal is stale and fails the check, so that the list
only shrinks.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from google.protobuf import text_format
from google.protobuf.message import Message

from controller.targets.config import ConfigError
from controller.targets.toolchain import Toolchain, compile_p4
from p4rtproto import p4info_pb2

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "p4sim" / "programs"
RUNTIME = ROOT / "tests" / "p4sim_runtime" / "programs"
CACHE = Path.home() / ".cache" / "rocelab" / "p4info-p4c"

# program stem -> why its P4Info differs from p4c's (p4sim/README.md "P4Info against p4c's
# samples" says the same for the samples).
EXCEPTIONS: dict[str, str] = {
    "gauntlet_exit_combination_5-bmv2": "p4c folds away the only call of an action (after an "
    "exit) and leaves the action out; p4sim lists it",
    "issue1062-1-bmv2": "a key of type error: p4c bitwidth 0 and type_info.error; p4sim 32 bits, "
    "no type_info.error",
    "issue1739-bmv2": "type_info.new_types and match fields' type_name (@p4runtime_translation "
    "of a `type`) not written by p4sim",
    "issue2283_1-bmv2": "translated types (@p4runtime_translation): p4c's key widths are the "
    "translated ones, with type_name and new_types; p4sim gives the underlying width",
    "issue2735-bmv2": "a register inside a user extern wrapper: p4c does not list it, p4sim does",
    "issue298-bmv2": "an @name on a struct field shows in p4c's key names, not in p4sim's",
    "issue3488-1-bmv2": "an unknown annotation on an action reference (@defaut_only) is kept by "
    "p4c, dropped by p4sim",
    "register-serenum-bmv2": "a register of a serializable enum: p4c's type_spec names the enum "
    "(type_info.serializable_enums); p4sim writes its bits",
    "table-entries-ser-enum-bmv2": "type_info.serializable_enums not written by p4sim",
    "table-key-serenum-bmv2": "type_info.serializable_enums not written by p4sim",
    # tests/p4sim_runtime/programs
    "value_sets": "a value set no select uses: p4c's front end removes it ('rng_vs' is unused), "
    "p4sim lists it",
}


@dataclass
class Outcome:
    program: str
    status: str  # "equal" | "differs" | "excepted" | "stale" | "not compared"
    lines: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.status in ("differs", "stale")


def corpus_programs() -> list[Path]:
    """p4sim's accepted corpus programs (the rejected ones, reject_*.p4, have no P4Info), then
    the programs of p4sim's P4Runtime tests (tests/p4sim_runtime/programs)."""
    return sorted(p for p in CORPUS.glob("*.p4") if not p.name.startswith("reject_")) + sorted(
        RUNTIME.glob("*.p4")
    )


def sample_programs(samples: Path) -> list[Path]:
    """p4c's v1model samples (testdata/p4_16_samples/*-bmv2.p4)."""
    return sorted(samples.glob("*-bmv2.p4"))


def _local_includes(program: Path) -> list[Path]:
    text = program.read_text(errors="replace")
    return sorted(program.parent / m for m in re.findall(r'#include\s+"([^"]+)"', text))


def p4c_p4info(program: Path, tc: Toolchain, work: Path) -> p4info_pb2.P4Info:
    """p4c's P4Info of `program`; ConfigError when p4c refuses it. p4c's output depends only on
    the sources and the compiler, so it is kept in CACHE under their hash (the tier runs the
    corpus every time; p4c takes ~0.5 s a program)."""
    h = hashlib.sha256(f"{tc.p4c_version()}\0".encode())
    for src in [program, *_local_includes(program)]:
        h.update(src.read_bytes() if src.is_file() else b"-")
    cached = CACHE / f"{program.stem}-{h.hexdigest()[:16]}.p4info.txtpb"
    if not cached.is_file():
        compiled = compile_p4(program, work / program.stem, tc)
        CACHE.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".{id(compiled)}.tmp")
        tmp.write_text(compiled.p4info.read_text())
        tmp.replace(cached)  # whole or absent for a concurrent reader
    return text_format.Parse(cached.read_text(), p4info_pb2.P4Info())


def p4sim_p4info(program: Path) -> p4info_pb2.P4Info:
    from p4sim.lower import load_program
    from p4sim.p4info import build_p4info

    return build_p4info(load_program(str(program)).model)


def canonical(info: p4info_pb2.P4Info) -> p4info_pb2.P4Info:
    out = p4info_pb2.P4Info()
    out.CopyFrom(info)
    for fd, value in list(out.ListFields()):
        if fd.is_repeated and fd.message_type is not None:
            items = sorted(
                value,
                key=lambda o: (
                    (o.preamble.id, o.preamble.name)
                    if "preamble" in o.DESCRIPTOR.fields_by_name
                    else o.SerializeToString()
                ),
            )
            copies = [type(o)() for o in items]
            for c, o in zip(copies, items, strict=True):
                c.CopyFrom(o)
            out.ClearField(fd.name)
            getattr(out, fd.name).extend(copies)
    return out


def _short(v: object) -> str:
    if isinstance(v, dict):  # a map of messages (type_info's): its keys
        return "{" + ", ".join(sorted(map(str, v))) + "}"
    if isinstance(v, Message):
        s = text_format.MessageToString(v, as_one_line=True)
    else:
        s = repr(v)
    s = s or "{}"  # an empty message
    return s if len(s) <= 90 else s[:87] + "..."


def _label(m: Message) -> str:
    pre = getattr(m, "preamble", None)
    if pre is not None and pre.name:
        return f"[{pre.name}]"
    for key in ("name", "id"):
        if key in m.DESCRIPTOR.fields_by_name and getattr(m, key):
            return f"[{getattr(m, key)}]"
    return ""


def diff(ref: Message, ours: Message, path: str = "") -> list[str]:
    """One line per difference: `path: p4c X, p4sim Y` (or an object only one of them has)."""
    out: list[str] = []
    for fd in ref.DESCRIPTOR.fields:
        where = f"{path}.{fd.name}" if path else fd.name
        a, b = getattr(ref, fd.name), getattr(ours, fd.name)
        if fd.is_repeated:
            if fd.message_type is None:
                if list(a) != list(b):
                    out.append(f"{where}: p4c {_short(list(a))}, p4sim {_short(list(b))}")
                continue
            if fd.message_type.GetOptions().map_entry:
                if dict(a) != dict(b):
                    out.append(f"{where}: p4c {_short(dict(a))}, p4sim {_short(dict(b))}")
                continue
            if path == "" and a and "preamble" in a[0].DESCRIPTOR.fields_by_name:
                by_a = {o.preamble.name: o for o in a}
                by_b = {o.preamble.name: o for o in b}
                for name in sorted(by_a.keys() - by_b.keys()):
                    out.append(f"{where}[{name}]: only in p4c's")
                for name in sorted(by_b.keys() - by_a.keys()):
                    out.append(f"{where}[{name}]: only in p4sim's")
                for name in sorted(by_a.keys() & by_b.keys()):
                    out += diff(by_a[name], by_b[name], f"{where}[{name}]")
                continue
            if len(a) != len(b):
                out.append(
                    f"{where}: p4c has {len(a)}, p4sim {len(b)}: "
                    f"p4c {_short([_short(x) for x in a])}, "
                    f"p4sim {_short([_short(x) for x in b])}"
                )
                continue
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                out += diff(x, y, f"{where}{_label(x) or f'[{i}]'}")
        elif fd.message_type is not None:
            has_a, has_b = ref.HasField(fd.name), ours.HasField(fd.name)
            if has_a != has_b:
                out.append(
                    f"{where}: p4c {_short(a) if has_a else 'absent'}, "
                    f"p4sim {_short(b) if has_b else 'absent'}"
                )
            elif has_a:
                out += diff(a, b, where)
        elif a != b:
            out.append(f"{where}: p4c {_short(a)}, p4sim {_short(b)}")
    return out


def compare_program(
    program: Path, tc: Toolchain, work: Path, exceptions: dict[str, str] = EXCEPTIONS
) -> Outcome:
    name = program.stem
    try:
        ref = p4c_p4info(program, tc, work)
    except ConfigError as e:
        msg = str(e)
        errs = [x.strip() for x in msg.split(" | ") if "error" in x]
        return Outcome(
            name,
            "not compared",
            [f"{name}: not compared: p4c refuses it: {(errs or [msg])[0][:160]}"],
        )
    try:
        ours = p4sim_p4info(program)
    except Exception as e:  # noqa: BLE001  p4sim refusing a program p4c takes is reported
        first = (str(e).splitlines() or [type(e).__name__])[0]
        return Outcome(
            name, "not compared", [f"{name}: not compared: p4sim refuses it: {first[:160]}"]
        )
    lines = [f"{name}: {d}" for d in diff(canonical(ref), canonical(ours))]
    why = exceptions.get(name)
    if why is None:
        return Outcome(name, "differs" if lines else "equal", lines)
    if not lines:
        return Outcome(
            name,
            "stale",
            [f"{name}: stale exception (P4Info now equal to p4c's): remove it from EXCEPTIONS"],
        )
    return Outcome(name, "excepted", [f"{name}: excepted ({why}); {len(lines)} difference(s)"])


def compare_all(
    programs: Iterable[Path], tc: Toolchain, work: Path, exceptions: dict[str, str] = EXCEPTIONS
) -> list[Outcome]:
    return [compare_program(p, tc, work, exceptions) for p in programs]


def summary(outcomes: list[Outcome]) -> str:
    count = {
        s: sum(o.status == s for o in outcomes)
        for s in ("equal", "differs", "excepted", "stale", "not compared")
    }
    compared = len(outcomes) - count["not compared"]
    return (
        f"P4Info equal to p4c's for {count['equal']} of {compared} programs compared; "
        f"{count['excepted']} excepted, {count['differs']} differ, {count['stale']} stale "
        f"exceptions; {count['not compared']} not compared"
    )
