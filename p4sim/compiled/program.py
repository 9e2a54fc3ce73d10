"""The compiled backend for a lowered program: a typed variant of the generated Python
(`CompiledProgram.python`, the reference) compiled by Cython inside one factory function.

The interpreted path runs the generated module in a fresh namespace per switch (its tables,
externs and `_RT` are globals there). An extension module is loaded once per process, so
the compiled path wraps its text in `def _p4sim_bind(_ns)`: every name the runtime
injects becomes a local read from `_ns`, the generated definitions become closures over
them, and the factory returns the definitions; each switch calls it once and gets its own
classes and functions, like its own namespace.

The typed emission: the program is lowered a second time with every parser a state dispatch
(`Compiler(parser_inline_limit=0)`: no state copied, so no function is huge and every one
is compiled), its run-time names checked equal to the reference's, and rewritten by
`typed.typed_module` (cclass headers/structs with C integer fields, typed parameters and
locals, C arithmetic only where it is provably exact). The classes go at module level (a
cdef class cannot be defined in a function), the functions in the factory.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import io
import os
import re
import tempfile
import textwrap
import threading
import tokenize
from collections import OrderedDict

from p4sim.lower import CompiledProgram

from . import build, slots
from .build import CompileUnavailable, build_module
from .views import HELPERS, bind_views

BIND = "_p4sim_bind"
_SOURCE_LOCK = threading.Lock()


def _defined(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names]
    raise CompileUnavailable(f"generated code has a top-level {type(node).__name__}: not wrapped")


def _multiline_strings(src: str) -> bool:
    # indenting the text would change a string literal that spans lines
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.STRING and tok.start[0] != tok.end[0]:
            return True
    return False


def typed_python(program: CompiledProgram) -> tuple[str, dict]:
    """The program lowered again for the typed emission (every parser a state dispatch:
    no state copied, no huge function), with its header/struct types; cached on `program`.
    Its run-time names (tables, externs, entry points) must be the reference's."""
    got = program.__dict__.get("_p4sim_typed")
    if got is None:
        from p4sim.check import check
        from p4sim.lower.codegen import Compiler

        c = Compiler(check(program.program), program.model.source, parser_inline_limit=0)
        py = c.compile()
        same = (
            [t.py for t in c.tables] == [t.py for t in program.tables]
            and [e.py for e in c.externs] == [e.py for e in program.externs]
            and c.pipeline == program.pipeline
            and c.value_sets == program.value_sets
        )
        if not same:
            raise CompileUnavailable(
                "the typed emission's run-time names differ from the reference's"
            )
        got = program.__dict__["_p4sim_typed"] = (py, c.struct_types)
    return got


def typed_source(program: CompiledProgram, injected: list[str]) -> str:
    """The extension's source: cclasses at module level (a cdef class cannot live in a
    function), the functions in the `_p4sim_bind` factory."""
    from .typed import typed_module

    py, struct_types = typed_python(program)
    if _multiline_strings(py):
        raise CompileUnavailable("generated code has a multi-line string literal: not wrapped")
    head, funcs = typed_module(py, program, struct_types)
    names: list[str] = []
    for node in ast.parse(head).body + ast.parse(funcs).body:
        names.extend(_defined(node))
    # tables and counter/register arrays read through views bound once (p4sim.compiled.views)
    funcs, prelude = bind_views(funcs, program)
    head += HELPERS
    # the switch's and the entries' attributes read at their offsets (p4sim.compiled.slots)
    funcs = slots.rewrite_recs(slots.rewrite_switch(funcs, "_RT"))
    prelude += slots.prelude(tm="_p4sim_TMT" in funcs)
    head += slots.HELPERS
    out = ["# cython: infer_types=False", "import cython", head, f"def {BIND}(_ns):"]
    out += [f"    {k} = _ns[{k!r}]" for k in injected]
    out += [f"    {line}" for line in prelude]
    out.append(textwrap.indent(funcs, "    "))
    out.append("    return {" + ", ".join(f"{n!r}: {n}" for n in dict.fromkeys(names)) + "}")
    return "\n".join(out) + "\n"


# Made sources by (reference Python, injected names): every Switch of one program binds the
# same source, and making it (ast parse/unparse of the typed module) costs ~0.3 s a switch,
# which a fabric or an experiment building dozens of switches paid each time. Bounded.
_SOURCES: OrderedDict[tuple[str, tuple[str, ...]], str] = OrderedDict()
_SOURCES_MAX = 32


def _cached_source(program: CompiledProgram, injected: list[str]) -> str:
    key = (hashlib.sha256(program.python.encode()).hexdigest(), tuple(injected))
    # one source made at a time: CPython 3.11's ast.parse, run in two threads at once (a
    # sweep's threaded workers building switches), fails with "AST constructor recursion
    # depth mismatch" (tests/fabric/test_sweep.py met it)
    with _SOURCE_LOCK:
        source = _SOURCES.get(key)
        if source is None:
            source = _SOURCES[key] = typed_source(program, injected)
            if len(_SOURCES) > _SOURCES_MAX:
                _SOURCES.popitem(last=False)
        else:
            _SOURCES.move_to_end(key)
    return source


# The warm-start index. Making the source costs ~2 s CPU on roce_switch.p4 (typed_source:
# the typed re-lowering, typed_module's ast walks, bind_views' regexes), and each new
# process paid it only to hash the text into build.module_key. The index maps a hash of
# everything the source is made from to the built module's name, so a warm process loads the
# .so without making the source. Any miss, bad entry or missing module falls back to making
# the source (the module key, computed from it, stays the authority).
_INDEX_DIR = ".index"  # a dot name: build.prune skips it
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*_[0-9a-f]{16}")
_code_digest: str | None = None
# Off: every bind makes the source. Tests that plant a bug in the maker in memory turn it
# off (the index keys p4sim's code on disk, which such a plant does not change).
INDEX = True


def code_digest() -> str:
    """A hash of p4sim's own code (every .py and the arch .p4 files of the package): the
    generator the source comes from. Conservative: an edit anywhere in p4sim misses the index
    once (one source made, ~2 s), never loads a module made by other code."""
    global _code_digest
    if _code_digest is None:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        h = hashlib.sha256()
        for d, dirs, files in os.walk(root):
            dirs[:] = sorted(x for x in dirs if x != "__pycache__")
            for f in sorted(files):
                if f.endswith((".py", ".p4")):
                    path = os.path.join(d, f)
                    h.update(os.path.relpath(path, root).encode() + b"\0")
                    with open(path, "rb") as fh:
                        h.update(fh.read())
                    h.update(b"\0")
        _code_digest = h.hexdigest()
    return _code_digest


def index_key(program: CompiledProgram, injected: list[str], stem: str) -> str:
    """Everything the made source and its module name depend on: the checked program itself
    (its dataclass repr, every field but source spans: the typed emission lowers it again,
    so the reference's generated Python alone is not taken as its stand-in; ~5 ms on
    roce_switch.p4), that generated Python, the injected names, the stem, p4sim's code, and
    the toolchain parts of build.module_key."""
    h = hashlib.sha256()
    for part in (
        repr(program.program),
        program.python,
        "\0".join(injected),
        stem,
        code_digest(),
        *build.toolchain_parts(".py"),
    ):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def _index_path(key: str) -> str:
    return os.path.join(build.cache_dir(), _INDEX_DIR, key)


def index_lookup(key: str, stem: str) -> str | None:
    """The module name the index holds for `key`, or None (absent, unreadable, or not a
    name of this stem: a damaged entry is a miss, never an error)."""
    try:
        with open(_index_path(key), encoding="ascii") as f:
            name = f.read().strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not _NAME.fullmatch(name) or name.rsplit("_", 1)[0] != stem:
        return None
    return name


def index_store(key: str, name: str) -> None:
    """Record `key` -> `name` atomically (written aside, renamed into place: a concurrent
    reader sees the old entry or the whole new one). Best effort: a read-only cache only
    costs the next process the source."""
    d = os.path.dirname(_index_path(key))
    try:
        os.makedirs(d, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
        try:
            with os.fdopen(fd, "w", encoding="ascii") as f:
                f.write(name + "\n")
            os.replace(tmp, _index_path(key))
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError:
        pass


def bind(program: CompiledProgram, ns: dict, wait: bool = True) -> None:
    """Fill `ns` (already holding the runtime's objects) with the compiled definitions;
    `wait=False`: a module not built yet is built in the background (CompileUnavailable now)."""
    injected = sorted(k for k in ns if not k.startswith("__"))
    base = os.path.splitext(os.path.basename(program.model.source))[0]
    stem = "p4_" + "".join(c if c.isalnum() else "_" for c in base)[:40]
    key = index_key(program, injected, stem) if INDEX else ""
    name = index_lookup(key, stem) if key else None
    mod = build.load_cached(name) if name else None
    if mod is None:
        source = _cached_source(program, injected)
        mod = build_module(source, stem, wait=wait)
        if key:
            index_store(key, mod.__name__)
    ns.update(getattr(mod, BIND)(ns))
