"""v1model `clone`, `clone_preserving_field_list` and the deprecated `clone3`: ask the
traffic manager for an ingress-to-egress (I2E) or egress-to-egress (E2E) copy to a clone
session. The copies are made after the control, by this module's stage hooks, as
simple_switch does; a session's truncate length cuts its copies."""

from __future__ import annotations

from typing import Any

from p4sim.check.types import VOID
from p4sim.lower.codegen import V

from . import extern
from ._common import enum_member, field_list_fn, listed_fields_fn
from .base import Extern


@extern
class Clone(Extern):
    functions = ("clone", "clone_preserving_field_list", "clone3")

    def check_call(self, ck: Any, name: str, argv: list, c: Any, scope: Any, ctx: Any) -> None:
        if name == "clone3":
            ck.listed_fields(argv[2], scope)

    def call(self, cc: Any, name: str, argv: list, c: Any, scope: Any, fn: Any) -> Any:
        ct = enum_member(argv[0])
        sess = cc.expr(argv[1], scope, fn).code
        fl = "None"
        if name == "clone_preserving_field_list":
            fl = field_list_fn(cc, argv[2], scope)
        elif name == "clone3":
            fl = listed_fields_fn(cc, argv[2], scope)
        fn.emit(f"_RT.clone({1 if ct == 'I2E' else 2}, {sess}, {fl})")
        return V("None", VOID)

    # ------------------------------------------------------------------ per packet

    # simple_switch.cpp ingress_thread: INGRESS CLONING comes first after the ingress
    # control, before LEARNING, RESUBMIT and MULTICAST
    after_ingress_order = 10
    # egress_thread: EGRESS CLONING right after the egress control, before the drop check
    after_egress_order = 10

    def setup(self, sw: Any, program: Any, ns: dict) -> None:
        sw.clone_req = None  # (I2E or E2E, session, copy function of the preserved fields)

    def runtime_methods(self) -> dict[str, Any]:
        return {"clone": _request}

    def reset(self, sw: Any) -> None:
        sw.clone_req = None

    def after_ingress(
        self, sw: Any, port: int, frame: bytes, hdr: Any, meta: Any, sm: Any, passes: int
    ) -> bool:
        req = sw.clone_req
        if req is None or req[0] != I2E:  # an E2E clone asked for in ingress does nothing
            return False
        sess = sw.pre.session(req[1])
        if sess is None:  # not configured: no clone (mirroring_get_session fails)
            return False
        replicas, cap = sess
        for eport, rid in replicas:
            # the original frame, parsed again (ingress_thread: "We need to parse again")
            parsed = sw.reparse(port, frame, I2E)
            if parsed is None:
                continue
            h2, payload = parsed
            # then all metadata reset (RegisterAccess::clear_all, copy_field_list_and_set_type):
            # only the preserved fields come back; ingress_port, timestamps and the parser
            # and checksum errors read 0 in the clone's egress
            m2 = sw.new_meta()
            if req[2] is not None:
                req[2](meta, m2)
            sw.enqueue_copy(
                h2, m2, sw.new_sm(len(frame), I2E, rid), payload, frame, passes, port, cap, eport
            )
        return False

    def after_egress(self, sw: Any, pkt: Any, hdr: Any, meta: Any, sm: Any) -> bool:
        req = sw.clone_req
        if req is None or req[0] != E2E:
            return False
        sess = sw.pre.session(req[1])
        if sess is None:
            return False
        for eport, rid in sess[0]:
            # the headers as egress left them; all metadata reset
            # (clone_with_phv_reset_metadata_ptr) but the preserved fields
            m2 = sw.new_meta()
            if req[2] is not None:
                req[2](meta, m2)
            s2 = sw.new_sm(sm.f_packet_length, E2E, rid)
            sw.enqueue_copy(
                hdr.copy(), m2, s2, pkt.payload, pkt.frame, pkt.passes, pkt.in_port, sess[1], eport
            )
        return False

    # ------------------------------------------------------------------ operations

    def api(self) -> dict[str, Any]:
        return {"clone_session_set": _session_set, "clone_session_delete": _session_delete}

    def stf_commands(self) -> dict[str, Any]:
        return {"mirroring_add": _stf_mirroring_add, "mirroring_add_mc": _stf_mirroring_add_mc}


I2E, E2E = 1, 2  # standard_metadata.instance_type of the copies (BMv2 PKT_INSTANCE_TYPE_*_CLONE)


def _request(sw: Any, ctype: int, session: int, fl: Any) -> None:
    # a second clone in the same pass replaces the first (BMv2 keeps one session id)
    sw.clone_req = (ctype, session, fl)
    sw.request()


def _session_set(sw: Any, session: int, replicas: list[tuple[int, int]], truncate: int = 0) -> None:
    """Clone session `session`: copies to these (port, rid), cut to `truncate` bytes (0: whole)."""
    sw.pre.session_set(session, replicas, truncate)


def _session_delete(sw: Any, session: int) -> None:
    sw.pre.session_delete(session)


def _stf_mirroring_add(r: Any, c: Any) -> None:
    """mirroring_add SESSION PORT"""
    a = c.args
    r.sw.clone_session_set(int(a[0]), [(int(a[1]), 0)])


def _stf_mirroring_add_mc(r: Any, c: Any) -> None:
    """mirroring_add_mc SESSION GROUP: copies to every member of multicast group GROUP"""
    a = c.args
    grp = int(a[1])
    r.sw.clone_session_set(int(a[0]), list(r.sw.pre.replicas(grp)))
