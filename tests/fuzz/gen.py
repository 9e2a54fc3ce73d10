"""Random v1model programs with their control-plane set-up and packets (Gauntlet-style).

`generate(seed)` gives a `Case`: the P4 source, table entries written at run time, clone
sessions, and packets built to reach the parsed headers and hit the table entries. Same seed,
same case (one `random.Random(seed)`; nothing else is random). The program uses:
- a parser select tree (Ethernet, then two headers of random bit<N> fields chosen by EtherType
  and by a field's value),
- tables with exact/lpm/ternary keys, const entries or entries written at run time, actions
  with parameters, `hit`, `switch (t.apply().action_run)`,
- bit<N> arithmetic: + - * (wrapping), |+| |-| (saturating), & | ^ ~, unary -, shifts by a
  constant or a field, slices (read and assigned), casts between widths and through int<N>,
  ++, ?:, comparisons,
- a register, a counter, hash(), clone (I2E), mark_to_drop, and recirculation from egress
  with a field list.

What the programs avoid, so that any difference is a real one: reads of a header's fields
outside an `isValid()` guard (undefined in P4), egress ports other than 0..3 (the ports the
BMv2 driver attaches), registers/counters indexed out of range, timestamps and queue metadata
(they depend on time), frames shorter than an Ethernet header (no link carries them).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

WIDTHS = (1, 2, 3, 4, 5, 7, 8, 9, 12, 16, 19, 24, 32, 48, 64)
PORTS = 4  # ports 0..3 carry packets
CLONE_SESSION = 5
CLONE_PORT = 3
REG_SIZE = 8
ETH_H1, ETH_H2, ETH_OTHER = 0x0801, 0x0802, 0x0800


@dataclass
class Field:
    path: str  # P4 expression, e.g. hdr.h1.f0
    width: int
    zone: str  # "" (always valid), "h1" or "h2" (valid only under its isValid() guard)


@dataclass
class Entry:
    """A table entry written at run time (exact and lpm keys only: no priorities)."""

    table: str  # control-local name (I.t0)
    keys: list[tuple[str, int, int | None]]  # (key expression, value, prefix length or None)
    action: str
    args: list[tuple[str, int]]
    widths: list[int] = field(default_factory=list)  # of the key fields


@dataclass
class Case:
    seed: int
    source: str
    entries: list[Entry] = field(default_factory=list)
    clone_sessions: dict[int, int] = field(default_factory=dict)  # session -> port
    packets: list[tuple[int, bytes]] = field(default_factory=list)  # (port, frame)
    registers: list[str] = field(default_factory=list)  # control-plane names
    counters: list[tuple[str, int]] = field(default_factory=list)  # (name, size)


def _mask(w: int) -> int:
    return (1 << w) - 1


class _Gen:
    def __init__(self, seed: int):
        self.r = random.Random(seed)
        self.seed = seed
        self.fields: list[Field] = []
        self.lvalues: list[Field] = []
        self.tables: list[dict] = []
        self.uid = 0
        self.h1_fields: list[tuple[str, int]] = []
        self.h2_fields: list[tuple[str, int]] = []
        self.h1_select: tuple[str, int, list[int]] | None = None
        self.use_clone = False
        self.use_recirc = False

    def name(self, prefix: str) -> str:
        self.uid += 1
        return f"{prefix}{self.uid}"

    # ------------------------------------------------------------------ types

    def header_fields(self, prefix: str) -> list[tuple[str, int]]:
        n = self.r.randint(2, 5)
        fs = [(f"{prefix}{i}", self.r.choice(WIDTHS)) for i in range(n)]
        total = sum(w for _, w in fs)
        if total % 8:
            fs.append((f"{prefix}pad", 8 - total % 8))
        return fs

    # ------------------------------------------------------------------ expressions

    def visible(self, zone: str) -> list[Field]:
        return [f for f in self.fields if f.zone in ("", zone)]

    def const(self, w: int) -> str:
        r = self.r
        v = r.choice([0, 1, _mask(w), 1 << (w - 1), r.getrandbits(w)])
        return f"{w}w{v}"

    def expr(self, w: int, zone: str, depth: int = 0) -> str:
        r = self.r
        if depth >= 3 or r.random() < 0.3:
            return self.leaf(w, zone)
        k = r.randrange(11)
        if k <= 2:
            op = r.choice(["+", "-", "*", "&", "|", "^", "|+|", "|-|"])
            return f"({self.expr(w, zone, depth + 1)} {op} {self.expr(w, zone, depth + 1)})"
        if k == 3:
            return f"({r.choice(['~', '-'])}{self.expr(w, zone, depth + 1)})"
        if k == 4:
            amount = r.randint(0, w + 1) if r.random() < 0.8 else None
            if amount is None:
                f = r.choice(self.visible(zone))
                amt = f"({f.path} & {_mask(min(f.width, 7))})" if f.width > 1 else f.path
                if f.width > 8:
                    amt = f"(bit<8>){amt}"
                return f"({self.expr(w, zone, depth + 1)} {r.choice(['<<', '>>'])} {amt})"
            return f"({self.expr(w, zone, depth + 1)} {r.choice(['<<', '>>'])} {amount})"
        if k == 5:  # slice of a wider expression
            wider = [f for f in self.visible(zone) if f.width > w]
            if wider:
                f = r.choice(wider)
                lo = r.randint(0, f.width - w)
                return f"{f.path}[{lo + w - 1}:{lo}]"
            return self.leaf(w, zone)
        if k == 6:  # cast from another width
            w2 = r.choice(WIDTHS)
            return f"((bit<{w}>){self.expr(w2, zone, depth + 1)})"
        if k == 7 and w >= 2:
            a = r.randint(1, w - 1)
            return f"({self.expr(a, zone, depth + 1)} ++ {self.expr(w - a, zone, depth + 1)})"
        if k == 8:
            return f"({self.cond(zone, depth + 1)} ? {self.expr(w, zone, depth + 1)} : {self.expr(w, zone, depth + 1)})"
        if k == 9 and w >= 2:  # signed: arithmetic shift right, signed compare picks
            s = self.expr(w, zone, depth + 1)
            return f"((bit<{w}>)(((int<{w}>){s}) >> {r.randint(0, w - 1)}))"
        return self.leaf(w, zone)

    def leaf(self, w: int, zone: str) -> str:
        r = self.r
        if r.random() < 0.3:
            return self.const(w)
        f = r.choice(self.visible(zone))
        if f.width == w:
            return f.path
        return f"((bit<{w}>){f.path})"

    def cond(self, zone: str, depth: int = 0) -> str:
        r = self.r
        k = r.randrange(6)
        if depth < 2 and k == 0:
            return f"({self.cond(zone, depth + 1)} {r.choice(['&&', '||'])} {self.cond(zone, depth + 1)})"
        if depth < 2 and k == 1:
            return f"(!{self.cond(zone, depth + 1)})"
        if k == 2:
            return f"hdr.{r.choice(['h1', 'h2'])}.isValid()"
        w = r.choice(WIDTHS)
        if k == 3 and w >= 2:
            op = r.choice(["<", "<=", ">", ">="])
            return f"((int<{w}>){self.expr(w, zone, depth + 1)} {op} (int<{w}>){self.expr(w, zone, depth + 1)})"
        op = r.choice(["==", "!=", "<", "<=", ">", ">="])
        return f"({self.expr(w, zone, depth + 1)} {op} {self.expr(w, zone, depth + 1)})"

    # ------------------------------------------------------------------ statements

    def assign(self, zone: str, ind: str) -> str:
        r = self.r
        lv = r.choice([f for f in self.lvalues if f.zone in ("", zone)])
        if lv.width >= 4 and r.random() < 0.25:  # slice assignment
            w = r.randint(1, lv.width - 1)
            lo = r.randint(0, lv.width - w)
            return f"{ind}{lv.path}[{lo + w - 1}:{lo}] = {self.expr(w, zone)};"
        return f"{ind}{lv.path} = {self.expr(lv.width, zone)};"

    def block(self, zone: str, ind: str, n: int, depth: int, ingress: bool) -> list[str]:
        out: list[str] = []
        for _ in range(n):
            out.extend(self.stmt(zone, ind, depth, ingress))
        return out

    def stmt(self, zone: str, ind: str, depth: int, ingress: bool) -> list[str]:
        r = self.r
        k = r.randrange(12)
        if k <= 3 or depth >= 2:
            return [self.assign(zone, ind)]
        if k == 4:
            out = [f"{ind}if ({self.cond(zone)}) {{"]
            out += self.block(zone, ind + "    ", r.randint(1, 2), depth + 1, ingress)
            if r.random() < 0.5:
                out.append(f"{ind}}} else {{")
                out += self.block(zone, ind + "    ", r.randint(1, 2), depth + 1, ingress)
            out.append(f"{ind}}}")
            return out
        if k == 5 and ingress:
            idx = f"(bit<32>)({self.expr(3, zone)} & 7)"
            if r.random() < 0.5:
                return [f"{ind}reg.read(meta.rv, {idx});"]
            return [f"{ind}reg.write({idx}, {self.expr(self.reg_w, zone)});"]
        if k == 6 and ingress:
            return [f"{ind}ctr.count((bit<32>)({self.expr(3, zone)} & 7));"]
        if k == 7:
            algo = r.choice(["crc16", "crc32", "identity", "csum16", "xor16"])
            fs = r.sample(self.visible(zone), k=min(len(self.visible(zone)), r.randint(1, 3)))
            mx = r.choice([1, 7, 1000, 65536, 1 << 31])
            base = r.randint(0, 100)
            return [
                f"{ind}hash(meta.hv, HashAlgorithm.{algo}, 16w{base}, {{ {', '.join(f.path for f in fs)} }}, 32w{mx});"
            ]
        if k == 8 and ingress and self.tables_for(zone):
            return self.apply_table(zone, ind, depth)
        if k == 9 and ingress:
            self.use_clone = True
            return [
                f"{ind}if ({self.cond(zone)}) {{",
                f"{ind}    clone(CloneType.I2E, {CLONE_SESSION});",
                f"{ind}}}",
            ]
        if k == 10 and ingress:
            return [f"{ind}if ({self.cond(zone)}) {{", f"{ind}    mark_to_drop(sm);", f"{ind}}}"]
        return [self.assign(zone, ind)]

    def tables_for(self, zone: str) -> list[dict]:
        return [t for t in self.tables if t["zone"] == zone and not t["applied"]]

    def apply_table(self, zone: str, ind: str, depth: int, t: dict | None = None) -> list[str]:
        r = self.r
        t = t or r.choice(self.tables_for(zone))
        t["applied"] = True  # once: BMv2 (p4c) refuses a table applied twice
        k = r.randrange(3)
        if k == 0:
            return [f"{ind}{t['name']}.apply();"]
        if k == 1:
            out = [f"{ind}if ({t['name']}.apply().{r.choice(['hit', 'miss'])}) {{"]
            out += self.block(zone, ind + "    ", 1, depth + 1, True)
            out.append(f"{ind}}}")
            return out
        out = [f"{ind}switch ({t['name']}.apply().action_run) {{"]
        for a in r.sample(t["actions"], k=r.randint(1, len(t["actions"]))):
            out.append(f"{ind}    {a['name']}: {{")
            out += self.block(zone, ind + "        ", 1, depth + 1, True)
            out.append(f"{ind}    }}")
        if r.random() < 0.5:
            out.append(f"{ind}    default: {{")
            out += self.block(zone, ind + "        ", 1, depth + 1, True)
            out.append(f"{ind}    }}")
        out.append(f"{ind}}}")
        return out

    # ------------------------------------------------------------------ tables

    def make_table(self, zone: str) -> dict:
        r = self.r
        name = self.name("t")
        cands = [
            f for f in self.visible(zone) if f.zone == zone or r.random() < 0.3
        ] or self.visible(zone)
        nkeys = r.randint(1, min(3, len(cands)))
        keys = r.sample(cands, k=nkeys)
        const = r.random() < 0.6
        kinds = []
        has_lpm = False
        for f in keys:
            # lpm only on whole bytes: BMv2 counts a prefix from the top of the key's padded
            # bytes, so an lpm key of W % 8 != 0 bits matches wrongly (a const entry as p4c
            # writes it) or cannot be written (simple_switch_CLI): tests/fuzz/README.md
            lpm = ["lpm"] if f.width % 8 == 0 else []
            choices = ["exact", "ternary", *lpm] if const else ["exact", *lpm]
            kind = r.choice(choices)
            if kind == "lpm" and has_lpm:
                kind = "exact"
            has_lpm |= kind == "lpm"
            kinds.append(kind)
        actions = []
        for _ in range(r.randint(1, 3)):
            an = self.name("a")
            params = [(f"p{i}", r.choice(WIDTHS)) for i in range(r.randint(0, 2))]
            actions.append({"name": an, "params": params, "zone": zone})
        t = {
            "name": name,
            "zone": zone,
            "keys": list(zip(keys, kinds, strict=True)),
            "actions": actions,
            "const": const,
            "entries": [],
            "applied": False,
        }
        for _ in range(r.randint(1, 4)):
            vals = []
            for f, kind in t["keys"]:
                v = r.getrandbits(f.width)
                if kind == "exact":
                    vals.append((v, None))
                else:
                    plen = r.randint(0, f.width)
                    m = _mask(f.width) ^ _mask(f.width - plen)
                    if kind == "ternary" and r.random() < 0.5:
                        m = r.getrandbits(f.width)
                    vals.append((v & m, m if kind == "ternary" else plen))
            a = r.choice(actions)
            args = [(p, r.getrandbits(w)) for p, w in a["params"]]
            t["entries"].append((vals, a, args))
        if True:  # no two entries with one key: BMv2 refuses a duplicate, also in const entries
            # (p4c 1.2.5.16 compiles those; simple_switch then exits with DUPLICATE_ENTRY)
            seen, uniq = set(), []
            for e in t["entries"]:
                k = tuple(e[0])
                if k not in seen:
                    seen.add(k)
                    uniq.append(e)
            t["entries"] = uniq
        da = r.choice(actions + [None])
        t["default"] = (da, [(p, r.getrandbits(w)) for p, w in da["params"]] if da else [])
        return t

    def table_source(self, t: dict) -> list[str]:
        out = []
        for a in t["actions"]:
            params = ", ".join(f"bit<{w}> {p}" for p, w in a["params"])
            out.append(f"    action {a['name']}({params}) {{")
            body_fields = self.fields
            self.fields = body_fields + [Field(p, w, a["zone"]) for p, w in a["params"]]
            for _ in range(self.r.randint(1, 3)):
                out.append(self.assign(a["zone"], "        "))
            self.fields = body_fields
            out.append("    }")
        out.append(f"    table {t['name']} {{")
        out.append("        key = {")
        for f, kind in t["keys"]:
            out.append(f"            {f.path}: {kind};")
        out.append("        }")
        out.append(
            f"        actions = {{ {' '.join(a['name'] + ';' for a in t['actions'])} NoAction; }}"
        )
        da, dargs = t["default"]
        if da is not None:
            out.append(
                f"        default_action = {da['name']}({', '.join(str(v) for _, v in dargs)});"
            )
        else:
            out.append("        default_action = NoAction();")
        if t["const"]:
            out.append("        const entries = {")
            for vals, a, args in t["entries"]:
                ks = []
                for (f, kind), (v, m) in zip(t["keys"], vals, strict=True):
                    if kind == "exact":
                        ks.append(f"{f.width}w{v}")
                    elif kind == "lpm":
                        ks.append(
                            f"{f.width}w{v} &&& {f.width}w{_mask(f.width) ^ _mask(f.width - m)}"
                        )
                    else:
                        ks.append(f"{f.width}w{v} &&& {f.width}w{m}")
                key = ks[0] if len(ks) == 1 else "(" + ", ".join(ks) + ")"
                out.append(
                    f"            {key} : {a['name']}({', '.join(str(v) for _, v in args)});"
                )
            out.append("        }")
        out.append("    }")
        return out

    # ------------------------------------------------------------------ program

    def program(self) -> Case:
        r = self.r
        self.h1_fields = self.header_fields("a")
        self.h2_fields = self.header_fields("b")
        meta = [(f"m{i}", r.choice(WIDTHS)) for i in range(r.randint(2, 4))]
        self.reg_w = r.choice((8, 16, 32, 48))
        eth = [("dst", 48), ("src", 48), ("etype", 16)]
        self.fields = [Field(f"hdr.eth.{n}", w, "") for n, w in eth]
        self.fields += [Field(f"meta.{n}", w, "") for n, w in meta]
        self.fields += [Field("meta.rv", self.reg_w, ""), Field("meta.hv", 32, "")]
        self.fields += [Field("sm.ingress_port", 9, ""), Field("sm.packet_length", 32, "")]
        self.fields += [Field(f"hdr.h1.{n}", w, "h1") for n, w in self.h1_fields]
        self.fields += [Field(f"hdr.h2.{n}", w, "h2") for n, w in self.h2_fields]
        self.lvalues = [
            f
            for f in self.fields
            if f.path.startswith(("hdr.", "meta."))
            and not f.path.startswith("hdr.eth.etype")
            and not f.path.endswith("pad")
        ]
        sel = r.choice(self.h1_fields[:-1] if len(self.h1_fields) > 1 else self.h1_fields)
        self.h1_select = (sel[0], sel[1], sorted({r.getrandbits(sel[1]) for _ in range(2)}))
        for zone in ("", "h1", "h1", "h2"):
            if r.random() < 0.8:
                self.tables.append(self.make_table(zone))

        src: list[str] = ["#include <core.p4>", "#include <v1model.p4>", ""]
        src.append("header eth_t { bit<48> dst; bit<48> src; bit<16> etype; }")
        for hn, fs in (("h1_t", self.h1_fields), ("h2_t", self.h2_fields)):
            src.append(f"header {hn} {{ {' '.join(f'bit<{w}> {n};' for n, w in fs)} }}")
        src.append("struct headers_t { eth_t eth; h1_t h1; h2_t h2; }")
        mf = " ".join(f"bit<{w}> {n};" for n, w in meta[1:])
        src.append(
            f"struct meta_t {{ @field_list(1) bit<{meta[0][1]}> {meta[0][0]}; {mf} "
            f"bit<{self.reg_w}> rv; bit<32> hv; @field_list(1) bit<8> rc; }}"
        )
        src.append("")
        sname, sw, svals = self.h1_select
        src += [
            "parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {",
            "    state start {",
            "        pkt.extract(hdr.eth);",
            "        transition select(hdr.eth.etype) {",
            f"            16w{ETH_H1}: parse_h1;",
            f"            16w{ETH_H2}: parse_h2;",
            "            default: accept;",
            "        }",
            "    }",
            "    state parse_h1 {",
            "        pkt.extract(hdr.h1);",
            f"        transition select(hdr.h1.{sname}) {{",
            *[f"            {sw}w{v}: parse_h2;" for v in svals],
            "            default: accept;",
            "        }",
            "    }",
            "    state parse_h2 {",
            "        pkt.extract(hdr.h2);",
            "        transition accept;",
            "    }",
            "}",
            "",
            "control VC(inout headers_t hdr, inout meta_t meta) { apply { } }",
            "",
            "control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {",
            f"    register<bit<{self.reg_w}>>({REG_SIZE}) reg;",
            f"    counter({REG_SIZE}, CounterType.packets_and_bytes) ctr;",
        ]
        for t in self.tables:
            src += self.table_source(t)
        src.append("    apply {")
        src.append("        sm.egress_spec = (bit<9>)hdr.eth.dst[1:0];")
        src += self.block("", "        ", r.randint(1, 3), 0, True)
        for zone in ("h1", "h2"):
            src.append(f"        if (hdr.{zone}.isValid()) {{")
            src += self.block(zone, "            ", r.randint(1, 4), 0, True)
            for t in self.tables_for(zone):
                if not t["applied"] and r.random() < 0.7:
                    src += self.apply_table(zone, "            ", 0, t)
            src.append("        }")
        for t in self.tables_for(""):
            if not t["applied"]:
                src += self.apply_table("", "        ", 0, t)
        src.append(f"        if ({self.cond('')}) {{")
        src.append(f"            sm.egress_spec = (bit<9>)({self.expr(2, '')});")
        src.append("        }")
        src.append("    }")
        src.append("}")
        src.append("")
        src.append(
            "control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {"
        )
        src.append("    apply {")
        self.fields.append(Field("sm.egress_port", 9, ""))
        self.fields.append(Field("sm.instance_type", 32, ""))
        src.append("        hdr.eth.src[7:0] = (bit<8>)sm.instance_type;")
        src += self.block("", "        ", r.randint(0, 2), 1, False)
        for zone in ("h1", "h2"):
            if r.random() < 0.5:
                src.append(f"        if (hdr.{zone}.isValid()) {{")
                src += self.block(zone, "            ", r.randint(1, 2), 1, False)
                src.append("        }")
        if r.random() < 0.4:
            self.use_recirc = True
            # BMv2 gives egress instance_type 0 (NORMAL) for a recirculated packet too
            # (simple_switch.cpp ingress_thread): a preserved flag stops the loop; a clone
            # (instance_type 1) starts with rc 0 and would clone and recirculate for ever
            src.append(f"        if (sm.instance_type == 0 && meta.rc == 0 && {self.cond('')}) {{")
            src.append("            meta.rc = 1;")
            src.append(f"            meta.{meta[0][0]} = {self.expr(meta[0][1], '')};")
            src.append("            recirculate_preserving_field_list(1);")
            src.append("        }")
        src.append("    }")
        src.append("}")
        src.append("")
        src.append("control CC(inout headers_t hdr, inout meta_t meta) { apply { } }")
        src.append("control D(packet_out pkt, in headers_t hdr) {")
        src.append("    apply { pkt.emit(hdr.eth); pkt.emit(hdr.h1); pkt.emit(hdr.h2); }")
        src.append("}")
        src.append("")
        src.append("V1Switch(P(), VC(), I(), E(), CC(), D()) main;")
        case = Case(seed=self.seed, source="\n".join(src) + "\n")
        case.registers = ["I.reg"]
        case.counters = [("I.ctr", REG_SIZE)]
        if self.use_clone:
            case.clone_sessions[CLONE_SESSION] = CLONE_PORT
        for t in self.tables:
            if t["const"] or not t["applied"]:
                continue
            for vals, a, args in t["entries"]:
                keys = [(f.path, v, m) for (f, _k), (v, m) in zip(t["keys"], vals, strict=True)]
                case.entries.append(
                    Entry(
                        f"I.{t['name']}",
                        keys,
                        f"I.{a['name']}",
                        args,
                        [f.width for f, _k in t["keys"]],
                    )
                )
        case.packets = [self.packet() for _ in range(r.randint(4, 10))]
        return case

    # ------------------------------------------------------------------ packets

    def packet(self) -> tuple[int, bytes]:
        r = self.r
        vals: dict[str, int] = {}
        # aim at a table entry: its key values go into the packet's fields
        applied = [t for t in self.tables if t["applied"] and t["entries"]]
        if applied and r.random() < 0.8:
            t = r.choice(applied)
            vals_, _a, _args = r.choice(t["entries"])
            for (f, _kind), (v, m) in zip(t["keys"], vals_, strict=True):
                noise = r.getrandbits(f.width)
                if _kind == "lpm":
                    keep = _mask(f.width) ^ _mask(f.width - m)
                    v = (v & keep) | (noise & ~keep & _mask(f.width))
                elif _kind == "ternary":
                    v = (v & m) | (noise & ~m & _mask(f.width))
                vals[f.path] = v
        kind = r.choice(["h1", "h1", "h1h2", "h2", "other"])
        if any(p.startswith("hdr.h2.") for p in vals) and kind in ("h1", "other"):
            kind = "h1h2"
        if any(p.startswith("hdr.h1.") for p in vals) and kind in ("h2", "other"):
            kind = "h1"
        etype = {"h1": ETH_H1, "h1h2": ETH_H1, "h2": ETH_H2, "other": ETH_OTHER}[kind]
        sname, _sw, svals = self.h1_select
        if kind == "h1h2":
            vals[f"hdr.h1.{sname}"] = r.choice(svals)
        dst = vals.get("hdr.eth.dst", r.getrandbits(48))
        src = vals.get("hdr.eth.src", r.getrandbits(48))
        frame = dst.to_bytes(6, "big") + src.to_bytes(6, "big") + etype.to_bytes(2, "big")
        for hn, fs in (("h1", self.h1_fields), ("h2", self.h2_fields)):
            acc, n = 0, 0
            for fname, w in fs:
                v = vals.get(f"hdr.{hn}.{fname}", r.getrandbits(w))
                acc, n = (acc << w) | v, n + w
            frame += acc.to_bytes(n // 8, "big")
        payload = bytes(r.getrandbits(8) for _ in range(r.randint(0, 12)))
        frame += payload
        if r.random() < 0.1:  # a short packet: the parser stops inside a header
            frame = frame[: r.randint(14, len(frame))]
        return r.randrange(PORTS), frame


def generate(seed: int) -> Case:
    return _Gen(seed).program()
