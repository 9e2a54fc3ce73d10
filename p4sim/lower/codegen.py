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

from p4sim.check import CheckedProgram
from p4sim.check.controlplane import field_ids
from p4sim.check.decls import cp_name
from p4sim.check.names import Sym
from p4sim.check.types import (
    TBits,
    TBool,
    TEnum,
    TExtern,
    TStack,
    TStruct,
    TVarbit,
    Type,
    mask,
    width_of,
)
from p4sim.frontend import ast
from p4sim.frontend.errors import LoweringError, bug
from p4sim.model import (
    ControllerHeaderField,
    ControllerHeaderInfo,
    KeyField,
    ProgramModel,
)
from p4sim.spec import ExternSpec, TableSpec

from .decls import DeclLowering
from .env import Env
from .exprs import ExprLowering
from .stmts import StmtLowering
from .values import _DOTTED, HDR_OBJ, Pipeline, V, _pyid, fld, mangle

# the extern modules and tests import these from here
__all__ = [
    "HDR_OBJ",
    "_DOTTED",
    "Compiler",
    "LoweringError",
    "Pipeline",
    "V",
    "bug",
    "fld",
    "mangle",
]

# ---------------------------------------------------------------------------- the driver
# Module map: values.py (V, names, _Fn), this driver (the program, types and classes, the
# V1Switch main), decls.py (parsers, controls, tables), stmts.py (statements), exprs.py
# (calls, expressions). Compiler is the one object: the parts are its mixins.


class Compiler(DeclLowering, StmtLowering, ExprLowering):
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
            if isinstance(d, ast.Instantiation) and isinstance(
                self.resolve_type(d.type, self.g), TExtern
            ):
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
            # a struct field (p4c's bvec-hdr-bmv2) is an object per header, copied with it
            nested = [fld(f) for f, ft in t.fields if isinstance(ft, TStruct)]
            for line in init:
                if line.split(" = ")[0][5:] not in nested:
                    c.append("    " + line.replace("self.", "", 1))
            if nested:
                c.append("    def __init__(self):")
                for fname, ft in t.fields:
                    if isinstance(ft, TStruct):
                        c.append(f"        self.{fld(fname)} = {self.default_value(ft)}")
            c.append("    def copy(self):")
            c.append(f"        o = {t.pycls}.__new__({t.pycls})")
            c.append("        o.__dict__.update(self.__dict__)")
            for a in nested:
                c.append(f"        o.{a} = self.{a}.copy()")
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
            c.append(
                f"        if vlen % 8: raise ParserError({self.errors.get('ParserInvalidArgument', 6)})"
            )
            c.append(f"        nb = ({fixed} + vlen) // 8")
            c.append("        end = off + nb")
            c.append("        if end > len(buf): raise ParserError(1)")
            c.append(
                f"        if vlen > {maxw}: raise ParserError({self.errors.get('HeaderTooShort', 4)})"
            )
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
        fields = _leaves(t)  # (attribute path, type); a struct field's leaves in order
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
                ex.append(
                    f"{HDR_OBJ}.{fname} = {'bool(' + cval + ')' if isinstance(ft, TBool) else cval}"
                )
            else:
                ex.append(f"_c = {cval}")
                sh = cw
                for fname, ft in ch:
                    w = width_of(ft)
                    sh -= w
                    e = f"(_c >> {sh})" if sh else "_c"
                    if sh + w < cw:
                        e = f"({e} & {mask(w)})"
                    ex.append(
                        f"{HDR_OBJ}.{fname} = {'bool(' + e + ')' if isinstance(ft, TBool) else e}"
                    )
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
                    em_vals.append(
                        f"(({val} >> {sh}) & {mask(n * 8)})" if sh else f"({val} & {mask(n * 8)})"
                    )
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
        self.hdr_type, self.meta_type, self.std_meta_type = (
            ck.hdr_type,
            ck.meta_type,
            ck.std_meta_type,
        )
        for t_ in (self.hdr_type, self.meta_type, self.std_meta_type):
            self.gen_class(t_)
        p, *controls = ck.blocks
        pl = self.pipeline
        pl.new_hdr, pl.new_meta, pl.new_sm = (
            self.hdr_type.pycls,
            self.meta_type.pycls,
            self.std_meta_type.pycls,
        )
        pl.parser = self.compile_parser(p[0].decl, p[1], p[2], arg_scope=self.genv)  # type: ignore[arg-type]
        names = [
            self.compile_control(sym.decl, prefix, args, top=True)  # type: ignore[arg-type]
            for sym, prefix, args in controls
        ]
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
            a = (
                t.decl.annotation("controller_header")
                if isinstance(t.decl, ast.Annotated)
                else None
            )
            if a is None:
                continue
            kind = a.string_value() or ""
            # a struct field's leaves, named by their path (p4c sample issue3329-bmv2: `b.b`)
            leaves = _named_leaves(t)
            fids = self.field_ids([a for _, _, a in leaves], t.decl)
            fields = tuple(
                ControllerHeaderField(f, width_of(ft), fid)
                for (f, ft, _), fid in zip(leaves, fids, strict=True)
            )
            # p4c's symbol is the header type (its control-plane name gives the id); the
            # P4Info preamble is then named after the annotation's value (see p4info.py)
            self.model.controller_headers[kind] = ControllerHeaderInfo(
                name=self.cp_name("", t.decl),
                id=self.ann_id(t.decl),
                annotations=self.annotations_text(t.decl),
                kind=kind,
                fields=fields,
            )
            self.gen_class(t)


def _leaves(t: TStruct, prefix: str = "") -> list[tuple[str, Type]]:
    """(attribute path, type) of a header's scalar fields, a struct field's leaves in its
    place, first field most significant (p4c midend/flattenHeaders.cpp, FlattenHeaders)."""
    out: list[tuple[str, Type]] = []
    for name, ft in t.fields:
        if isinstance(ft, TStruct):
            out.extend(_leaves(ft, f"{prefix}{fld(name)}."))
        else:
            out.append((prefix + fld(name), ft))
    return out


def _named_leaves(t: TStruct, prefix: str = "") -> list[tuple[str, Type, list]]:
    """(dotted name, type, annotations) of a header's scalar fields, as _leaves orders them."""
    out: list[tuple[str, Type, list]] = []
    for name, ft in t.fields:
        if isinstance(ft, TStruct):
            out.extend(_named_leaves(ft, f"{prefix}{name}."))
        else:
            out.append((prefix + name, ft, t.annotations.get(name, [])))
    return out
