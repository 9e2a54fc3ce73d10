"""v1model `digest<T>(receiver, data)`: a struct of values sent to the control plane
(delivered at once to the `on_digest` callbacks, or kept in `Switch.digests` when there
are none; the P4Runtime server streams it as DigestList). p4c names the digest
after the struct type, and lists the struct's fields in P4Info's type_info."""

from __future__ import annotations

from typing import Any

from p4sim.check.types import VOID, TStruct, unsupported, width_of
from p4sim.lower.codegen import V, fld
from p4sim.model import DigestInfo

from . import extern
from .base import Extern


@extern
class Digest(Extern):
    functions = ("digest",)
    model_field = "digests"
    p4info_prefix = "DIGEST"
    entities = ("digest_entry",)

    def check_call(self, ck: Any, name: str, argv: list, c: Any, scope: Any, ctx: Any) -> None:
        if not isinstance(argv[1].checked_type, TStruct):
            raise unsupported("digest of a non-struct value", argv[1])

    def call(self, cc: Any, name: str, argv: list, c: Any, scope: Any, fn: Any) -> Any:
        d = cc.expr(argv[1], scope, fn)  # a struct (check_call)
        dname = cc.cp_name("", d.type.decl) if d.type.decl is not None else d.type.name
        flds = tuple((f, width_of(ft)) for f, ft in d.type.fields)
        cc.model.digests.setdefault(dname, DigestInfo(name=dname, fields=flds))
        vals = ", ".join(f"{f!r}: {d.code}.{fld(f)}" for f, _ in flds)
        fn.emit(f"_RT.digest({dname!r}, {{{vals}}})")
        return V("None", VOID)

    def p4info(self, out: Any, info: Any, pre: Any, ids: Any) -> None:
        msg = out.digests.add()
        pre(msg, self.p4info_prefix, info)
        struct_name = info.name[1:] if info.name.startswith(".") else info.name
        msg.type_spec.struct.name = struct_name
        struct = out.type_info.structs[struct_name]
        del struct.members[:]
        for fname, width in info.fields:
            m = struct.members.add()
            m.name = fname
            m.type_spec.bitstring.bit.bitwidth = width

    def describe(self, info: Any) -> str:
        return f"digest {info.name}: " + ", ".join(f"{n}<{w}>" for n, w in info.fields)

    def write(self, svc: Any, p: Any, utype: int, entity: str, de: Any) -> None:
        from p4rtproto import p4runtime_pb2
        from p4rtproto.errors import RequestError

        upd = p4runtime_pb2.Update
        info = p.maps.digest(de.digest_id)
        if utype == upd.DELETE:
            if de.digest_id not in p.digest_configs:
                raise RequestError("NOT_FOUND", f"digest {info.name} is not configured")
            del p.digest_configs[de.digest_id]
            return
        if utype == upd.INSERT and de.digest_id in p.digest_configs:
            raise RequestError("ALREADY_EXISTS", f"digest {info.name} is already configured")
        if utype == upd.MODIFY and de.digest_id not in p.digest_configs:
            raise RequestError("NOT_FOUND", f"digest {info.name} is not configured")
        cfg = p4runtime_pb2.DigestEntry.Config()
        cfg.CopyFrom(de.config)
        p.digest_configs[de.digest_id] = cfg

    def read(self, svc: Any, p: Any, entity: str, req: Any) -> Any:
        from p4rtproto import p4runtime_pb2

        if req.digest_id:
            p.maps.digest(req.digest_id)
        ids = [req.digest_id] if req.digest_id else sorted(p.digest_configs)
        for did in ids:
            if did in p.digest_configs:
                de = p4runtime_pb2.DigestEntry(digest_id=did)
                de.config.CopyFrom(p.digest_configs[did])
                yield (p4runtime_pb2.Entity(digest_entry=de))

    # ------------------------------------------------------------------ per packet

    def setup(self, sw: Any, program: Any, ns: dict) -> None:
        sw.digest_callbacks = []
        sw.digests = []  # (name, values) kept when nobody listens (STF, tests)

    def runtime_methods(self) -> dict[str, Any]:
        return {"digest": _send}

    def api(self) -> dict[str, Any]:
        return {"on_digest": _on_digest}


def _send(sw: Any, name: str, values: dict) -> None:
    if sw.digest_callbacks:
        for cb in sw.digest_callbacks:
            cb(name, values)
    else:
        sw.digests.append((name, values))


def _on_digest(sw: Any, callback: Any) -> None:
    """callback(digest_name, values) for every digest the program sends."""
    sw.digest_callbacks.append(callback)
