"""Lower a parsed P4_16 v1model program to Python source, compiled once.

Each pipeline block (parser, controls, deparser) becomes one Python function. Actions and
functions are inlined where they are called (a table's actions become an `if aid == k:`
dispatch on the entry's action index), sub-control bodies are spliced where they are
applied, an acyclic parser becomes nested straight-line code (loops keep a state
dispatch), so per packet only generated code runs: no syntax-tree walking.

Run-time representation: bit<N>/int<N>/bool/enum/error values are Python ints (int<N> in
two's complement, masked to N bits after every operation); headers and structs are
instances of generated classes (header fields as class-level defaults, `_v` the validity
bit, `_ex`/`_em` extract and emit through one precompiled struct.Struct); stacks are
`rt.Stack`. `return` inside an inlined body is a `break` out of a one-pass loop, `exit`
raises `rt.Exit` caught at the pipeline block, parser errors raise `rt.ParserError`.

Input is a `p4sim.check.CheckedProgram`: `check()` has already refused every error and
unsupported construct (file:line:column), so lowering only translates. It reads from the
check results the global scope (types, folded constants, externs, actions), the error
codes, the header/struct types, the V1Switch blocks, the resolved type of every written
type, which statements use run-time header-stack indexes and which bodies `return`.
It still derives each expression's Python code and type as it goes (`V`); anything it
cannot translate is a p4sim bug, raised as `LoweringError` (located, never P4TypeError).


Known divergence from BMv2: arithmetic wraps at the operand width before a widening cast,
as the P4 spec says (`(bit<16>)(b4 * 4)` with bit<4> b4 = 5 gives 4); BMv2, from p4c's JSON,
keeps the wide intermediate (20).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

from p4sim import externs as registry
from p4sim.check import CheckedProgram
from p4sim.check.blocks import key_text
from p4sim.check.controlplane import field_ids
from p4sim.check.decls import cp_name
from p4sim.check.names import Sym
from p4sim.check.types import (
    BOOL,
    INT,
    VOID,
    TBits,
    TBool,
    TEnum,
    TError,
    TExtern,
    TInt,
    TNamedBlock,
    TStack,
    TStruct,
    TVarbit,
    TVoid,
    Type,
    mask,
    width_of,
)
from p4sim.frontend import ast
from p4sim.frontend.errors import NO_SPAN, P4SourceError
from p4sim.model import (
    ActionInfo,
    ActionRef,
    ControllerHeaderField,
    ControllerHeaderInfo,
    Exact,
    KeyField,
    Lpm,
    Optional_,
    Param,
    ProgramModel,
    Range,
    TableEntry,
    TableInfo,
    Ternary,
    ValueSetInfo,
)
from p4sim.spec import ActionSpec, ExternSpec, TableSpec

from .env import Env

# ---------------------------------------------------------------------------- errors


class LoweringError(P4SourceError):
    """Lowering met something `p4sim.check` should have refused: a p4sim bug, still located
    (the user sees one line, not a traceback). Lowering raises nothing else: every error
    in a program is found by `p4sim.check.check()` before lowering starts."""


def bug(msg: str, node: ast.Node | None) -> LoweringError:
    return LoweringError(f"internal error (p4sim's checker let this through): {msg}",
                         node.span if node is not None else NO_SPAN)


# ---------------------------------------------------------------------------- values


@dataclass
class V:
    """A lowered expression: Python code, its P4 type, and its value when constant."""

    code: str
    type: Type
    const: Any = None  # int/bool when known at compile time

    @property
    def is_const(self) -> bool:
        return self.const is not None


def _pyid(name: str) -> str:
    """ASCII stand-in for a name in a generated local (uid() appends a unique counter)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


_ASCII_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def mangle(prefix: str, name: str) -> str:
    """The Python identifier standing for P4 name `name` (injective for a given prefix).

    Every P4 name reaches generated code only through here, so no P4 identifier can be a
    Python keyword or builtin (`class`, `None`, `int`) or one of p4sim's own attributes
    (`_v`, `copy`, `_ex`): those never start with `<prefix>_` or `<prefix>U_`. Non-ASCII names are
    spelt out in ASCII (`_` doubled, other characters `_x<hex>_`), because Python
    NFKC-normalises identifiers and would make `aｘ` the same name as `ax`.
    """
    if _ASCII_ID.match(name):
        return f"{prefix}_{name}"
    enc = "".join(ch if ch.isascii() and ch.isalnum() else "__" if ch == "_" else f"_x{ord(ch):x}_"
                  for ch in name)
    return f"{prefix}U_{enc}"


def fld(name: str) -> str:
    """Attribute of a header/struct field."""
    return mangle("f", name)


def vbw(code: str) -> str:
    """Attribute holding the current width of the varbit field accessed by `code` (`x.f_v`)."""
    base, _, attr = code.rpartition(".")
    return f"{base}.w{attr}"


@dataclass
class Pipeline:
    """Names of the generated entry points."""

    parser: str = ""
    verify: str = ""
    ingress: str = ""
    egress: str = ""
    compute: str = ""
    deparser: str = ""
    new_hdr: str = ""
    new_meta: str = ""
    new_sm: str = ""
    field_lists: dict[int, str] = field(default_factory=dict)  # index -> copy function


HDR_OBJ = "\x00"  # stands for the header object in extract/emit templates (never in generated names)

_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")
_PURE_KEY = re.compile(r"[\w.\s()&|^~<>+\-*]*$")  # key code that cannot raise: no subscript, division, comma


class _Fn:
    """State while generating one Python function."""

    def __init__(self, lines: list[str], ind: int, counter: list[int]):
        self.lines = lines
        self.counter = counter
        self.ind = ind
        self.n = 0
        self.once_stack: list[V | None] = []  # return-value var (and type) of the inlined body
        self.in_parser = False
        self.in_action = 0  # depth of action bodies being inlined
        self.packet: str | None = None  # Python name of the packet_in/out param
        self.packet_kind = ""
        self.sm: str | None = None  # Python expr of standard_metadata, when in scope
        self.control_level_return = True
        self.parser_states: dict[str, int] = {}
        self.parser_inline: tuple | None = None  # (states by name, parser scope) when inlined
        self.parser_ret = "off"  # what a parser function returns (a sub-parser adds its outs)
        # enclosing for loops of the current inlined body: the flag var a `return` inside the
        # loop sets before its `break` (None until a return needs one)
        self.loops: list[list[str | None]] = []

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.ind + line)

    def tmp(self, base: str = "t") -> str:
        # unique across the program's functions: sub-control bodies get spliced
        self.counter[0] += 1
        return f"_{base}{self.counter[0]}"


class Compiler:
    """Translates a `CheckedProgram`: names, types and constants of the declarations come
    from the checker (its global scope, struct types, error codes, resolved type nodes)."""

    def __init__(self, checked: CheckedProgram, source: str, parser_inline_limit: int = 400):
        self.checked = checked
        # states an acyclic parser may be inlined into (a tree: states on several paths are
        # copied); 0 keeps every parser a state dispatch, no state copied (the compiled
        # backend's emission: gcc's time on one huge function grows faster than linearly)
        self.parser_inline_limit = parser_inline_limit
        self.program = checked.program
        self.source = source
        self.g = checked.g  # check's global scope (what a name resolved to there is global)
        self.genv = Env()  # lowering's own global bindings (top-level extern instances)
        self.errors: dict[str, int] = checked.errors
        self.model = ProgramModel(source=source)
        self.classes: list[str] = []
        self.funcs: list[str] = []
        self.tables: list[TableSpec] = []
        self.externs: list[ExternSpec] = []
        self.struct_types: dict[str, TStruct] = checked.struct_types
        for t in self.struct_types.values():
            # the generated class of each header/struct/union type (P4 names mangled)
            t.pycls = mangle("H" if t.kind == "header" else "S", t.name)
        self.gen_classes: set[str] = set()
        self.pipeline = Pipeline()
        self.n = 0
        self.value_sets: list[tuple[str, str, int]] = []  # (py, cp name, size)
        self.cp_names: set[str] = set()
        self.std_meta_type: TStruct | None = None
        self.inline_bodies: dict[str, tuple[list[str], list[str], list[str]]] = {}
        self.tmp_counter = [0]
        # id(index expression) -> the temporary hoist_call_indexes moved it into
        self.index_memo: dict[int, V] = {}
        self.meta_type: TStruct | None = None
        self.hdr_type: TStruct | None = None
        # fixed-size headers: (bytes, extract lines, emit values) with `_H` for the header,
        # so the parser and deparser inline them instead of calling _ex/_em per header
        self.header_io: dict[str, tuple[int, list[str], list[str]]] = {}
        # P4Info as p4c's front end leaves it: tables never applied are removed
        # (RemoveAllUnusedDeclarations), and with them the actions only they used
        self.applied_tables: set[str] = set()
        self.action_users: dict[str, set[str | None]] = {}  # action -> tables (None: a call)
        # control-plane prefix of the block instance being lowered: where check's results
        # differ between instances (CheckedProgram.inst_values), this instance's are read
        self.inst = ""

    def uid(self, base: str) -> str:
        self.n += 1
        return f"{_pyid(base)}_{self.n}"

    def sym(self, n: ast.Name, env: Env) -> Sym:
        """What name n stands for at this site: the declaration check resolved it to
        (`CheckedProgram.names`), bound by lowering here, or a global of check's scope."""
        cs = self.checked.names.get(id(n))
        if cs is None:
            raise bug(f"a name the checker never resolved: '{n.name}'", n)
        here = env.find(cs.decl) if cs.decl is not None else None
        if here is not None:
            return here
        if self.g.names.get(cs.name) is not cs:
            raise bug(f"'{n.name}' has no binding here", n)
        return cs

    def global_scope(self, sym: Sym) -> bool:
        """Whether an action/function symbol is a top-level one (check's global scope)."""
        return sym.scope is None or sym.scope is self.g

    def body_env(self, sym: Sym) -> Env:
        """Where an action/function body's names live: its control's env, or the global one."""
        return self.genv if self.global_scope(sym) else sym.scope  # type: ignore[return-value]

    # ======================================================================= program

    def compile(self) -> str:
        for d in self.program.declarations:
            # the only top-level declarations with run-time state of their own
            if isinstance(d, ast.Instantiation) and isinstance(self.resolve_type(d.type, self.g), TExtern):
                self.instantiation(d, self.genv, None, "")  # type: ignore[arg-type]
        self.compile_main(self.checked.main)
        self.drop_unused_from_model()
        out = [
            "# generated by p4sim.lower.codegen from " + self.source,
            "import struct as _struct",
            "from p4sim.lower.rt import Exit, ParserError, AssertFailed, Stack, VarbitBox, sx, ONCE, pack",
            "from p4sim.lower.rt import csum_fold as _csum_fold",
            "",
        ]
        return "\n".join(out + self.classes + self.funcs) + "\n"

    # ------------------------------------------------------------------ declarations

    def drop_unused_from_model(self) -> None:
        """Leave out of the control-plane model what p4c's front end removes before P4Info
        is generated (frontends/p4/unusedDeclarations.cpp: "Table t is not used; removing",
        then the actions nothing references any more). The tables still exist in the
        generated code; only the control plane no longer sees them."""
        m = self.model
        for tname in [t for t in m.tables if t not in self.applied_tables]:
            del m.tables[tname]
            for objs in (m.direct_counters, m.direct_meters):
                for k, info in list(objs.items()):
                    if info.table == tname:
                        objs[k] = dataclasses.replace(info, table=None)
        for aname, users in self.action_users.items():
            if aname in m.actions and not any(u is None or u in m.tables for u in users):
                del m.actions[aname]

    def declare_const(self, d: ast.ConstDecl, scope: Env) -> None:
        t = self.resolve_type(d.type, scope)
        v = self.expr(d.value, scope, None)
        v = self.convert(v, t)
        scope.add(Sym("const", d.name, d, t, py=v.code, value=v.const))

    def const_eval(self, e: ast.Expression, scope: Env) -> int:
        """The value check folded e to (in this instance's scope, if instances differ)."""
        c = self.checked.value(e, self.inst)
        if c is None or c[1] is None:
            raise bug("expected a compile-time constant", e)
        return int(c[1])  # type: ignore[call-overload]

    # ------------------------------------------------------------------ types

    def resolve_type(self, t: ast.Type, scope: Env) -> Type:
        """The type check resolved for this type node (this instance's, where a width comes
        from a constructor parameter)."""
        r = self.checked.type_of(t, self.inst)
        if r is None:
            raise bug("a type the checker never resolved", t)
        return r

    # ------------------------------------------------------------------ classes

    def gen_class(self, t: Type) -> None:
        if isinstance(t, TStack):
            self.gen_class(t.elem)
            return
        if not isinstance(t, TStruct) or t.pycls in self.gen_classes:
            return
        self.gen_classes.add(t.pycls)
        for _, ft in t.fields:
            self.gen_class(ft)
        slots = []
        init = []
        for pname, ft in t.fields:
            fname = fld(pname)
            slots.append(fname)
            init.append(f"self.{fname} = {self.default_value(ft)}")
            if isinstance(ft, TVarbit):
                slots.append("w" + fname)
                init.append(f"self.w{fname} = 0")
        if t.kind == "header":
            slots.insert(0, "_v")
            init.insert(0, "self._v = False")
        c = self.classes
        c.append(f"class {t.pycls}:")
        if t.kind == "header":
            # headers have only scalar fields: class-level defaults make creating one
            # (every header of every packet) a bare object allocation; writes go to the
            # instance dict, reads of untouched fields find the class default
            c.append(f"    _p4fields = {tuple(slots)!r}")
            for line in init:
                c.append("    " + line.replace("self.", "", 1))
            c.append("    def copy(self):")
            c.append(f"        o = {t.pycls}.__new__({t.pycls})")
            c.append("        o.__dict__.update(self.__dict__)")
            c.append("        return o")
            self.gen_header_io(t)
            c.append("")
            return
        # structs: scalar fields as class defaults, nested headers/structs/stacks built per instance
        nested = [(f, ft) for f, ft in t.fields if isinstance(ft, (TStruct, TStack))]
        c.append(f"    _p4fields = {tuple(slots)!r}")
        if t.kind == "union":
            # a union is valid when a member is; clearing it clears every member (a stack of
            # unions, push_front/pop_front and the deparser treat it like a header)
            members = [fld(f) for f, _ in t.fields]
            c.append("    @property")
            c.append("    def _v(self):")
            c.append(f"        return {' or '.join(f'self.{m}._v' for m in members) or 'False'}")
            c.append("    @_v.setter")
            c.append("    def _v(self, valid):")
            c.append("        if not valid:")
            for m in members:
                c.append(f"            self.{m}._v = False")
            if not members:
                c.append("            pass")
        for fname, ft in t.fields:
            if not isinstance(ft, (TStruct, TStack)):
                c.append(f"    {fld(fname)} = {self.default_value(ft)}")
                if isinstance(ft, TVarbit):
                    c.append(f"    w{fld(fname)} = 0")
        if nested:
            c.append("    def __init__(self):")
            for fname, ft in nested:
                c.append(f"        self.{fld(fname)} = {self.default_value(ft)}")
        c.append("    def copy(self):")
        c.append(f"        o = {t.pycls}.__new__({t.pycls})")
        c.append("        o.__dict__.update(self.__dict__)")
        for fname, _ in nested:
            c.append(f"        o.{fld(fname)} = self.{fld(fname)}.copy()")
        c.append("        return o")
        if t.kind == "header":
            self.gen_header_io(t)
        c.append("")

    def gen_header_io(self, t: TStruct) -> None:
        """extract/emit methods: one int.from_bytes / to_bytes per header."""
        c = self.classes
        fields = t.fields
        var = [f for f, ft in fields if isinstance(ft, TVarbit)]
        if not var:
            self.gen_fixed_header_io(t)
        else:
            # header with one varbit field: the extract length (bits) comes at run time
            vf = var[0]
            maxw = next(ft.width for f, ft in fields if f == vf)
            fixed = width_of(t)
            # BMv2's checks, in its order (bm_sim/parser.cpp, extract_VL): a length that is not
            # a whole number of bytes, then too few bytes left, then longer than the field
            c.append("    def _ex(self, buf, off, vlen):")
            c.append(f"        if vlen % 8: raise ParserError({self.errors.get('ParserInvalidArgument', 6)})")
            c.append(f"        nb = ({fixed} + vlen) // 8")
            c.append("        end = off + nb")
            c.append("        if end > len(buf): raise ParserError(1)")
            c.append(f"        if vlen > {maxw}: raise ParserError({self.errors.get('HeaderTooShort', 4)})")
            c.append("        v = int.from_bytes(buf[off:end], 'big')")
            c.append(f"        shift = {fixed} + vlen")
            for fname, ft in fields:
                if fname == vf:
                    c.append("        shift -= vlen")
                    c.append(f"        self.{fld(fname)} = (v >> shift) & ((1 << vlen) - 1)")
                    c.append(f"        self.w{fld(fname)} = vlen")
                else:
                    w = width_of(ft)
                    c.append(f"        shift -= {w}")
                    c.append(f"        self.{fld(fname)} = (v >> shift) & {mask(w)}")
            c.append("        self._v = True")
            c.append("        return end")
            c.append("    def _em(self):")
            c.append("        v = 0")
            c.append("        n = 0")
            for fname, ft in fields:
                if fname == vf:
                    c.append(f"        v = (v << self.w{fld(fname)}) | self.{fld(fname)}")
                    c.append(f"        n += self.w{fld(fname)}")
                else:
                    w = width_of(ft)
                    c.append(f"        v = (v << {w}) | self.{fld(fname)}")
                    c.append(f"        n += {w}")
            c.append("        return v.to_bytes(n // 8, 'big')")

    def gen_fixed_header_io(self, t: TStruct) -> None:
        """extract/emit through one precompiled struct.Struct per header.

        Fields are grouped into byte-aligned chunks; a chunk is read as one or more
        big-endian machine words (B/H/I/Q), so no arithmetic on wide ints is needed
        except to split sub-byte fields out of their chunk.
        """
        c = self.classes
        fields = [(fld(f), ft) for f, ft in t.fields]  # (attribute, type)
        if width_of(t) % 8:
            # p4c's BMv2 back end pads such a header to whole bytes with a trailing field:
            # the pad bits are read with the header and written back with it
            fields.append(("_p4pad", TBits(8 - width_of(t) % 8)))
            c.append("    _p4pad = 0")
        total = sum(width_of(ft) for _, ft in fields)
        nbytes = total // 8
        chunks: list[list[tuple[str, Type]]] = []
        cur: list[tuple[str, Type]] = []
        bits = 0
        for fname, ft in fields:
            cur.append((fname, ft))
            bits += width_of(ft)
            if bits % 8 == 0:
                chunks.append(cur)
                cur, bits = [], 0
        fmt = ">"
        ex: list[str] = []
        em_vals: list[str] = []
        idx = 0
        for ch in chunks:
            cw = sum(width_of(ft) for _, ft in ch)
            words: list[tuple[str, int]] = []
            left = cw // 8
            for code, n in (("Q", 8), ("I", 4), ("H", 2), ("B", 1)):
                while left >= n:
                    words.append((code, n))
                    left -= n
            fmt += "".join(code for code, _ in words)
            # chunk value from its words (most significant first)
            parts = []
            sh = cw
            for k, (_, n) in enumerate(words):
                sh -= n * 8
                parts.append(f"(_t[{idx + k}] << {sh})" if sh else f"_t[{idx + k}]")
            cval = parts[0] if len(parts) == 1 else "(" + " | ".join(parts) + ")"
            if len(ch) == 1:
                fname, ft = ch[0]
                ex.append(f"{HDR_OBJ}.{fname} = {'bool(' + cval + ')' if isinstance(ft, TBool) else cval}")
            else:
                ex.append(f"_c = {cval}")
                sh = cw
                for fname, ft in ch:
                    w = width_of(ft)
                    sh -= w
                    e = f"(_c >> {sh})" if sh else "_c"
                    if sh + w < cw:
                        e = f"({e} & {mask(w)})"
                    ex.append(f"{HDR_OBJ}.{fname} = {'bool(' + e + ')' if isinstance(ft, TBool) else e}")
            # emission: rebuild the chunk value, split into its words
            sh = cw
            terms = []
            for fname, ft in ch:
                w = width_of(ft)
                sh -= w
                terms.append(f"({HDR_OBJ}.{fname} << {sh})" if sh else f"{HDR_OBJ}.{fname}")
            if len(words) == 1:
                em_vals.append(" | ".join(terms))
            else:
                val = "(" + " | ".join(terms) + ")"
                sh = cw
                for _, n in words:
                    sh -= n * 8
                    em_vals.append(f"(({val} >> {sh}) & {mask(n * 8)})" if sh else f"({val} & {mask(n * 8)})")
            idx += len(words)
        c.append(f"    _S = _struct.Struct({fmt!r})")
        c.append("    def _ex(self, buf, off):")
        c.append(f"        end = off + {nbytes}")
        c.append("        if end > len(buf): raise ParserError(1)")
        if chunks:
            c.append("        _t = self._S.unpack_from(buf, off)")
        for line in ex:
            c.append("        " + line.replace(HDR_OBJ, "self"))
        c.append("        self._v = True")
        c.append("        return end")
        c.append("    def _em(self):")
        c.append(f"        return self._S.pack({', '.join(em_vals).replace(HDR_OBJ, 'self')})")
        c.append(f"    _bits = {total}")
        if chunks:
            # module-level Struct (one global lookup) for the inlined forms
            c.append(f"_S_{t.pycls} = {t.pycls}._S")
            # the header object is the HDR_OBJ placeholder, which no generated name contains
            # (a text replace of `_H.` also rewrote `_S_H_H.unpack_from` for a header named H)
            inline_ex = [f"_t = _S_{t.pycls}.unpack_from(buf, off)"] + ex
            self.header_io[t.pycls] = (nbytes, inline_ex, em_vals)

    def default_value(self, t: Type) -> str:
        if isinstance(t, TBool):
            return "False"
        if isinstance(t, TStruct):
            self.gen_class(t)
            return f"{t.pycls}()"
        if isinstance(t, TStack):
            self.gen_class(t.elem)
            assert isinstance(t.elem, TStruct)
            return f"Stack([{t.elem.pycls}() for _ in range({t.size})])"
        if isinstance(t, TEnum) and t.underlying is None:
            return "0"
        return "0"

    # ------------------------------------------------------------------ control-plane names

    @staticmethod
    def cp_name(prefix: str, d: ast.Node, default: str | None = None) -> str:
        return cp_name(prefix, d, default)  # check's (p4sim.check.decls): the same names

    @staticmethod
    def annotations_text(d: ast.Node) -> tuple[str, ...]:
        if not isinstance(d, ast.Annotated):
            return ()
        return tuple(a.text() for a in d.annotations if a.name not in ("name", "id"))

    def value_set_matches(self, t: Type, d: ast.Node) -> tuple[KeyField, ...]:
        """P4Info match fields of a value set (p4c P4RuntimeAnalyzer::addValueSet)."""
        if isinstance(t, TBits):
            return (KeyField("", "exact", t.width, 1),)
        if isinstance(t, TStruct) and t.kind == "struct":
            anns = [t.annotations.get(f, []) for f, _ in t.fields]
            out = []
            for (fname, ft), fa, fid in zip(t.fields, anns, self.field_ids(anns, d), strict=True):
                m = next((a for a in fa if a.name == "match"), None)
                kind = "exact"
                if m is not None and m.exprs and isinstance(m.exprs[0], ast.Name):
                    kind = m.exprs[0].name
                out.append(KeyField(fname, kind, width_of(ft), fid))
            return tuple(out)
        raise bug(f"value_set of {t.show()} (P4Runtime takes bit<W> or a struct of them)", d)

    def field_ids(self, items: list, owner: ast.Node) -> list[int]:
        """P4Runtime ids of an object's fields (items: annotated nodes or annotation lists),
        honouring @id as p4c does (p4sim.check.controlplane.field_ids)."""
        user: list[int | None] = []
        for it in items:
            anns = it if isinstance(it, list) else getattr(it, "annotations", [])
            a = next((x for x in anns if x.name == "id"), None)
            user.append(a.int_value() if a is not None else None)
        try:
            return field_ids(user)
        except ValueError as e:
            raise bug(str(e), owner) from None

    @staticmethod
    def ann_id(d: ast.Node) -> int | None:
        if isinstance(d, ast.Annotated):
            a = d.annotation("id")
            if a is not None:
                return a.int_value()
        return None

    # ======================================================================= main

    def compile_main(self, inst: ast.Instantiation) -> None:
        """The V1Switch package: its six blocks as check found them (declaration, control-plane
        prefix, constructor arguments)."""
        ck = self.checked
        self.hdr_type, self.meta_type, self.std_meta_type = ck.hdr_type, ck.meta_type, ck.std_meta_type
        for t_ in (self.hdr_type, self.meta_type, self.std_meta_type):
            self.gen_class(t_)
        p, *controls = ck.blocks
        pl = self.pipeline
        pl.new_hdr, pl.new_meta, pl.new_sm = (self.hdr_type.pycls, self.meta_type.pycls,
                                              self.std_meta_type.pycls)
        pl.parser = self.compile_parser(p[0].decl, p[1], p[2], arg_scope=self.genv)  # type: ignore[arg-type]
        names = [self.compile_control(sym.decl, prefix, args, top=True)  # type: ignore[arg-type]
                 for sym, prefix, args in controls]
        pl.verify, pl.ingress, pl.egress, pl.compute, pl.deparser = names
        self.gen_field_lists()
        self.gen_controller_headers()

    def gen_field_lists(self) -> None:
        """One copy function per @field_list index of the user metadata."""
        meta = self.meta_type
        lists: dict[int, list[str]] = {}

        def walk(t: TStruct, path: str) -> None:
            for fname, ft in t.fields:
                p = f"{path}.{fld(fname)}"
                for a in t.annotations.get(fname, []):
                    if a.name == "field_list" and a.exprs:
                        for e in a.exprs:
                            idx = self.const_eval(e, self.g)
                            lists.setdefault(idx, []).append(p)
                if isinstance(ft, TStruct) and ft.kind == "struct":
                    walk(ft, p)

        assert isinstance(meta, TStruct)
        walk(meta, "")
        for idx, paths in sorted(lists.items()):
            fn = f"_field_list_{idx}"
            self.funcs.append(f"def {fn}(src, dst):")
            for p in paths:
                self.funcs.append(f"    dst{p} = src{p}")
            self.funcs.append("")
            self.pipeline.field_lists[idx] = fn

    def gen_controller_headers(self) -> None:
        for t in self.struct_types.values():
            if t.kind != "header" or t.decl is None:
                continue
            a = t.decl.annotation("controller_header") if isinstance(t.decl, ast.Annotated) else None
            if a is None:
                continue
            kind = a.string_value() or ""
            fids = self.field_ids([t.annotations.get(f, []) for f, _ in t.fields], t.decl)
            fields = tuple(ControllerHeaderField(f, width_of(ft), fid)
                           for (f, ft), fid in zip(t.fields, fids, strict=True))
            # p4c's symbol is the header type (its control-plane name gives the id); the
            # P4Info preamble is then named after the annotation's value (see p4info.py)
            self.model.controller_headers[kind] = ControllerHeaderInfo(
                name=self.cp_name("", t.decl), id=self.ann_id(t.decl),
                annotations=self.annotations_text(t.decl), kind=kind, fields=fields)
            self.gen_class(t)

    # ======================================================================= parser

    def bind_params(self, params: list[ast.Parameter], scope: Env, fn: _Fn,
                    pynames: list[str]) -> None:
        for p, py in zip(params, pynames, strict=True):
            t = self.resolve_type(p.type, scope)
            if isinstance(t, TExtern) and t.name in ("packet_in", "packet_out"):
                scope.add(Sym("packet", p.name, p, t, py=py))
                fn.packet = py
                fn.packet_kind = t.name
                continue
            if t is self.std_meta_type or (isinstance(t, TStruct) and t.name == "standard_metadata_t"):
                fn.sm = py
            scope.add(Sym("var", p.name, p, t, py=py, extra={"dir": p.direction}))

    def bind_ctor_args(self, d: ast.ParserDecl | ast.ControlDecl, ctor_args: list[ast.Argument],
                       scope: Env, arg_scope: Env | None) -> None:
        """Constructor parameters of a parser/control instance: a control, parser or extern
        instance passed by name is bound to that instance; a value parameter to its constant."""
        for p, a in zip(d.ctor_params, ctor_args, strict=True):
            pt = self.resolve_type(p.type, scope)
            e = a.value
            if isinstance(pt, (TNamedBlock, TExtern)):
                sym = self.sym(e, arg_scope)
                scope.add(Sym(sym.kind, p.name, p, sym.type, py=sym.py, value=sym.value, extra=sym.extra))
            else:
                v = self.convert(self.expr(e, arg_scope or self.genv, None), pt)
                scope.add(Sym("const", p.name, p, pt, py=v.code, value=v.const))

    def compile_parser(self, d: ast.ParserDecl, prefix: str, ctor_args: list[ast.Argument],
                       sub: bool = False, arg_scope: Env | None = None) -> str:
        outer, self.inst = self.inst, prefix
        try:
            return self._compile_parser(d, prefix, ctor_args, sub, arg_scope)
        finally:
            self.inst = outer

    def _compile_parser(self, d: ast.ParserDecl, prefix: str, ctor_args: list[ast.Argument],
                        sub: bool, arg_scope: Env | None) -> str:
        fname = "P_" + self.uid(d.name)
        lines: list[str] = []
        fn = _Fn(lines, 1, self.tmp_counter)
        fn.in_parser = True
        scope = Env(self.genv)
        self.bind_ctor_args(d, ctor_args, scope, arg_scope)
        if sub:
            # a sub-parser: (buf, off, its other params) -> new offset; errors propagate
            pys = ["buf"] + [mangle("p", p.name) for p in d.params[1:]]
            outs = []
            for p, py in zip(d.params[1:], pys[1:], strict=True):
                pt = self.resolve_type(p.type, scope)
                if p.direction in ("out", "inout") and not isinstance(pt, (TStruct, TStack)):
                    outs.append(py)  # scalar out/inout: returned after the offset
            if outs:
                fn.parser_ret = f"(off, {', '.join(outs)})"
            self.bind_params(d.params, scope, fn, pys)
            head = f"def {fname}({', '.join(['buf', 'off'] + pys[1:])}):"
        else:
            pys = ["buf", "hdr", "meta", "sm"]
            self.bind_params(d.params, scope, fn, pys)
            fn.sm = "sm"
            head = f"def {fname}(buf, hdr, meta, sm):"
            fn.emit("off = 0")
        fn.emit("_blen = len(buf)")  # the inlined extracts' length checks
        for loc in d.locals:
            self.local_decl(loc, scope, fn, prefix)
        states = {s.name: i for i, s in enumerate(d.states)}
        fn.parser_states = states
        for s in d.states:
            scope.add(Sym("state", s.name, s))
        by_name = {s.name: s for s in d.states}
        inline = self.inline_size(by_name, self.parser_inline_limit) is not None
        fn.emit("try:")
        fn.ind += 1
        if inline:
            # an acyclic parser becomes straight-line nested code: no state dispatch
            fn.parser_inline = (by_name, scope)
            self.emit_state(by_name["start"], scope, fn)
            fn.ind -= 1
        else:
            fn.emit(f"st = {states['start']}")
            fn.emit("while True:")
            fn.ind += 1
            for i, s in enumerate(d.states):
                fn.emit(f"{'if' if i == 0 else 'elif'} st == {i}:  # state {s.name}")
                fn.ind += 1
                self.emit_state(s, scope, fn)
                fn.ind -= 1
            fn.ind -= 2
        if sub:
            fn.emit("finally:")
            fn.emit("    pass")
        else:
            fn.emit("except ParserError as e:")
            fn.emit(f"    sm.{fld('parser_error')} = e.code")
        fn.emit(f"return {fn.parser_ret}")
        self.funcs.append(head)
        self.funcs.extend(lines)
        self.funcs.append("")
        return fname

    @staticmethod
    def inline_size(states: dict[str, ast.ParserState], limit: int = 400) -> int | None:
        """Code copies needed to inline every path of the state graph; None if it loops
        (header stacks) or would grow past `limit` states."""
        memo: dict[str, int] = {}
        onpath: set[str] = set()

        def targets(st: ast.ParserState) -> list[str]:
            tr = st.transition
            if tr is None:
                return []
            if isinstance(tr.target, ast.Name):
                return [tr.target.name]
            return [c.state.name for c in tr.target.cases]

        def size(name: str) -> int | None:
            if name in ("accept", "reject") or name not in states:
                return 0
            if name in memo:
                return memo[name]
            if name in onpath:
                return None
            onpath.add(name)
            total = 1
            for t in targets(states[name]):
                n = size(t)
                if n is None:
                    return None
                total += n
                if total > limit:
                    return None
            onpath.discard(name)
            memo[name] = total
            return total

        return size("start")

    def emit_state(self, s: ast.ParserState, scope: Env, fn: _Fn) -> None:
        fn.emit(f"# state {s.name}")
        sscope = Env(scope)
        for stmt in s.statements:
            self.stmt(stmt, sscope, fn)
        self.transition(s, sscope, fn)

    def goto(self, target: str, fn: _Fn, node: ast.Node) -> None:
        if target == "accept":
            fn.emit(f"return {fn.parser_ret}")
        elif target == "reject":
            fn.emit(f"return {fn.parser_ret}  # reject: BMv2 goes on to ingress with parser_error set")
        elif fn.parser_inline is not None and target in fn.parser_inline[0]:
            by_name, pscope = fn.parser_inline
            self.emit_state(by_name[target], pscope, fn)
        elif target in fn.parser_states:
            fn.emit(f"st = {fn.parser_states[target]}")
            fn.emit("continue")
        else:
            raise bug(f"unknown parser state '{target}'", node)

    def transition(self, s: ast.ParserState, scope: Env, fn: _Fn) -> None:
        tr = s.transition
        if tr is None:
            self.goto("reject", fn, s)
            return
        if isinstance(tr.target, ast.Name):
            self.goto(tr.target.name, fn, tr.target)
            return
        sel = tr.target
        vals = [self.expr(e, scope, fn) for e in sel.exprs]
        keyvars = []
        for v in vals:
            if v.is_const:
                keyvars.append(v)
            else:
                k = fn.tmp("k")
                fn.emit(f"{k} = {v.code}")
                keyvars.append(V(k, v.type))
        first = True
        has_default = False
        for case in sel.cases:
            ks = case.keyset
            elems = ks.elements if isinstance(ks, ast.TupleKeyset) else [ks]
            if isinstance(ks, ast.DefaultKeyset) or isinstance(ks, ast.DontCare):
                elems = [ks] * len(keyvars)
            vsym = self.sym(ks, scope) if isinstance(ks, ast.Name) and len(keyvars) > 1 else None
            if vsym is not None and vsym.kind == "value_set":
                # a value set over the whole select tuple: its members are value/mask pairs
                # over the keys concatenated (BMv2's parse_vsets match the bytes so)
                shift, parts = 0, []
                for kv in reversed(keyvars):
                    parts.append(f"({kv.code} << {shift})" if shift else f"{kv.code}")
                    shift += width_of(kv.type)
                fn.emit(f"{'if' if first else 'elif'} {vsym.py}.match({' | '.join(reversed(parts))}):")
                first = False
                fn.ind += 1
                self.goto(case.state.name, fn, case.state)
                fn.ind -= 1
                continue
            conds = []
            for el, kv in zip(elems, keyvars, strict=True):
                c = self.keyset_cond(el, kv, scope, fn)
                if c is not None:
                    conds.append(c)
            cond = " and ".join(conds) if conds else "True"
            if cond == "True":
                if first:
                    self.goto(case.state.name, fn, case.state)
                else:
                    fn.emit("else:")
                    fn.ind += 1
                    self.goto(case.state.name, fn, case.state)
                    fn.ind -= 1
                has_default = True
                break
            fn.emit(f"{'if' if first else 'elif'} {cond}:")
            first = False
            fn.ind += 1
            self.goto(case.state.name, fn, case.state)
            fn.ind -= 1
        if not has_default:
            fn.emit(f"raise ParserError({self.errors.get('NoMatch', 2)})")

    def keyset_cond(self, el: ast.Expression, kv: V, scope: Env, fn: _Fn) -> str | None:
        if isinstance(el, (ast.DefaultKeyset, ast.DontCare)):
            return None
        if isinstance(el, ast.MaskKeyset):
            v = self.convert(self.expr(el.value, scope, fn), kv.type)
            m = self.convert(self.expr(el.mask, scope, fn), kv.type)
            if v.is_const and m.is_const:
                return f"({kv.code} & {m.const}) == {v.const & m.const}"
            return f"({kv.code} & {m.code}) == ({v.code} & {m.code})"
        if isinstance(el, ast.RangeKeyset):
            lo = self.convert(self.expr(el.low, scope, fn), kv.type)
            hi = self.convert(self.expr(el.high, scope, fn), kv.type)
            return f"{lo.code} <= {kv.code} <= {hi.code}"
        if isinstance(el, ast.Name):
            sym = self.sym(el, scope)
            if sym.kind == "value_set":
                return f"{sym.py}.match({kv.code})"
        v = self.convert(self.expr(el, scope, fn), kv.type)
        return f"{kv.code} == {v.code}"

    # ======================================================================= controls

    def compile_control(self, d: ast.ControlDecl, prefix: str, ctor_args: list[ast.Argument],
                        top: bool = False, arg_scope: Env | None = None) -> str:
        outer, self.inst = self.inst, prefix
        try:
            return self._compile_control(d, prefix, ctor_args, top, arg_scope)
        finally:
            self.inst = outer

    def _compile_control(self, d: ast.ControlDecl, prefix: str, ctor_args: list[ast.Argument],
                         top: bool, arg_scope: Env | None) -> str:
        fname = "C_" + self.uid(prefix)
        lines: list[str] = []
        fn = _Fn(lines, 1, self.tmp_counter)
        scope = Env(self.genv)
        self.bind_ctor_args(d, ctor_args, scope, arg_scope if arg_scope is not None else self.genv)
        pys = []
        for p in d.params:
            pt = self.resolve_type(p.type, scope)
            if isinstance(pt, TExtern) and pt.name == "packet_out":
                pys.append("_out")
            elif top:
                pys.append(mangle("p", p.name))
            else:
                self.n += 1
                pys.append(f"p{self.n}_{_pyid(p.name)}")  # unique: the body may be spliced
        self.bind_params(d.params, scope, fn, pys)
        outs = []
        for p, py in zip(d.params, pys, strict=True):
            pt = self.resolve_type(p.type, scope)
            if p.direction in ("out", "inout") and not isinstance(pt, (TStruct, TStack, TExtern)):
                outs.append(py)
        for loc in d.locals:
            self.local_decl(loc, scope, fn, prefix)
        body_start = len(lines)
        has_ret = self.checked.has_return(d.apply)
        wrap = bool(outs) or (has_ret and not top)
        if wrap:
            fn.emit("for _ in ONCE:")
            fn.ind += 1
            fn.once_stack.append(None)
        self.block(d.apply, scope, fn)
        if wrap:
            fn.once_stack.pop()
            fn.ind -= 1
        if len(lines) == body_start:
            fn.emit("pass")
        if not top:
            # callers splice this body in place of a call (see call_control)
            self.inline_bodies[fname] = (pys, list(lines), outs)
        if outs:
            fn.emit(f"return ({', '.join(outs)},)")
        head = [f"def {fname}({', '.join(pys)}):"]
        if top:
            # `exit` unwinds to here
            inner = ["    try:"] + ["    " + ln for ln in lines] + ["    except Exit:", "        pass"]
            lines[:] = inner
        self.funcs.extend(head + lines)
        self.funcs.append("")
        return fname

    def local_decl(self, loc: ast.Node, scope: Env, fn: _Fn, prefix: str) -> None:
        if isinstance(loc, ast.Unsupported):
            raise bug(loc.what, loc)
        if isinstance(loc, ast.ActionDecl):
            scope.add(Sym("action", loc.name, loc, scope=scope, value=self.cp_name(prefix, loc)))
        elif isinstance(loc, ast.FunctionDecl):
            scope.add(Sym("function", loc.name, loc, scope=scope))
        elif isinstance(loc, ast.TableDecl):
            self.table_decl(loc, scope, fn, prefix)
        elif isinstance(loc, ast.Instantiation):
            self.instantiation(loc, scope, fn, prefix)
        elif isinstance(loc, ast.ValueSetDecl):
            t = self.resolve_type(loc.element_type, scope)
            py = "VS_" + self.uid(loc.name)
            size = self.const_eval(loc.size, scope)
            name = self.cp_name(prefix, loc)
            self.value_sets.append((py, name, size))
            self.model.value_sets[name] = ValueSetInfo(
                name=name, id=self.ann_id(loc), annotations=self.annotations_text(loc), size=size,
                matches=self.value_set_matches(t, loc))
            scope.add(Sym("value_set", loc.name, loc, t, py=py))
        elif isinstance(loc, (ast.VariableDecl, ast.ConstDecl)):
            self.stmt(loc, scope, fn)
        else:
            raise bug(f"declaration {type(loc).__name__} here", loc)

    # ------------------------------------------------------------------ instances

    def instantiation(self, d: ast.Instantiation, scope: Env, fn: _Fn, prefix: str) -> None:
        before, d = self.checked.moved.get(id(d), ([], d))  # `Outer(Inner()) o;`, as check moved it
        for inst in before:
            self.instantiation(inst, scope, fn, prefix)
        t = self.resolve_type(d.type, scope)
        name = self.cp_name(prefix, d)
        if isinstance(t, TNamedBlock) and t.kind == "control_decl":
            fname = self.compile_control(t.decl, name, d.args, arg_scope=scope)  # type: ignore[arg-type]
            scope.add(Sym("instance", d.name, d, t, py=fname, value="control"))
            return
        if isinstance(t, TNamedBlock) and t.kind == "parser_decl" and fn is not None and fn.in_parser:
            fname = self.compile_parser(t.decl, name, d.args, sub=True, arg_scope=scope)  # type: ignore[arg-type]
            scope.add(Sym("instance", d.name, d, t, py=fname, value="parser"))
            return
        if not isinstance(t, TExtern):
            raise bug(f"cannot instantiate {t.show()}", d)
        py = "X_" + self.uid(d.name)
        ext = registry.lookup(t.name)
        if ext is None:
            raise bug(f"extern {t.name}", d)
        spec = ext.instantiate(self, d, t, scope, name)
        if spec is not None:
            spec.py = py
            self.externs.append(spec)
        # at the top level: bound in lowering's global env, where check's symbol has no Python name
        scope.add(Sym("instance", d.name, d, t, py=py, value=name))

    # ------------------------------------------------------------------ tables

    def table_decl(self, d: ast.TableDecl, scope: Env, fn: _Fn, prefix: str) -> None:
        name = self.cp_name(prefix, d)
        py = "T_" + self.uid(d.name)
        keys: list[KeyField] = []
        key_exprs: list[ast.Expression] = []
        key_pos: list[int] = []  # each match key's position among all keys (its field id)
        sel_exprs: list[ast.Expression] = []  # `selector` keys: the action selector's hash input
        for i, k in enumerate(d.keys):
            if k.match_kind == "selector":
                sel_exprs.append(k.expr)
                continue
            kt = self.etype(k.expr)
            w = width_of(kt)
            if isinstance(kt, TError):
                w = 32  # hmm: p4c gives errors no width; BMv2 uses 32 bits... rare in keys
            a = k.annotation("name")
            kname = a.string_value() if a is not None and a.string_value() else key_text(k.expr)
            keys.append(KeyField(kname, k.match_kind, w, i + 1))
            key_exprs.append(k.expr)
            key_pos.append(i)
        all_ids = self.field_ids(d.keys, d)
        for i, pos in enumerate(key_pos):
            keys[i] = dataclasses.replace(keys[i], id=all_ids[pos])
        actions: list[ActionSpec] = []
        action_syms: list[Sym] = []
        refs: list[ActionRef] = []
        bound_args: list[list[ast.Argument]] = []
        for ar in d.actions:
            asym = self.sym(ar.name, scope)
            adecl: ast.ActionDecl = asym.decl  # type: ignore[assignment]
            aname = self.action_cp_name(asym)
            nbound = len(ar.args or [])
            bound_args.append(list(ar.args or []))
            params = []
            for p in adecl.params[nbound:]:
                pt = self.resolve_type(p.type, asym.scope or scope)
                pw = width_of(pt)
                params.append((p.name, pw))
            sc = "TABLE_AND_DEFAULT"
            if ar.has_annotation("tableonly"):
                sc = "TABLE_ONLY"
            elif ar.has_annotation("defaultonly"):
                sc = "DEFAULT_ONLY"
            actions.append(ActionSpec(aname, tuple(params), sc))
            action_syms.append(asym)
            refs.append(ActionRef(aname, sc))
            self.register_action(asym, adecl)
            self.action_users.setdefault(aname, set()).add(name)
        # no actions at all: p4c's front end gives the table NoAction as its (only) default
        size = 1024
        sp = d.prop("size")
        if sp is not None and sp.value is not None:
            size = self.const_eval(sp.value, scope)
        # default action
        default_name = None
        default_args: dict[str, int] = {}
        const_default = False
        dp = d.default_action
        if dp is not None and dp.value is not None:
            const_default = dp.is_const
            default_name, default_args = self.bound_action(dp.value, scope, actions, action_syms)
        else:
            na = next((a for a in actions if a.name == "NoAction"), None)
            if na is None:
                # p4c adds NoAction as the default; we need it in the list to run it
                nsym = self.g.lookup("NoAction")
                actions.append(ActionSpec("NoAction", (), "DEFAULT_ONLY"))
                # p4c's CreateBuiltins adds it to the list too, as `@defaultonly NoAction`,
                # so P4Info's table refers to it (scope DEFAULT_ONLY)
                refs.append(ActionRef("NoAction", "DEFAULT_ONLY"))
                action_syms.append(nsym)
                bound_args.append([])
                self.register_action(nsym, nsym.decl)  # type: ignore[arg-type]
                self.action_users.setdefault("NoAction", set()).add(name)
            default_name = "NoAction"
        # direct resources
        dc = dm = None
        for pname in ("counters", "meters"):
            p = d.prop(pname)
            if p is None or p.value is None:
                continue
            isym = self.sym(p.value, scope)
            ext = registry.lookup(isym.type.name) if (
                isym.kind == "instance" and isinstance(isym.type, TExtern)) else None
            if ext is None:
                raise bug(f"{pname} = names no extern module", p.value)
            ext.bind_table(self, isym.value, name)
            if pname == "counters":
                dc = isym.value
            else:
                dm = isym.value
        impl = self.table_implementation(d, scope, fn, prefix, name)
        for p in d.properties:
            if p.name not in ("key", "actions", "default_action", "size", "entries", "counters",
                              "meters", "implementation") and not p.name.startswith("@"):
                pass  # custom table properties are kept out of the data path (p4c warns too)
        # const entries
        entries: list[TableEntry] = []
        ep = d.prop("entries")
        if ep is not None and ep.entries:
            for i, en in enumerate(ep.entries):
                entries.append(self.const_entry(en, keys, key_exprs, scope, actions, action_syms, name, i + 1))
        info = TableInfo(
            name=name, id=self.ann_id(d), annotations=self.annotations_text(d), keys=tuple(keys),
            actions=tuple(refs), default_action=default_name,
            default_params=tuple(default_args.get(p, 0) for p, _ in
                                 next(a for a in actions if a.name == default_name).params),
            const_default_action=const_default, const_entries=bool(ep is not None and ep.is_const),
            initial_entries=bool(entries), size=size, direct_counter=dc, direct_meter=dm,
            implementation=impl.name if impl is not None else None)
        self.model.tables[name] = info
        # the runtime installs the const entries when it loads the program; a bad one is
        # reported at its entry (p4sim.runtime.instance.check_program)
        spec = TableSpec(py, info, actions, entries, (default_name, default_args), dc, dm,
                         entry_nodes=list(ep.entries) if ep is not None and ep.entries else [],
                         decl_name=d.name, implementation=impl.py if impl is not None else None)
        self.tables.append(spec)
        scope.add(Sym("table", d.name, d, py=py, value=spec,
                      extra={"keys": key_exprs, "action_syms": action_syms, "scope": scope,
                             "bound": bound_args, "selector": sel_exprs,
                             "with_selector": impl is not None and bool(impl.params.get("selector"))}))

    def table_implementation(self, d: ast.TableDecl, scope: Env, fn: _Fn | None, prefix: str,
                             table: str) -> ExternSpec | None:
        """The action profile/selector of `implementation = ...`: a declared instance, or one
        constructed in place, named as p4c's getTableImplementationName names it (the
        property's control-plane name: its @name, else "implementation")."""
        ip = d.prop("implementation")
        if ip is None or ip.value is None:
            return None
        v = ip.value
        if isinstance(v, ast.Name):
            isym = self.sym(v, scope)
            spec = next((x for x in self.externs if x.py == isym.py), None)
        else:
            assert isinstance(v, ast.MethodCall) and isinstance(v.callee, ast.Name)
            inst = ast.Instantiation(name="implementation", type=ast.NamedType(v.callee.name), args=v.args,
                                     annotations=ip.annotations, span=ip.span)
            ext = registry.lookup(v.callee.name)
            if ext is None or ext.table_property != "implementation":
                raise bug("implementation = must construct an action_profile or action_selector", v)
            cp = self.cp_name(prefix, inst) if ip.annotation("name") is not None else "implementation"
            spec = ext.instantiate(self, inst, None, scope, cp)
            assert spec is not None
            spec.py = "X_" + self.uid(f"{d.name}_impl")
            self.externs.append(spec)
        ext = registry.lookup(spec.kind) if spec is not None else None
        if spec is None or ext is None or ext.table_property != "implementation":
            raise bug("implementation = must name an action_profile or action_selector", v)
        ext.bind_table(self, spec.name, table)
        return spec

    def action_cp_name(self, asym: Sym) -> str:
        """The control-plane name of an action as used in the current top-level control.

        p4c (frontends/p4/localizeActions.cpp) copies a global action into each control
        that uses it. p4c 1.2.4.0 then named a global action with a relative `@name("n")`
        `<Control>.n` (one P4Info action per control); since p4c #4975 (1.2.5.x, followed
        here) the copy keeps the global name `n` (sample issue-4969-bmv2)."""
        return asym.value

    def register_action(self, asym: Sym, adecl: ast.ActionDecl) -> None:
        aname = self.action_cp_name(asym)
        if aname in self.model.actions:
            return
        params = []
        cp = [p for p in adecl.params if not p.direction]  # p4c drops the directional ones
        for p, pid in zip(cp, self.field_ids(cp, adecl), strict=True):
            pt = self.resolve_type(p.type, asym.scope or self.g)
            params.append(Param(p.name, width_of(pt), pid))
        self.model.actions[aname] = ActionInfo(name=aname, id=self.ann_id(adecl),
                                               annotations=self.annotations_text(adecl),
                                               params=tuple(params))

    def bound_action(self, e: ast.Expression, scope: Env, actions: list[ActionSpec],
                     syms: list[Sym]) -> tuple[str, dict[str, int]]:
        if isinstance(e, ast.MethodCall):
            callee, args = e.callee, e.args
        else:
            callee, args = e, []
        asym = self.sym(callee, scope)
        idx = next((i for i, s in enumerate(syms) if s is asym), None)
        spec = actions[idx]
        adecl: ast.ActionDecl = asym.decl  # type: ignore[assignment]
        nb = len(adecl.params) - len(spec.params)  # leading params bound in the actions list
        if nb and len(args) == len(adecl.params):
            args = args[nb:]  # `default_action = a(bound, ...)` repeats the bound arguments
        vals = {}
        for (pname, _pw), a, p in zip(spec.params, args, adecl.params[nb:], strict=True):
            pt = self.resolve_type(p.type, asym.scope or scope)
            v = self.convert(self.expr(a.value, scope, None), pt)
            vals[pname] = int(v.const)
        return spec.name, vals

    def const_entry(self, en: ast.Entry, keys: list[KeyField], key_exprs: list[ast.Expression],
                    scope: Env, actions: list[ActionSpec], syms: list[Sym], tname: str,
                    order_prio: int) -> TableEntry:
        ks = en.keyset
        elems = ks.elements if isinstance(ks, ast.TupleKeyset) else [ks]
        match: dict = {}
        for el, k, ke in zip(elems, keys, key_exprs, strict=True):
            kt = self.expr(ke, scope, _Fn([], 0, self.tmp_counter)).type  # typing only
            if isinstance(el, (ast.DontCare, ast.DefaultKeyset)):
                continue
            if isinstance(el, ast.MaskKeyset):
                v = self.convert(self.expr(el.value, scope, None), kt)
                m = self.convert(self.expr(el.mask, scope, None), kt)
                if k.match_kind == "lpm":
                    mm = int(m.const)
                    plen = bin(mm).count("1")
                    match[k.name] = Lpm(int(v.const) & mm, plen)
                else:
                    match[k.name] = Ternary(int(v.const), int(m.const))
            elif isinstance(el, ast.RangeKeyset):
                lo = self.convert(self.expr(el.low, scope, None), kt)
                hi = self.convert(self.expr(el.high, scope, None), kt)
                match[k.name] = Range(int(lo.const), int(hi.const))
            else:
                v = self.convert(self.expr(el, scope, None), kt)
                val = int(v.const)
                match[k.name] = {"exact": Exact, "optional": Optional_}.get(k.match_kind, Exact)(val) \
                    if k.match_kind in ("exact", "optional") else (
                        Lpm(val, k.bitwidth) if k.match_kind == "lpm" else
                        Ternary(val, mask(k.bitwidth)) if k.match_kind == "ternary" else Range(val, val))
        aname, args = self.bound_action(en.action, scope, actions, syms)
        # Priorities, in our "higher wins" convention:
        # - `priority = N` (P4 1.2.4): larger N wins (spec default, largest_priority_wins);
        # - @priority(N) (BMv2's convention, as p4c passes it on): smaller N wins;
        # - neither: list order, the first entry wins (BMv2 gets the 1-based position).
        if en.priority is not None:
            prio = self.const_eval(en.priority, scope)
        else:
            a = en.annotation("priority")
            bmv2 = a.int_value() if a is not None and a.int_value() is not None else order_prio
            prio = (1 << 30) - int(bmv2)  # type: ignore[arg-type]
        return TableEntry(tname, match, aname, args, priority=prio)

    # ======================================================================= statements

    def block(self, b: ast.BlockStatement, scope: Env, fn: _Fn) -> None:
        inner = Env(scope)
        start = len(fn.lines)
        for s in b.statements:
            self.stmt(s, inner, fn)
        if len(fn.lines) == start:
            fn.emit("pass")

    def body(self, s: ast.Statement, scope: Env, fn: _Fn) -> None:
        fn.ind += 1
        start = len(fn.lines)
        if isinstance(s, ast.BlockStatement):
            self.block(s, scope, fn)
        else:
            self.stmt(s, Env(scope), fn)
        if len(fn.lines) == start:
            fn.emit("pass")
        fn.ind -= 1

    def stmt(self, s: ast.Node, scope: Env, fn: _Fn) -> None:
        if isinstance(s, ast.Unsupported):
            raise bug(s.what, s)
        if isinstance(s, ast.EmptyStatement):
            return
        if isinstance(s, ast.BlockStatement):
            fn.emit("if True:")
            self.body(s, scope, fn)
            return
        guards = self.stack_index_guards(s, scope, fn)
        if guards:
            # p4c (midend/hsIndexSimplify.cpp, HSIndexSimplifier::eliminateArrayIndexes) turns a
            # statement using hs[i] with a run-time i into `if (i == 0) ... else if (i == 1) ...`
            # with no final else: with i out of range the statement does nothing (an `if` takes
            # its else branch). BMv2 runs that; p4sim guards the statement the same way.
            if isinstance(s, ast.IfStatement):
                c = self.cond(s.cond, scope, fn)
                fn.emit(f"if {' and '.join(guards)} and {c}:")
                self.body(s.then, scope, fn)
                if s.else_ is not None:
                    fn.emit("else:")
                    self.body(s.else_, scope, fn)
                return
            if isinstance(s, ast.VariableDecl) and s.init is not None:
                # declared unguarded (default value), initialised under the guard
                self.var_decl(s, scope, fn, guards)
                return
            fn.emit(f"if {' and '.join(guards)}:")
            fn.ind += 1
            start = len(fn.lines)
            self.stmt_unguarded(s, scope, fn)
            if len(fn.lines) == start:
                fn.emit("pass")
            fn.ind -= 1
            return
        self.stmt_unguarded(s, scope, fn)

    def stack_index_guards(self, s: ast.Node, scope: Env, fn: _Fn) -> list[str]:
        """`index < size` for each run-time header-stack index the statement itself uses."""
        if id(s) not in self.checked.run_time_index_stmts:
            return []
        if isinstance(s, (ast.Assignment, ast.MethodCallStatement)):
            roots: list[ast.Node] = [s]
        elif isinstance(s, ast.IfStatement):
            roots = [s.cond]
        elif isinstance(s, ast.SwitchStatement):
            roots = [s.expr]
        elif isinstance(s, ast.VariableDecl) and s.init is not None:
            roots = [s.init]
        else:
            return []
        self.hoist_call_indexes(roots, scope, fn)
        return self._index_guards(roots, scope)

    def _index_guards(self, roots: list[ast.Node], scope: Env) -> list[str]:
        out: list[str] = []
        scratch = _Fn([], 0, self.tmp_counter)  # typing only: nothing it emits is kept
        stack = list(reversed(roots))
        while stack:
            n = stack.pop()
            if isinstance(n, ast.Index):
                try:
                    base = self.expr(n.expr, scope, scratch)
                    idx = self.expr(n.index, scope, scratch)
                except P4SourceError:
                    return []  # the statement's own lowering reports it, located
                if isinstance(base.type, TStack) and not idx.is_const:
                    code = f"sx({idx.code}, {idx.type.width})" if isinstance(idx.type, TBits) and \
                        idx.type.signed else idx.code
                    out.append(f"0 <= {code} < {base.type.size}")
                if id(n.index) in self.index_memo:
                    # a hoisted index: what it read was guarded when it was computed
                    stack.append(n.expr)
                    continue
            stack.extend(reversed(list(n.children())))
        return out

    def hoist_call_indexes(self, roots: list[ast.Node], scope: Env, fn: _Fn) -> None:
        """A run-time stack index with a call in it is computed once, into a temporary, before
        the statement (check allows it in the statements stmt_index_guards handles). p4c does
        the same: frontends/p4/sideEffects.cpp (SideEffectOrdering, DoSimplifyExpressions) moves
        each call into a temporary in evaluation order (an assignment's left-hand side before
        its right-hand side), then midend/hsIndexSimplify.cpp guards each use of the
        temporary index. Inner indexes first; an index computed from an element at an
        out-of-range inner index is 0, the value BMv2 gives an unassigned local."""
        self.index_memo = {}
        order: list[ast.Index] = []

        def visit(n: ast.Node) -> None:  # postorder: an inner index before the one around it
            for c in n.children():
                visit(c)
            if isinstance(n, ast.Index) and any(isinstance(x, ast.MethodCall) for x in ast.walk(n.index)):
                order.append(n)

        for root in roots:
            for part in ([root.lhs, root.rhs] if isinstance(root, ast.Assignment) else [root]):
                visit(part)
        for n in order:
            obj, idx = self.checked.value(n.expr, self.inst), self.checked.value(n.index, self.inst)
            if obj is None or idx is None or not isinstance(obj[0], TStack) or idx[1] is not None:
                continue
            guards = self._index_guards([n.index], scope)
            idx_type = idx[0]
            t = fn.tmp("hi")
            if guards:
                fn.emit(f"{t} = 0")
                fn.emit(f"if {' and '.join(guards)}:")
                fn.ind += 1
            fn.emit(f"{t} = {self.expr(n.index, scope, fn).code}")
            if guards:
                fn.ind -= 1
            self.index_memo[id(n.index)] = V(t, idx_type)

    def stmt_unguarded(self, s: ast.Node, scope: Env, fn: _Fn) -> None:
        if isinstance(s, ast.VariableDecl):
            self.var_decl(s, scope, fn, [])
            return
        if isinstance(s, ast.ConstDecl):
            self.declare_const(s, scope)
            return
        if isinstance(s, ast.Assignment):
            self.assign(s.lhs, s.rhs, scope, fn)
            return
        if isinstance(s, ast.IfStatement):
            c = self.cond(s.cond, scope, fn)
            fn.emit(f"if {c}:")
            self.body(s.then, scope, fn)
            if s.else_ is not None:
                fn.emit("else:")
                self.body(s.else_, scope, fn)
            return
        if isinstance(s, ast.MethodCallStatement):
            self.call(s.call, scope, fn, stmt=True)
            return
        if isinstance(s, ast.SwitchStatement):
            self.switch(s, scope, fn)
            return
        if isinstance(s, (ast.ForStatement, ast.ForInStatement)):
            self.for_loop(s, scope, fn)
            return
        if isinstance(s, (ast.BreakStatement, ast.ContinueStatement)):
            fn.emit("break" if isinstance(s, ast.BreakStatement) else "continue")
            return
        if isinstance(s, ast.ReturnStatement):
            if fn.once_stack and fn.loops:
                # a Python break would leave only the loop: raise a flag every enclosing loop
                # of this body tests after it ends, then break
                flag = fn.loops[0][0] or fn.tmp("ret_flag")
                for lp in fn.loops:
                    lp[0] = flag
            if fn.once_stack:
                rv = fn.once_stack[-1]
                if s.value is not None:
                    # typed against the declared return type: `return {a, b};`, casts, ints
                    v = self.convert(self.expr(s.value, scope, fn), rv.type)
                    fn.emit(f"{rv.code} = {self.copy_code(v)}")
                if fn.loops:
                    fn.emit(f"{fn.loops[0][0]} = True")
                fn.emit("break")
            else:
                fn.emit(f"return {fn.parser_ret}" if fn.in_parser else "return")
            return
        if isinstance(s, ast.ExitStatement):
            fn.emit("raise Exit()")
            return
        raise bug(f"statement {type(s).__name__}", s)

    def var_decl(self, s: ast.VariableDecl, scope: Env, fn: _Fn, guards: list[str]) -> None:
        """A local variable; with guards (a run-time stack index in its initializer) it is
        declared with its default value and initialised only when the guards hold."""
        t = self.resolve_type(s.type, scope)
        py = "v_" + self.uid(s.name)
        if isinstance(t, TVarbit):
            # a box, so that the bits and their width move together as a field's do
            fn.emit(f"{py} = VarbitBox()")
            scope.add(Sym("var", s.name, s, t, py=py + ".f_v"))
            if s.init is not None:
                v = self.expr(s.init, scope, fn)
                fn.emit(f"{py}.f_v = {v.code}")
                fn.emit(f"{py}.wf_v = {vbw(v.code)}")
            return
        if s.init is not None and not guards:
            v = self.expr(s.init, scope, fn)
            fn.emit(f"{py} = {self.copy_code(self.convert(v, t))}")
        else:
            fn.emit(f"{py} = {self.default_value(t)}")
        scope.add(Sym("var", s.name, s, t, py=py))
        if s.init is not None and guards:
            fn.emit(f"if {' and '.join(guards)}:")
            fn.ind += 1
            if isinstance(s.init, (ast.ListExpression, ast.StructExpression)) and isinstance(t, TStruct):
                self.assign_fields(V(py, t), t, s.init, scope, fn)
            else:
                fn.emit(f"{py} = {self.copy_code(self.convert(self.expr(s.init, scope, fn), t))}")
            fn.ind -= 1

    LOOP_LIMIT = 1 << 20  # iterations of one for loop per packet before p4sim gives up on it

    def for_loop(self, s: ast.ForStatement | ast.ForInStatement, scope: Env, fn: _Fn) -> None:
        """P4_16 1.2.4 loops. The C-style form runs its update before every test but the first
        (so `continue` still updates) and is capped at LOOP_LIMIT iterations: a loop that
        never ends (`bit<8> i; i < 300`) drops the packet with a logged error, not a hang."""
        inner = Env(scope)
        frame: list[str | None] = [None]
        outermost, at, ind = not fn.loops, len(fn.lines), fn.ind
        if isinstance(s, ast.ForInStatement):
            t = self.resolve_type(s.type, inner)
            py = "v_" + self.uid(s.var)
            if s.hi is not None:
                lo = self.convert(self.expr(s.collection, scope, fn), t)
                hi = self.convert(self.expr(s.hi, scope, fn), t)
                if t.signed:
                    rng = f"range(sx({lo.code}, {t.width}), sx({hi.code}, {t.width}) + 1)"
                    fn.emit(f"for {py} in {rng}:")
                    fn.emit(f"    {py} &= {mask(t.width)}")
                else:
                    fn.emit(f"for {py} in range({lo.code}, {hi.code} + 1):")
            else:
                coll = self.expr(s.collection, scope, fn)
                el = fn.tmp("el")
                # the loop variable is a copy of each element, in index order
                fn.emit(f"for {el} in {coll.code}.a:")
                fn.emit(f"    {py} = {el}.copy()")
            inner.add(Sym("var", s.var, s, t, py=py))
            fn.loops.append(frame)
            self.body(s.body, inner, fn)
            fn.loops.pop()
        else:
            for st in s.init:
                self.stmt(st, inner, fn)
            first, count = fn.tmp("first"), fn.tmp("iter")
            fn.emit(f"{first} = True")
            fn.emit(f"{count} = 0")
            fn.emit("while True:")
            fn.ind += 1
            if s.update:
                fn.emit(f"if {first}:")
                fn.emit(f"    {first} = False")
                fn.emit("else:")
                fn.ind += 1
                for st in s.update:
                    self.stmt(st, inner, fn)
                fn.ind -= 1
            if s.cond is not None:
                fn.emit(f"if not ({self.cond(s.cond, inner, fn)}): break")
            fn.emit(f"{count} += 1")
            fn.emit(f"if {count} > {self.LOOP_LIMIT}: "
                    f"raise OverflowError('for loop at {s.span} ran {self.LOOP_LIMIT} iterations')")
            fn.ind -= 1  # body() indents the loop body itself
            fn.loops.append(frame)
            self.body(s.body, inner, fn)
            fn.loops.pop()
        if frame[0] is not None:
            # a `return` inside: leave the enclosing loop too, or the inlined body
            fn.emit(f"if {frame[0]}: break")
            if outermost:
                fn.lines.insert(at, "    " * ind + f"{frame[0]} = False")

    def cond(self, e: ast.Expression, scope: Env, fn: _Fn) -> str:
        v = self.expr(e, scope, fn)
        return v.code

    def switch(self, s: ast.SwitchStatement, scope: Env, fn: _Fn) -> None:
        e = s.expr
        if isinstance(e, ast.Member) and e.member == "action_run":
            tsym = self.table_of(e.expr.callee.expr, scope)
            _, aid = self.table_apply(tsym, scope, fn)
            spec: TableSpec = tsym.value
            first = True
            pending: list[str] = []
            for case in s.cases:
                if isinstance(case.label, ast.DefaultKeyset):
                    cond = "True"
                else:
                    asym = self.sym(case.label, scope)
                    idx = next((i for i, a in enumerate(spec.actions) if a.name == asym.value), None)
                    cond = f"{aid} == {idx}"
                pending.append(cond)
                if case.body is None:
                    continue
                c = " or ".join(f"({x})" for x in pending) if "True" not in pending else "True"
                pending = []
                fn.emit(f"{'if' if first else 'elif'} {c}:")
                first = False
                self.body(case.body, scope, fn)
            return
        v = self.expr(e, scope, fn)
        k = fn.tmp("sw")
        fn.emit(f"{k} = {v.code}")
        first = True
        pending = []
        for case in s.cases:
            if isinstance(case.label, ast.DefaultKeyset):
                pending.append("True")
            else:
                cv = self.convert(self.expr(case.label, scope, fn), v.type)
                pending.append(f"{k} == {cv.code}")
            if case.body is None:
                continue
            c = "True" if "True" in pending else " or ".join(pending)
            pending = []
            fn.emit(f"{'if' if first else 'elif'} {c}:")
            first = False
            self.body(case.body, scope, fn)

    # ------------------------------------------------------------------ assignment

    def copy_code(self, v: V) -> str:
        if isinstance(v.type, (TStruct, TStack)) and not v.code.endswith("()"):
            return f"{v.code}.copy()"
        return v.code

    def assign(self, lhs: ast.Expression, rhs: ast.Expression | V, scope: Env, fn: _Fn) -> None:
        lt = self.lvalue_type(lhs, scope, fn)
        if isinstance(rhs, V):
            rv = rhs
        else:
            if isinstance(rhs, ast.InvalidExpression):
                target = self.expr(lhs, scope, fn)
                fn.emit(f"{target.code}._v = False")  # check allows `{#}` for headers only
                return
            if isinstance(rhs, (ast.ListExpression, ast.StructExpression)) and isinstance(lt, TStruct):
                self.assign_fields(self.expr(lhs, scope, fn), lt, rhs, scope, fn)
                return
            rv = self.expr(rhs, scope, fn)
        rv = self.convert(rv, lt)
        code = self.copy_code(rv)
        if isinstance(lt, TVarbit):
            # a varbit value is its bits and their current width: both move together
            dst = self.expr(lhs, scope, fn).code
            fn.emit(f"{dst} = {rv.code}")
            fn.emit(f"{vbw(dst)} = {vbw(rv.code)}")
            return
        self.store(lhs, code, scope, fn)

    def assign_fields(self, target: V, lt: TStruct, rhs: ast.Expression, scope: Env, fn: _Fn) -> None:
        t = fn.tmp("o")
        fn.emit(f"{t} = {target.code}")
        names = [f for f, _ in lt.fields]
        if isinstance(rhs, ast.ListExpression):
            n = len(rhs.elements)
            pairs = list(zip(names[:n], rhs.elements, strict=True))
        else:
            pairs = [(nf.name, nf.value) for nf in rhs.fields]  # type: ignore[union-attr]
        given = {f for f, _ in pairs}
        if getattr(rhs, "dots", False):
            # `...`: the fields not written take their default values (zero, false,
            # invalid headers), as p4c's DefaultValues pass expands them
            pairs += [(f, None) for f in names if f not in given]
        # evaluate every value before writing any field: `p = {b = p.a, a = p.b}` swaps
        staged = []
        for fname, e in pairs:
            ft = lt.field_type(fname)
            if e is None and ft is not None:
                staged.append((fname, self.default_value(ft)))
                continue
            v = self.convert(self.expr(e, scope, fn), ft)  # nested {..}: a fresh temporary
            nested = isinstance(ft, TStruct) and isinstance(e, (ast.ListExpression, ast.StructExpression))
            code = v.code if nested else self.copy_code(v)
            if not v.is_const:
                tv = fn.tmp("f")
                fn.emit(f"{tv} = {code}")
                code = tv
            staged.append((fname, code))
        for fname, code in staged:
            fn.emit(f"{t}.{fld(fname)} = {code}")
        if lt.kind == "header":
            fn.emit(f"{t}._v = True")

    def lvalue_type(self, e: ast.Expression, scope: Env, fn: _Fn) -> Type:
        if isinstance(e, ast.Name):
            return self.etype(e)
        # (lowered, not only typed: a stack's `next` writes its bounds test here, and the
        # generated code is kept as it was)
        return self.expr(e, scope, fn).type

    def store(self, lhs: ast.Expression, code: str, scope: Env, fn: _Fn) -> None:
        if isinstance(lhs, ast.Name):
            sym = self.sym(lhs, scope)
            if isinstance(sym.type, (TStruct, TStack)) and "." not in sym.py and sym.extra.get("dir") in ("inout", "out"):
                # keep the caller's object: copy fields in place
                fn.emit(f"_src = {code}")
                self.copy_into(sym.py, "_src", sym.type, fn)
                return
            fn.emit(f"{sym.py} = {code}")
            return
        if isinstance(lhs, ast.Slice):
            base = self.expr(lhs.expr, scope, fn)
            hi = self.const_eval(lhs.hi, scope)
            lo = self.const_eval(lhs.lo, scope)
            m = mask(hi - lo + 1)
            newv = f"(({base.code}) & {~(m << lo) & mask(width_of(base.type))}) | ((({code}) & {m}) << {lo})"
            self.store(lhs.expr, newv, scope, fn)
            return
        if isinstance(lhs, ast.Member):
            obj = self.expr(lhs.expr, scope, fn)
            if isinstance(obj.type, TStack) and lhs.member in ("next", "last"):
                target = self.expr(lhs, scope, fn)
                fn.emit(f"_src = {code}")
                self.copy_into(target.code, "_src", obj.type.elem, fn)
                return
            if isinstance(obj.type, TStruct) and obj.type.kind == "union":
                ft = obj.type.field_type(lhs.member)
                fn.emit(f"{obj.code}.{fld(lhs.member)} = {code}")
                if isinstance(ft, TStruct):
                    for other, _ in obj.type.fields:
                        if other != lhs.member:
                            fn.emit(f"if {obj.code}.{fld(lhs.member)}._v: {obj.code}.{fld(other)}._v = False")
                return
            fn.emit(f"{obj.code}.{fld(lhs.member)} = {code}")
            return
        if isinstance(lhs, ast.Index):
            obj = self.expr(lhs.expr, scope, fn)
            idx = self.expr(lhs.index, scope, fn)
            if isinstance(obj.type, TStack):
                fn.emit(f"{obj.code}.a[{self.stack_index(obj, idx, lhs)}] = {code}")
                return
        raise bug("this expression cannot be assigned to", lhs)

    def copy_into(self, dst: str, src: str, t: Type, fn: _Fn) -> None:
        if isinstance(t, TStruct):
            if t.kind == "header":
                fn.emit(f"{dst}._v = {src}._v")
            for fname, ft in t.fields:
                fn.emit(f"{dst}.{fld(fname)} = {src}.{fld(fname)}"
                        + (".copy()" if isinstance(ft, (TStruct, TStack)) else ""))
                if isinstance(ft, TVarbit):
                    fn.emit(f"{dst}.w{fld(fname)} = {src}.w{fld(fname)}")
        elif isinstance(t, TStack):
            fn.emit(f"{dst}.a[:] = [h.copy() for h in {src}.a]")
            fn.emit(f"{dst}.n = {src}.n")

    def stack_index(self, obj: V, idx: V, node: ast.Node) -> str:
        assert isinstance(obj.type, TStack)
        if idx.is_const:
            return str(idx.const)
        return idx.code

    # ======================================================================= calls

    def table_of(self, e: ast.Expression, scope: Env) -> Sym:
        if isinstance(e, ast.Name):
            sym = self.sym(e, scope)
            if sym.kind == "table":
                return sym
        raise bug("expected a table", e)

    def table_apply(self, tsym: Sym, scope: Env, fn: _Fn) -> tuple[str, str]:
        spec: TableSpec = tsym.value
        self.applied_tables.add(spec.info.name)
        tscope: Env = tsym.extra["scope"]
        keys = [self.expr(k, tscope, fn) for k in tsym.extra["keys"]]
        kcodes = []
        for k in keys:
            c = k.code
            if isinstance(k.type, TBool):
                c = f"int({c})"
            kcodes.append(c)
        hit = fn.tmp("hit")
        aid = fn.tmp("aid")
        r = fn.tmp("r")
        kt = "(" + ", ".join(kcodes) + ("," if len(kcodes) == 1 else "") + ")"
        kinds = {k.match_kind for k in spec.info.keys}
        if len(kcodes) == 1 and kinds == {"exact"}:
            look = f"{spec.py}.exact1_get({kcodes[0]})"
        elif not kinds or kinds == {"exact"}:
            look = f"{spec.py}.exact_get({kt})"
        elif len(kcodes) == 1 and kinds == {"lpm"}:
            look = f"{spec.py}.lookup1({kcodes[0]})"
        else:
            look = f"{spec.py}.lookup({kt})"
        if all(_PURE_KEY.match(k) for k in kcodes):
            # an empty table misses without building its key: many tables of a program are
            # empty in a given deployment (keys that cannot raise only: no index, no division)
            look = f"{look} if {spec.py}.recs else None"
        fn.emit(f"{r} = {look}")
        fn.emit(f"if {r} is None:")
        fn.emit(f"    {r} = {spec.py}.default")
        fn.emit(f"    {hit} = False")
        fn.emit("else:")
        fn.emit(f"    {hit} = True")
        if spec.direct_counter:
            fn.emit(f"    {r}.pkts += 1")
            fn.emit(f"    {r}.bytes += _RT.plen")
        if spec.direct_meter:
            dm_py = next(x.py for x in self.externs if x.name == spec.direct_meter)
            fn.emit(f"    _RT.dm_color[{dm_py!r}] = _RT.direct_meter({spec.py}, {r})")
        if spec.implementation:
            # an indirect entry's `args` is its member or group (p4sim.runtime.action_profile):
            # a group hashes the selector keys (packed as hash() packs a field list) to pick
            tgt = fn.tmp("tgt")
            fn.emit(f"    {tgt} = {r}.args")
            if tsym.extra["with_selector"]:
                data = self.data_pack(ast.ListExpression(list(tsym.extra["selector"])), tscope, fn) \
                    if tsym.extra["selector"] else "b''"
                fn.emit(f"    {r} = {tgt}.recs[{spec.py}.slot] if {tgt}.is_member else "
                        f"{tgt}.pick({data}, {spec.py}.slot)")
            else:
                fn.emit(f"    {r} = {tgt}.recs[{spec.py}.slot]")
        fn.emit(f"{aid} = {r}.aid")
        syms: list[Sym] = tsym.extra["action_syms"]
        for i, asym in enumerate(syms):
            fn.emit(f"{'if' if i == 0 else 'elif'} {aid} == {i}:")
            fn.ind += 1
            start = len(fn.lines)
            adecl: ast.ActionDecl = asym.decl  # type: ignore[assignment]
            bound: list[ast.Argument] = tsym.extra["bound"][i]
            if not bound:
                args = [V(f"{r}.args[{j}]", INT) for j in range(len(adecl.params))]
                self.inline_action(asym, args, None, scope, fn, from_table=True)
            else:
                # arguments bound in `actions = { a(x); }`, then the control-plane ones
                vals: list[V] = []
                nodes: list[ast.Argument | None] = []
                for j, p in enumerate(adecl.params):
                    pt = self.resolve_type(p.type, asym.scope or scope)
                    if j < len(bound):
                        vals.append(V("None", VOID) if p.direction == "out"
                                    else self.expr(bound[j].value, tscope, fn))
                        nodes.append(bound[j])
                    else:
                        vals.append(V(f"{r}.args[{j - len(bound)}]", pt))
                        nodes.append(None)
                self.inline_action(asym, vals, nodes, tscope, fn)
            if len(fn.lines) == start:
                fn.emit("pass")
            fn.ind -= 1
        return hit, aid

    def inline_action(self, asym: Sym, args: list[V], arg_nodes: list[ast.Argument | None] | None,
                      scope: Env, fn: _Fn, from_table: bool = False) -> str | None:
        """Inline an action or function body; returns the Python var holding a function's result."""
        d = asym.decl
        assert isinstance(d, (ast.ActionDecl, ast.FunctionDecl))
        if not from_table and asym.kind == "action" and not self.global_scope(asym) and not fn.in_action:
            # a control's own action called directly stays a declaration of the control
            # after p4c's front end (only its call is inlined), so P4Info lists it; one
            # called only from another action's body is not listed (p4c's InlineActions
            # inlines it there and RemoveAllUnusedDeclarations then drops it)
            self.register_action(asym, d)  # type: ignore[arg-type]
            self.action_users.setdefault(self.action_cp_name(asym), set()).add(None)
        dscope = self.body_env(asym)
        inner = Env(dscope)
        copy_back: list[tuple[ast.Expression, str, Env]] = []
        for i, p in enumerate(d.params):
            pt = self.resolve_type(p.type, dscope)
            py = "a_" + self.uid(p.name)
            if from_table:
                fn.emit(f"{py} = {args[i].code}")
            else:
                a = args[i] if i < len(args) else None
                an = arg_nodes[i] if arg_nodes and i < len(arg_nodes) else None
                node = an.value if an is not None else None
                if p.direction == "out":
                    fn.emit(f"{py} = {self.default_value(pt)}")
                elif a is None:  # check gave every parameter without a default an argument
                    a = self.expr(p.default, dscope, fn)  # type: ignore[arg-type]
                if a is not None and p.direction != "out":
                    a = self.convert(a, pt)
                    fn.emit(f"{py} = {self.copy_code(a)}")
                if p.direction in ("out", "inout") and node is not None and not isinstance(node, ast.DontCare):
                    copy_back.append((node, py, scope))
            inner.add(Sym("var", p.name, p, pt, py=py, extra={"dir": p.direction or "in"}))
        rv = None
        if isinstance(d, ast.FunctionDecl):
            rt = self.resolve_type(d.return_type, dscope)
            if not isinstance(rt, TVoid):
                rv = fn.tmp("ret")
                fn.emit(f"{rv} = {self.default_value(rt)}")
        has_return = self.checked.has_return(d.body)
        if copy_back:
            # copy-out happens however the body ends, `exit` included (P4 spec)
            fn.emit("try:")
            fn.ind += 1
        if has_return:
            fn.emit("for _ in ONCE:")
            fn.ind += 1
            fn.once_stack.append(V(rv, rt) if rv is not None else None)
        saved_parser, saved_loops = fn.in_parser, fn.loops
        fn.in_parser = False if isinstance(d, ast.ActionDecl) else fn.in_parser
        fn.loops = []  # break/continue/return inside the body belong to the body
        start = len(fn.lines)
        is_action = isinstance(d, ast.ActionDecl)
        fn.in_action += is_action
        self.block(d.body, inner, fn)
        fn.in_action -= is_action
        if len(fn.lines) == start:
            fn.emit("pass")
        fn.in_parser, fn.loops = saved_parser, saved_loops
        if has_return:
            fn.once_stack.pop()
            fn.ind -= 1
        if copy_back:
            fn.ind -= 1
            fn.emit("finally:")
            fn.ind += 1
        for node, py, sc in copy_back:
            self.assign(node, V(py, self.lvalue_type(node, sc, fn)), sc, fn)
        if copy_back:
            fn.ind -= 1
        return rv

    def positional_call(self, c: ast.MethodCall) -> ast.MethodCall:
        """Named arguments as the positional call check made of them (p4sim.check.calls)."""
        pc = self.checked.positional.get(id(c))
        if pc is None:
            raise bug("a call with named arguments the checker never saw", c)
        return pc

    def static_assert(self, c: ast.MethodCall) -> V | None:
        """core.p4's `static_assert(...)`: check evaluated it (a false one stops there)."""
        callee = c.callee
        if not (isinstance(callee, ast.Name) and callee.name == "static_assert"):
            return None
        sym = self.checked.names.get(id(callee))
        if sym is None or sym.kind != "extern_fn":
            return None
        return V("True", BOOL, True)

    def call(self, c: ast.MethodCall, scope: Env, fn: _Fn, stmt: bool = False) -> V:
        sa = self.static_assert(c)
        if sa is not None:
            return sa
        callee = c.callee
        if any(a.name for a in c.args):
            c = self.positional_call(c)
        argv = [a.value for a in c.args]
        # ---- methods: x.m(...)
        if isinstance(callee, ast.Member):
            m = callee.member
            base = callee.expr
            # table.apply()
            if m == "apply":
                bsym = None
                if isinstance(base, ast.Name):
                    bsym = self.sym(base, scope)
                if bsym is not None and bsym.kind == "table":
                    hit, aid = self.table_apply(bsym, scope, fn)
                    return V(hit, TNamedBlock("apply_result", bsym.name), const=None)
                if bsym is not None and bsym.kind == "instance" and bsym.value == "control":
                    return self.call_control(bsym, c, scope, fn)
                if bsym is not None and bsym.kind == "instance" and bsym.value == "parser":
                    pdecl: ast.ParserDecl = bsym.type.decl  # type: ignore[union-attr,assignment]
                    codes = []
                    backs = []
                    for a, p in zip(c.args[1:], pdecl.params[1:], strict=True):
                        pt = self.resolve_type(p.type, self.g)
                        scalar_out = p.direction in ("out", "inout") and not isinstance(pt, (TStruct, TStack))
                        if scalar_out:
                            backs.append((a.value, pt))
                        if p.direction == "out" and scalar_out:
                            codes.append(self.default_value(pt))
                        else:
                            codes.append(self.expr(a.value, scope, fn).code)
                    call = f"{bsym.py}({', '.join(['buf', 'off'] + codes)})"
                    if backs:
                        res = fn.tmp("pr")
                        fn.emit(f"{res} = {call}")
                        fn.emit(f"off = {res}[0]")
                        for k, (node, pt) in enumerate(backs):
                            self.assign(node, V(f"{res}[{k + 1}]", pt), scope, fn)
                    else:
                        fn.emit(f"off = {call}")
                    return V("None", VOID)
                raise bug("only tables and control instances can be applied", callee)
            obj = self.expr(base, scope, fn)
            ot = obj.type
            if isinstance(ot, TStruct) and ot.kind == "header":
                if m == "isValid":
                    return V(f"{obj.code}._v", BOOL)
                if m == "setValid":
                    fn.emit(f"{obj.code}._v = True")
                    self.union_invalidate(base, scope, fn)
                    return V("None", VOID)
                if m == "setInvalid":
                    fn.emit(f"{obj.code}._v = False")
                    return V("None", VOID)
                if m in ("minSizeInBits", "minSizeInBytes"):
                    w = width_of(ot)
                    return V(str(w if m.endswith("Bits") else w // 8), INT, w if m.endswith("Bits") else w // 8)
            if isinstance(ot, TStruct) and ot.kind == "union" and m == "isValid":
                return V("(" + " or ".join(f"{obj.code}.{fld(f)}._v" for f, _ in ot.fields) + ")", BOOL)
            if isinstance(ot, TStack) and m in ("push_front", "pop_front"):
                n = self.expr(argv[0], scope, fn)
                fn.emit(f"{obj.code}.{m}({n.code})")
                return V("None", VOID)
            if isinstance(ot, TExtern):
                return self.extern_method(obj, ot, m, argv, c, scope, fn)
            raise bug(f"{ot.show()} has no method '{m}'", callee)
        if not isinstance(callee, ast.Name):
            raise bug("this call form", c)
        sym = self.sym(callee, scope)
        if sym.kind in ("action", "function"):
            decl = sym.decl
            if "overloads" in sym.extra:
                decl = next((d for d in sym.extra["overloads"] if len(d.params) == len(argv)), decl)
                sym = Sym(sym.kind, sym.name, decl, scope=sym.scope, value=sym.value)
            vals = []
            for a, p in zip(argv, decl.params, strict=False):  # type: ignore[union-attr]
                if isinstance(a, ast.DontCare) or p.direction == "out":
                    vals.append(V("None", VOID))
                else:
                    vals.append(self.expr(a, scope, fn))
            rv = self.inline_action(sym, vals, c.args, scope, fn)
            if isinstance(decl, ast.FunctionDecl):
                rt = self.resolve_type(decl.return_type, sym.scope or scope)
                return V(rv or "None", rt)
            return V("None", VOID)
        if sym.kind == "extern_fn":
            return self.extern_fn(sym, argv, c, scope, fn)
        raise bug(f"'{callee.name}' cannot be called", callee)

    def union_invalidate(self, base: ast.Expression, scope: Env, fn: _Fn) -> None:
        if isinstance(base, ast.Member):
            parent = self.expr(base.expr, scope, fn)
            if isinstance(parent.type, TStruct) and parent.type.kind == "union":
                for other, _ in parent.type.fields:
                    if other != base.member:
                        fn.emit(f"{parent.code}.{fld(other)}._v = False")

    def call_control(self, sym: Sym, c: ast.MethodCall, scope: Env, fn: _Fn) -> V:
        t: TNamedBlock = sym.type  # type: ignore[assignment]
        d: ast.ControlDecl = t.decl  # type: ignore[assignment]
        pys, body, outs = self.inline_bodies[sym.py]
        backs = []
        for a, p, py in zip(c.args, d.params, pys, strict=True):
            pt = self.resolve_type(p.type, self.g)
            if isinstance(a.value, ast.DontCare) or p.direction == "out" and not isinstance(pt, (TStruct, TStack)):
                fn.emit(f"{py} = {self.default_value(pt)}")
                if p.direction == "out" and not isinstance(a.value, ast.DontCare):
                    backs.append((a.value, pt, py))
                continue
            v = self.convert(self.expr(a.value, scope, fn), pt)
            if p.direction in ("out", "inout") and not isinstance(pt, (TStruct, TStack)):
                backs.append((a.value, pt, py))
            fn.emit(f"{py} = {v.code if p.direction in ('out', 'inout') else self.copy_code(v)}")
        # the sub-control's body, spliced in place: no call, its locals re-initialised per apply
        if backs:
            fn.emit("try:")  # scalar copy-out happens on `exit` too
            fn.ind += 1
        pad = "    " * fn.ind
        for line in body:
            fn.lines.append(pad + line[4:])
        if backs:
            fn.ind -= 1
            fn.emit("finally:")
            fn.ind += 1
            for node, pt, py in backs:
                self.assign(node, V(py, pt), scope, fn)
            fn.ind -= 1
        return V("None", VOID)

    # ------------------------------------------------------------------ externs

    def data_pack(self, e: ast.Expression, scope: Env, fn: _Fn) -> str:
        """Python expr giving the bytes of a field list (BMv2 BufBuilder: fields of invalid
        headers are skipped)."""
        elems = e.elements if isinstance(e, ast.ListExpression) else [e]
        parts: list[tuple[str, str, str | None]] = []  # (value, width, validity)

        def add(v: V, valid: str | None, node: ast.Node) -> None:
            t = v.type
            if isinstance(t, TStruct):
                vv = f"{v.code}._v" if t.kind == "header" else valid
                for fname, ft in t.fields:
                    add(V(f"{v.code}.{fld(fname)}", ft), vv, node)
                return
            if isinstance(t, TVarbit):
                parts.append((v.code, vbw(v.code), valid))
                return
            w = width_of(t)
            parts.append((f"int({v.code})" if isinstance(t, TBool) else v.code, str(w), valid))

        for el in elems:
            v = self.expr(el, scope, fn)
            valid = None
            if isinstance(el, ast.Member):
                parent = self.expr(el.expr, scope, fn)
                if isinstance(parent.type, TStruct) and parent.type.kind == "header":
                    valid = f"{parent.code}._v"
            add(v, valid, el)
        conds = {p[2] for p in parts}
        fixed = all(p[1].isdigit() for p in parts)
        self.last_pack_parts = parts  # what checksum lowering reads back

        def packed() -> str:
            if not fixed:
                return f"pack(({', '.join(p[0] for p in parts)},), ({', '.join(p[1] for p in parts)},))"
            # one shift-or and one to_bytes: the BufBuilder layout, padding at the end
            total = sum(int(p[1]) for p in parts)
            pad = (-total) % 8
            shift = total + pad
            terms = []
            for val, w, _ in parts:
                shift -= int(w)
                terms.append(f"({val} << {shift})" if shift else val)
            return f"({' | '.join(terms) or '0'}).to_bytes({(total + pad) // 8}, 'big')"

        if len(conds) == 1 and None not in conds:
            return f"({packed()} if {next(iter(conds))} else b'')"
        if all(p[2] is None for p in parts):
            return packed()
        vals = ", ".join(f"(({p[0]}, {p[1]}) if {p[2]} else None)" if p[2] else f"({p[0]}, {p[1]})" for p in parts)
        return f"_RT.pack_valid(({vals},))"

    def extern_fn(self, sym: Sym, argv: list[ast.Expression], c: ast.MethodCall, scope: Env, fn: _Fn) -> V:
        ext = registry.function(sym.name)
        if ext is None:
            raise bug(f"extern function {sym.name}", c)
        if not fn.in_parser:
            self.model.calls_extern_function = True
        return ext.call(self, sym.name, argv, c, scope, fn)

    def extern_method(self, obj: V, t: TExtern, m: str, argv: list[ast.Expression], c: ast.MethodCall,
                      scope: Env, fn: _Fn) -> V:
        ext = registry.lookup(t.name)
        if ext is None:
            raise bug(f"method {m} of extern {t.name}", c)
        return ext.method(self, obj, t, m, argv, c, scope, fn)

    # ======================================================================= expressions

    def convert(self, v: V, t: Type) -> V:
        """v converted to type t, a conversion check allowed (t is a type check gave: a
        declared type, or the other operand's); the only one that changes code is an `int`
        becoming bit<N> (masked) or a serializable enum."""
        if isinstance(v.type, TInt):
            if isinstance(t, TBits):
                if v.is_const:
                    c = int(v.const) & mask(t.width)
                    return V(str(c), t, c)
                return V(f"(({v.code}) & {mask(t.width)})", t)
            if isinstance(t, TEnum) and t.underlying is not None and v.is_const:
                return V(str(v.const), t, v.const)
        return v

    def expr(self, e: ast.Expression, scope: Env, fn: _Fn | None) -> V:
        """e lowered: its type and constant value are check's (per instance where instances
        differ); lowering only writes the code."""
        hoisted = self.index_memo.get(id(e))
        if hoisted is not None:
            return hoisted
        r = self.checked.value(e, self.inst)
        if r is None:
            raise bug("an expression the checker never typed", e)
        t, value = r
        if value is not None:  # folded by check
            return V(repr(value) if isinstance(value, str) else str(value), t, value)
        return V(self._expr(e, t, scope, fn), t)

    def etype(self, e: ast.Expression) -> Type:
        """The type check gave e (in this instance)."""
        r = self.checked.value(e, self.inst)
        if r is None:
            raise bug("an expression the checker never typed", e)
        return r[0]

    def _need_fn(self, fn: _Fn | None, e: ast.Node) -> _Fn:
        if fn is None:
            raise bug("expected a compile-time constant", e)
        return fn

    def _expr(self, e: ast.Expression, t: Type, scope: Env, fn: _Fn | None) -> str:
        """The code of a non-constant expression e of (checked) type t."""
        if isinstance(e, ast.Name):
            sym = self.sym(e, scope)
            return "None" if sym.kind == "type" else sym.py
        if isinstance(e, ast.TypeRef):
            return "None"
        if isinstance(e, ast.Member):
            return self.member(e, t, scope, fn)
        if isinstance(e, ast.Index):
            obj = self.expr(e.expr, scope, fn)
            idx = self.expr(e.index, scope, fn)
            if isinstance(obj.type, TStack):
                return f"{obj.code}.a[{self.stack_index(obj, idx, e)}]"
            return f"{obj.code}[{int(idx.const)}]"  # a tuple element: check made the index constant
        if isinstance(e, ast.Slice):
            b = self.expr(e.expr, scope, fn)
            lo = self.const_eval(e.lo, scope)
            mk = mask(width_of(t))
            return f"(({b.code} >> {lo}) & {mk})" if lo else f"({b.code} & {mk})"
        if isinstance(e, ast.Unary):
            v = self.expr(e.operand, scope, fn)
            if e.op == "!":
                return f"(not {v.code})"
            if e.op == "+":
                return v.code
            mk = mask(width_of(t))
            return f"((-{v.code}) & {mk})" if e.op == "-" else f"({v.code} ^ {mk})"
        if isinstance(e, ast.Binary):
            return self.binary(e, t, scope, fn)
        if isinstance(e, ast.Ternary):
            c = self.expr(e.cond, scope, fn)
            a, sa = self.lazy(e.then, scope, fn)
            b, sb = self.lazy(e.else_, scope, fn)
            a, b = self.convert(a, t), self.convert(b, t)
            if (sa or sb) and fn is not None:
                # a branch needs statements: evaluate only the branch taken
                tv = fn.tmp("tv")
                fn.emit(f"if {c.code}:")
                fn.lines.extend(sa)
                fn.emit(f"    {tv} = {a.code}")
                fn.emit("else:")
                fn.lines.extend(sb)
                fn.emit(f"    {tv} = {b.code}")
                return tv
            if c.is_const:
                return a.code if c.const else b.code
            return f"({a.code} if {c.code} else {b.code})"
        if isinstance(e, ast.Cast):
            return self.cast(t, self.expr(e.expr, scope, fn))
        if isinstance(e, ast.MethodCall):
            return self.call(e, scope, self._need_fn(fn, e)).code
        if isinstance(e, ast.DontCare):
            return "None"
        if isinstance(e, (ast.ListExpression, ast.StructExpression)):
            if isinstance(t, TStruct):  # `{...}` where a struct/header is expected
                f = self._need_fn(fn, e)
                tmp = f.tmp("lst")
                f.emit(f"{tmp} = {self.default_value(t)}")
                self.assign_fields(V(tmp, t), t, e, scope, f)
                return tmp
            return "(" + ", ".join(self.expr(x, scope, fn).code for x in e.elements) + ",)"  # type: ignore[union-attr]
        raise bug(f"expression {type(e).__name__}", e)

    def lazy(self, e: ast.Expression, scope: Env, fn: _Fn | None) -> tuple[V, list[str]]:
        """Lower e, capturing the statements it needs (one level deeper) instead of emitting
        them, so a caller can run them conditionally (short circuit, ?:)."""
        if fn is None:
            return self.expr(e, scope, fn), []
        start = len(fn.lines)
        fn.ind += 1
        try:
            v = self.expr(e, scope, fn)
        finally:
            fn.ind -= 1
        stmts = fn.lines[start:]
        del fn.lines[start:]
        return v, stmts

    def member(self, e: ast.Member, t: Type, scope: Env, fn: _Fn | None) -> str:
        base = e.expr
        m = e.member
        # table.apply().hit / miss (error and enum members are constants check folded)
        if isinstance(base, ast.MethodCall) and isinstance(base.callee, ast.Member) and base.callee.member == "apply":
            f = self._need_fn(fn, e)
            hit, aid = self.table_apply(self.table_of(base.callee.expr, scope), scope, f)
            return hit if m == "hit" else f"(not {hit})"
        b = self.expr(base, scope, fn)
        bt = b.type
        if isinstance(bt, TStack):
            if m == "lastIndex":
                return f"(({b.code}.n - 1) & 0xffffffff)"
            if m == "nextIndex":
                return f"{b.code}.n"
            f = self._need_fn(fn, e)
            s = f.tmp("s")
            f.emit(f"{s} = {b.code}")
            code = self.errors.get("StackOutOfBounds", 3)
            if m == "next":
                f.emit(f"if {s}.n >= {s}.size: raise ParserError({code})")
                return f"{s}.a[{s}.n]"
            f.emit(f"if {s}.n < 1: raise ParserError({code})")  # last
            return f"{s}.a[{s}.n - 1]"
        return f"{b.code}.{fld(m)}"

    # Constant operands never reach the operators below: check folded every constant
    # expression, so these only write code for the types check gave.

    def binary(self, e: ast.Binary, t: Type, scope: Env, fn: _Fn | None) -> str:
        op = e.op
        if op in ("&&", "||"):
            a = self.expr(e.left, scope, fn)
            b, stmts = self.lazy(e.right, scope, fn)
            if stmts and fn is not None:
                # the right operand needs statements (a table apply, an inlined call):
                # run them only when the left operand does not decide (short circuit)
                tv = fn.tmp("sc")
                fn.emit(f"{tv} = {a.code}")
                fn.emit(f"if {'' if op == '&&' else 'not '}{tv}:")
                fn.lines.extend(stmts)
                fn.emit(f"    {tv} = {b.code}")
                return tv
            return f"({a.code} {'and' if op == '&&' else 'or'} {b.code})"
        a = self.expr(e.left, scope, fn)
        b, stmts = self.lazy(e.right, scope, fn)
        if stmts and fn is not None:
            # left to right: take the left value before the right operand's statements run
            if not a.is_const:
                tv = fn.tmp("l")
                fn.emit(f"{tv} = {a.code}")
                a = V(tv, a.type)
            fn.lines.extend(line[4:] for line in stmts)
        if op == "++":
            return f"(({a.code} << {width_of(b.type)}) | {b.code})"
        if op in ("<<", ">>"):
            w = width_of(t)
            if op == "<<":
                return f"(({a.code} << {b.code}) & {mask(w)})"
            if isinstance(t, TBits) and t.signed:
                return f"((sx({a.code}, {w}) >> {b.code}) & {mask(w)})"
            return f"({a.code} >> {b.code})"
        # the operands' type: the result's, but for a comparison the bit<N> one of the two
        # (an int operand next to a bit<N> one is that bit<N>: check's rule, its types)
        compare = op in ("==", "!=", "<", ">", "<=", ">=")
        ot = (a.type if isinstance(a.type, TBits) else b.type) if compare else t
        a, b = self.convert(a, ot), self.convert(b, ot)
        if op in ("==", "!="):
            if isinstance(ot, (TStruct, TStack)):
                eq = self.aggregate_eq(a.code, b.code, ot)
                return f"({eq})" if op == "==" else f"(not ({eq}))"
            return f"({a.code} {op} {b.code})"
        if not isinstance(ot, TBits):
            raise bug(f"operator {op} on {ot.show()}", e)
        w = ot.width
        mk = mask(w)
        signed = ot.signed
        ac, bc = a.code, b.code
        sa, sb = (f"sx({ac}, {w})", f"sx({bc}, {w})") if signed else (ac, bc)
        if op in ("<", ">", "<=", ">="):
            return f"({sa} {op} {sb})"
        if op in ("+", "-", "*"):
            return f"(({ac} {op} {bc}) & {mk})"
        if op in ("&", "|", "^"):
            return f"({ac} {op} {bc})"
        if op in ("|+|", "|-|"):
            py = "+" if op == "|+|" else "-"
            if signed:
                lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1
                return f"(max({lo}, min({hi}, {sa} {py} {sb})) & {mk})"
            return f"min({ac} + {bc}, {mk})" if op == "|+|" else f"max({ac} - {bc}, 0)"
        if op in ("/", "%") and not signed:
            return f"({ac} {'//' if op == '/' else '%'} {bc})"
        raise bug(f"operator {op} on {ot.show()}", e)

    def aggregate_eq(self, a: str, b: str, t: Type) -> str:
        """P4 == on headers (both invalid, or both valid with equal fields), structs and
        stacks (every member equal)."""
        if isinstance(t, TStack):
            return " and ".join(f"({self.aggregate_eq(f'{a}.a[{i}]', f'{b}.a[{i}]', t.elem)})"
                                for i in range(t.size)) or "True"
        if isinstance(t, TStruct):
            parts = [self.aggregate_eq(f"{a}.{fld(f)}", f"{b}.{fld(f)}", ft) for f, ft in t.fields]
            fields = " and ".join(f"({p})" for p in parts) or "True"
            if t.kind == "header":
                return f"{a}._v == {b}._v and (not {a}._v or ({fields}))"
            if t.kind == "union":
                return " and ".join(f"({p})" for p in parts) or "True"
            return fields
        return f"{a} == {b}"

    def cast(self, t: Type, v: V) -> str:
        """The code of v cast to t (check allowed the cast)."""
        vt = v.type
        if isinstance(t, TEnum) and t.underlying is not None:
            t = t.underlying
        if isinstance(t, TBits):
            mk = mask(t.width)
            if isinstance(vt, TBool):
                return f"int({v.code})"
            if isinstance(vt, TInt):
                return f"({v.code} & {mk})"
            if isinstance(vt, TEnum) and vt.underlying is not None:
                vt = vt.underlying
            if isinstance(vt, TBits):
                if vt.signed and t.width > vt.width:
                    return f"(sx({v.code}, {vt.width}) & {mk})"
                if t.width >= vt.width:
                    return v.code
                return f"({v.code} & {mk})"
            return v.code  # error -> bit<N>
        if isinstance(t, TBool) and isinstance(vt, (TBits, TInt)):
            return f"({v.code} != 0)"
        return v.code  # to bool from bool, to int, to the same struct
