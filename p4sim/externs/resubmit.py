"""v1model `resubmit`/`recirculate` (deprecated, with a field list) and their
`_preserving_field_list` forms: the switch runs the packet through ingress again (resubmit,
after ingress) or through the whole pipeline (recirculate, after the deparser)."""

from __future__ import annotations

from typing import Any

from p4sim.check.types import VOID
from p4sim.lower.codegen import V

from . import extern
from ._common import field_list_fn, listed_fields_fn
from .base import Extern


@extern
class Resubmit(Extern):
    functions = (
        "resubmit",
        "recirculate",
        "resubmit_preserving_field_list",
        "recirculate_preserving_field_list",
    )

    def check_call(self, ck: Any, name: str, argv: list, c: Any, scope: Any, ctx: Any) -> None:
        if not name.endswith("_preserving_field_list"):
            ck.listed_fields(argv[0], scope)

    def call(self, cc: Any, name: str, argv: list, c: Any, scope: Any, fn: Any) -> Any:
        what = name.split("_")[0]
        if name.endswith("_preserving_field_list"):
            fl = field_list_fn(cc, argv[0], scope)
        else:
            fl = listed_fields_fn(cc, argv[0], scope)
        fn.emit(f"_RT.{what}({fl})")
        return V("None", VOID)

    # ------------------------------------------------------------------ per packet

    # simple_switch.cpp ingress_thread: RESUBMIT after INGRESS CLONING and LEARNING, before
    # MULTICAST and the drop check (a resubmitted packet is never also forwarded)
    after_ingress_order = 30
    # egress_thread: RECIRCULATE after the deparser, instead of output
    after_deparse_order = 30

    def setup(self, sw: Any, program: Any, ns: dict) -> None:
        sw.resub_req = None  # (copy function of the preserved fields,) or None
        sw.recirc_req = None

    def runtime_methods(self) -> dict[str, Any]:
        return {"resubmit": _resubmit, "recirculate": _recirculate}

    def reset(self, sw: Any) -> None:
        sw.resub_req = sw.recirc_req = None

    def after_ingress(
        self, sw: Any, port: int, frame: bytes, hdr: Any, meta: Any, sm: Any, passes: int
    ) -> bool:
        req = sw.resub_req
        if req is None:
            return False
        # the original frame through ingress again, all metadata reset but the preserved fields
        sw.reinject(port, frame, RESUBMIT, meta, req[0], passes)
        return True

    def after_deparse(self, sw: Any, pkt: Any, data: bytes, meta: Any) -> bool:
        req = sw.recirc_req
        if req is None:
            return False
        # the deparsed (and cut) packet through the whole pipeline again
        sw.reinject(pkt.in_port, data, RECIRC, meta, req[0], pkt.passes)
        return True


RECIRC, RESUBMIT = 4, 6  # standard_metadata.instance_type (BMv2 PKT_INSTANCE_TYPE_RECIRC/RESUBMIT)


def _resubmit(sw: Any, fl: Any) -> None:
    sw.resub_req = (fl,)
    sw.request()


def _recirculate(sw: Any, fl: Any) -> None:
    sw.recirc_req = (fl,)
    sw.request()
