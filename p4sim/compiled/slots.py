"""Slot reads at a fixed offset: the per-packet attributes of the switch (`_RT.plen`,
`_RT.drop_port` in the generated code; `sw._now`, `sw.tm`, `sw.stats`, ... in the compiled
driver) and of a table entry (`Rec.aid`, `Rec.args`), read from C as one load.

From C, `obj.attr` is a generic `PyObject_GetAttr`: a type lookup, then the slot's member
descriptor (or the compiled Rec's property) called through the descriptor protocol: about
200 instructions under callgrind, and the compiled driver and pipeline made ~40 such reads
per packet of roce_switch.p4. A `__slots__` slot (CPython's member descriptor, T_OBJECT_EX:
Objects/descrobject.c member_get, Python/structmember.c PyMember_GetOne) and a cdef class's
object field are a `PyObject *` at a fixed offset of the object, the same for every instance
of the type; the generated code reads it there when the object's type is exactly the
probed one, and takes getattr otherwise (another type, or an unset slot: getattr raises
the AttributeError the reference raises).

The offsets are not read from CPython's structures: they are found by probing, when the
switch is built (`offsets`): a fresh sentinel object is stored through the attribute itself
and the object's words are searched for its address; exactly one word must hold it, and
reading the attribute back must give the sentinel (so the attribute is that field, not a
computed value). A name that fails any of this keeps getattr (offset -1).
"""

from __future__ import annotations

import ctypes
import inspect
import re
import types

from .binding import runtime

# the entry fields the generated code reads per apply (p4sim.runtime.tables.Rec)
REC_FIELDS = ("aid", "args")

HELPERS = """
from cython.cimports.cpython.ref import PyObject as _p4sim_PyObject, Py_INCREF as _p4sim_INCREF, Py_XDECREF as _p4sim_XDECREF


@cython.cfunc
@cython.inline
def _p4sim_sget(o: object, t: type, off: cython.Py_ssize_t, name: str) -> object:
    # getattr(o, name) read as the word at `off` when o's type is the probed one (slots.py)
    p: cython.pointer(cython.pointer(_p4sim_PyObject))
    if off >= 0 and type(o) is t:
        p = cython.cast(cython.pointer(cython.pointer(_p4sim_PyObject)),
                        cython.cast(cython.p_char, cython.cast(cython.pointer(_p4sim_PyObject), o)) + off)
        if p[0] != cython.NULL:
            return cython.cast(object, p[0])
    return getattr(o, name)


@cython.cfunc
@cython.inline
def _p4sim_sset(o: object, t: type, off: cython.Py_ssize_t, name: str, v: object) -> cython.void:
    # setattr(o, name, v) for a member descriptor's slot (only those are written this way)
    p: cython.pointer(cython.pointer(_p4sim_PyObject))
    old: cython.pointer(_p4sim_PyObject)
    if off >= 0 and type(o) is t:
        p = cython.cast(cython.pointer(cython.pointer(_p4sim_PyObject)),
                        cython.cast(cython.p_char, cython.cast(cython.pointer(_p4sim_PyObject), o)) + off)
        old = p[0]
        _p4sim_INCREF(v)
        p[0] = cython.cast(cython.pointer(_p4sim_PyObject), v)
        _p4sim_XDECREF(old)
        return
    setattr(o, name, v)
"""

_WORD = ctypes.sizeof(ctypes.c_void_p)
_UNSET = object()


def _find(obj: object, value: object) -> int:
    """The offset of the one word of `obj` that holds `value`'s address, or -1."""
    base = id(obj)
    hits = [
        off
        for off in range(object.__basicsize__, type(obj).__basicsize__ - _WORD + 1, _WORD)
        if ctypes.c_void_p.from_address(base + off).value == id(value)
    ]
    return hits[0] if len(hits) == 1 else -1


def slot_offsets(obj: object, names: tuple[str, ...]) -> dict[str, int]:
    """Offset of each `__slots__` slot of `type(obj)` among `names` (-1: read by getattr),
    found by storing a sentinel in it on `obj` itself and restoring the value after."""
    cls = type(obj)
    out: dict[str, int] = {}
    for name in names:
        out[name] = -1
        if type(inspect.getattr_static(cls, name, None)) is not types.MemberDescriptorType:
            continue  # not a slot of this type (or shadowed by a subclass): getattr
        old = getattr(obj, name, _UNSET)
        probe = object()
        setattr(obj, name, probe)
        try:
            off = _find(obj, probe)
            if off >= 0 and getattr(obj, name) is probe:
                out[name] = off
        finally:
            if old is _UNSET:
                delattr(obj, name)
            else:
                setattr(obj, name, old)
    return out


def rec_offsets(rec_cls: type) -> dict[str, int]:
    """Offsets of `Rec.aid` and `Rec.args` in `rec_cls` (the reference Rec with slots or the
    compiled one with object fields: tables.py, runtime/_write.pyx), found on a probe entry."""
    probes = {name: object() for name in REC_FIELDS}
    r = rec_cls(None, probes["aid"], probes["args"])
    return {
        name: (off if (off := _find(r, p)) >= 0 and getattr(r, name) is p else -1)
        for name, p in probes.items()
    }


def switch_slots() -> tuple[str, ...]:
    """The slots of the runtime's Switch (handed over at p4sim.compiled.binding)."""
    return tuple(n for n in runtime().switch.__slots__ if not n.startswith("__"))


def _rewrite(text: str, obj: str, names: tuple[str, ...], typ: str, prefix: str) -> str:
    alt = "|".join(map(re.escape, names))
    ref = rf"(?<![\w.]){re.escape(obj)}\.({alt})(?!\w)"
    if re.search(ref + r"\s*(?:[-+*/%&|^]|<<|>>|//|\*\*)=", text):
        raise ValueError(f"generated code updates {obj}.<slot> in place: not rewritten")
    # a whole-line assignment: the write helper
    text = re.sub(
        rf"^(\s*){ref}\s*=(?!=)\s*(.+)$",
        lambda m: (
            f"{m.group(1)}_p4sim_sset({obj}, {typ}, {prefix}{m.group(2)}, {m.group(2)!r}, {m.group(3)})"
        ),
        text,
        flags=re.M,
    )
    if re.search(ref + r"\s*=(?!=)", text):
        raise ValueError(f"generated code assigns {obj}.<slot> inside an expression: not rewritten")
    return re.sub(
        ref, lambda m: f"_p4sim_sget({obj}, {typ}, {prefix}{m.group(1)}, {m.group(1)!r})", text
    )


def rewrite_switch(text: str, obj: str) -> str:
    """`text` with `obj.<Switch slot>` read and written through the offset helpers
    (`_p4sim_SwT`, `_p4sim_os_<name>`: bound by `prelude`)."""
    return _rewrite(text, obj, switch_slots(), "_p4sim_SwT", "_p4sim_os_")


def tm_slots() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The slots of TrafficManager and of its port state (p4sim/runtime/tm.py, handed over at
    p4sim.compiled.binding)."""
    rt = runtime()
    return (
        tuple(n for n in rt.traffic_manager.__slots__ if not n.startswith("__")),
        tuple(n for n in rt.port_state.__slots__ if not n.startswith("__")),
    )


def rewrite_tm(text: str) -> str:
    """The compiled driver's copy of send_now (`tm`, `state`) through the offset helpers."""
    tm, ps = tm_slots()
    return _rewrite(
        _rewrite(text, "tm", tm, "_p4sim_TMT", "_p4sim_ot_"),
        "state",
        ps,
        "_p4sim_PST",
        "_p4sim_op_",
    )


def rewrite_recs(text: str) -> str:
    """`text` with the generated code's entry reads (`_r<N>.aid`, `_r<N>.args`) through
    the offset helpers (`_p4sim_RecT`, `_p4sim_or_<name>`)."""
    alt = "|".join(REC_FIELDS)
    if re.search(rf"(?<![\w.])(_r\d+)\.({alt})\s*=(?!=)", text):
        raise ValueError("generated code assigns an entry's field: not rewritten")
    return re.sub(
        rf"(?<![\w.])(_r\d+)\.({alt})(?!\w)",
        lambda m: f"_p4sim_sget({m.group(1)}, _p4sim_RecT, _p4sim_or_{m.group(2)}, {m.group(2)!r})",
        text,
    )


def prelude(tm: bool = False) -> list[str]:
    """The factory lines that probe the offsets on this switch (`_RT`) and its Rec class;
    `tm`: and those of the traffic manager's classes (the driver's copy of send_now)."""
    out = [
        "from p4sim.compiled.slots import slot_offsets as _p4sim_slot_offsets, rec_offsets as _p4sim_rec_offsets",
        "from p4sim.compiled.binding import runtime as _p4sim_runtime",
        "_p4sim_Rec = _p4sim_runtime().rec",
        "_p4sim_SwT = cython.declare(type, type(_RT))",
        f"_p4sim_os = _p4sim_slot_offsets(_RT, {switch_slots()!r})",
        "_p4sim_RecT = cython.declare(type, _p4sim_Rec)",
        "_p4sim_or = _p4sim_rec_offsets(_p4sim_Rec)",
    ]
    out += [
        f"_p4sim_os_{n} = cython.declare(cython.Py_ssize_t, _p4sim_os[{n!r}])"
        for n in switch_slots()
    ]
    out += [
        f"_p4sim_or_{n} = cython.declare(cython.Py_ssize_t, _p4sim_or[{n!r}])" for n in REC_FIELDS
    ]
    if tm:  # the driver's copy of send_now: probed on a fresh traffic manager and port state
        tms, pss = tm_slots()
        out += [
            "_p4sim_TMc = _p4sim_runtime().traffic_manager",
            "_p4sim_PSc = _p4sim_runtime().port_state",
            "_p4sim_TMT = cython.declare(type, _p4sim_TMc)",
            "_p4sim_TM_send_now = _p4sim_TMc.send_now",
            f"_p4sim_ot = _p4sim_slot_offsets(_p4sim_TMc(), {tms!r})",
            "_p4sim_PST = cython.declare(type, _p4sim_PSc)",
            f"_p4sim_op = _p4sim_slot_offsets(_p4sim_PSc(capacity=[0]), {pss!r})",
        ]
        out += [f"_p4sim_ot_{n} = cython.declare(cython.Py_ssize_t, _p4sim_ot[{n!r}])" for n in tms]
        out += [f"_p4sim_op_{n} = cython.declare(cython.Py_ssize_t, _p4sim_op[{n!r}])" for n in pss]
    return out
