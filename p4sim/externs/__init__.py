"""One module per v1model extern, in a registry keyed by the extern's `v1model.p4` name.

Each module holds everything p4sim knows about its extern: the lowering hooks (code emitted
for an instantiation and for method or function calls), the runtime object, its P4Info
entry, its P4Runtime read/write and its declared-size bound for the P4Runtime server's
sandbox. Nothing else in p4sim lists extern kinds: the compiler, the switch, P4Info, the
CLI, the sandbox and the server look an extern up here.

A new extern is one file in this package (a subclass of `Extern` decorated with
`@extern`) plus its declaration in `arch/v1model.p4`. Modules load on the first lookup;
`load_package` loads another package's modules the same way (a test's toy extern).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .base import Extern, RefusedExtern, lowers

__all__ = [
    "Extern",
    "RefusedExtern",
    "lowers",
    "extern",
    "unregister",
    "lookup",
    "function",
    "by_entity",
    "all_externs",
    "load_package",
    "operations",
    "stf_command",
    "all_stf_commands",
    "stage_hooks",
]

_OBJECTS: dict[str, Extern] = {}  # extern object type name -> its module's Extern
_FUNCTIONS: dict[str, Extern] = {}  # extern function name -> the Extern lowering it
_ALL: list[Extern] = []  # every registered module's Extern, in registration order
_loaded = False


def extern(cls: type[Extern]) -> type[Extern]:
    """Class decorator: put one instance of `cls` in the registry under its names."""
    ext = cls()
    for table, names in ((_OBJECTS, (ext.name,) if ext.name else ()), (_FUNCTIONS, ext.functions)):
        for n in names:
            old = table.get(n)
            if old is not None and type(old) is not cls:
                raise RuntimeError(
                    f"extern {n!r} registered twice ({type(old).__name__}, {cls.__name__})"
                )
            table[n] = ext
    if not any(type(e) is cls for e in _ALL):
        _ALL.append(ext)
    return cls


def unregister(cls: type[Extern]) -> None:
    for table in (_OBJECTS, _FUNCTIONS):
        for n in [n for n, e in table.items() if type(e) is cls]:
            del table[n]
    _ALL[:] = [e for e in _ALL if type(e) is not cls]


def load_package(package: str) -> None:
    """Import every public module of `package` (each registers its externs)."""
    pkg = importlib.import_module(package)
    for m in pkgutil.iter_modules(pkg.__path__):
        if not m.name.startswith("_") and m.name != "base":
            importlib.import_module(f"{package}.{m.name}")


def _ensure() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        load_package(__name__)


def lookup(name: str) -> Extern | None:
    """The module of extern object type `name` (None: p4sim has none)."""
    _ensure()
    return _OBJECTS.get(name)


def function(name: str) -> Extern | None:
    """The module lowering extern function `name` (None: p4sim has none)."""
    _ensure()
    return _FUNCTIONS.get(name)


def all_externs() -> Iterator[Extern]:
    """Every registered extern once, in registration order."""
    _ensure()
    yield from list(_ALL)


def with_model() -> Iterator[Extern]:
    """The externs that put control-plane objects in `ProgramModel` (and P4Info)."""
    return (e for e in all_externs() if e.model_field)


def by_entity(entity: str) -> Extern | None:
    """The extern serving P4Runtime `Entity` oneof `entity` (e.g. "counter_entry")."""
    return next((e for e in all_externs() if entity in e.entities), None)


def operations() -> dict[str, Callable[..., Any]]:
    """Every extern's SwitchAPI operations (`Extern.api`), by name; a name two externs
    claim is an error."""
    out: dict[str, Callable[..., Any]] = {}
    owner: dict[str, Extern] = {}
    for e in all_externs():
        for n, f in e.api().items():
            if n in out:
                raise RuntimeError(
                    f"SwitchAPI operation {n!r} defined by {type(owner[n]).__name__} "
                    f"and {type(e).__name__}"
                )
            out[n], owner[n] = f, e
    return out


def all_stf_commands() -> dict[str, Callable[..., Any]]:
    """Every extern's STF commands, by op."""
    return {op: f for e in all_externs() for op, f in e.stf_commands().items()}


def stf_command(op: str) -> Callable[..., Any] | None:
    """The extern command `op` of an STF file (None: no extern has it)."""
    found = [f for e in all_externs() if (f := e.stf_commands().get(op)) is not None]
    if len(found) > 1:
        raise RuntimeError(f"STF command {op!r} is defined by more than one extern")
    return found[0] if found else None


def stage_hooks(stage: str, used: Iterable[Extern]) -> tuple[Callable[..., bool], ...]:
    """The `stage` hooks ("after_ingress", ...) of the externs in `used` that define one, in
    their `<stage>_order`."""
    mine = [e for e in used if getattr(type(e), stage) is not getattr(Extern, stage)]
    mine.sort(key=lambda e: getattr(e, stage + "_order"))
    return tuple(getattr(e, stage) for e in mine)
