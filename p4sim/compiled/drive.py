"""The compiled driver: `Switch.send`'s common case as one typed function of the program's
extension module, `_p4sim_drive(sw, port, frame)`.

It is `Switch._ingress_pass(port, frame, NORMAL, None, None, 0, direct=True)` followed by
`Switch._egress_run(None, ...)` (p4sim/runtime/switch.py), step for step, with
standard_metadata written as C fields of the typed class and the stages called inside the
module. Every case it does not inline is handed back to the Python driver at the point
where the two part, with the state the Python driver would have there:
- after ingress, an extern's request, multicast, a drop, a traffic manager that is not the
  TrafficManager class itself (the tests' reference) or a packet the idle traffic manager
  does not let through at once: `Switch._dispatch` (`send_now` changes nothing when it
  refuses, so the queued path starts from the same state);
- after egress, an extern's request or the CPU port: `Switch._egress_out`.
The switch uses it only with the compiled backend; the Python driver stays the reference
(tests/p4sim_runtime/test_switch_fastpath.py runs both on the same traffic).
"""

from __future__ import annotations

from collections.abc import Callable

from p4sim.lower import CompiledProgram

from . import slots

# the standard_metadata fields the driver writes or reads as C integers (v1model's own)
SM_FIELDS = (
    "f_ingress_port",
    "f_egress_spec",
    "f_egress_port",
    "f_instance_type",
    "f_packet_length",
    "f_enq_timestamp",
    "f_enq_qdepth",
    "f_deq_timedelta",
    "f_deq_qdepth",
    "f_ingress_global_timestamp",
    "f_egress_global_timestamp",
    "f_mcast_grp",
    "f_priority",
    "f_checksum_error",
)

NAME = "_p4sim_drive"
SEND = "_p4sim_send"  # Switch.send with the driver (the switch binds it as its `send`)

# module-level names the driver uses (prefixed: generated names are mangled, no clash)
IMPORTS = """from p4sim.compiled.binding import runtime as _p4sim_runtime
_p4sim_TM = _p4sim_runtime().traffic_manager
from p4sim.lower.rt import ParserError as _p4sim_ParserError
from p4sim.model import OutputPacket as _p4sim_OutputPacket
from struct import error as _p4sim_struct_error
_p4sim_new = object.__new__
"""

_TEMPLATE = """
def _p4sim_drive(sw, port, frame):
    hdr: {H} = {newH}
    meta: {M} = {newM}
    sm: {S} = {newS}
    plen = len(frame)
    sm.f_packet_length = plen
    sm.f_instance_type = 0
    sm.f_ingress_port = port
    sm.f_ingress_global_timestamp = (sw._now // 1000) & 0xFFFFFFFFFFFF
    if sw._dirty:
        sw._reset_flags()
    sw.plen = plen
    try:
        payload = frame[{P}(frame, hdr, meta, sm):]
        sw.payload = payload
        {V}(hdr, meta)
    except sw._parse_errors as e:
        sw._runtime_error("parser", e)
        return False
    if sw.cksum_err:
        sm.f_checksum_error = 1
    try:
        {I}(hdr, meta, sm)
    except sw._stops as e:
        sw.log.append(str(e))
        sw.stats["drops"] += 1
        return False
    except (IndexError, ZeroDivisionError, ValueError, OverflowError, _p4sim_ParserError) as e:
        sw._runtime_error("ingress", e)
        return False
    tm = sw.tm
    if sw._pending or sm.f_mcast_grp or sm.f_egress_spec == sw.drop_port or type(tm) is not _p4sim_TM:
        return sw._dispatch(port, frame, hdr, meta, sm, payload, 0, True)
    sm.f_instance_type = 0
    eport = sm.f_egress_spec
    now = sw._now
{SEND_NOW}    if tx < 0:
        return sw._dispatch(port, frame, hdr, meta, sm, payload, 0, False)
    t_us = now // 1000
    sm.f_egress_port = eport
    sm.f_egress_spec = 0
    sm.f_enq_timestamp = t_us & 0xFFFFFFFF
    sm.f_enq_qdepth = 0
    sm.f_deq_timedelta = 0
    sm.f_deq_qdepth = 0
    sm.f_egress_global_timestamp = t_us & 0xFFFFFFFFFFFF
    trunc = sw.cap
    end = now + tx
    if sw._dirty:
        sw._reset_flags()
    sw.plen = sm.f_packet_length
    sw.payload = payload
    try:
        {E}(hdr, meta, sm)
    except sw._stops as e:
        sw.log.append(str(e))
        sw.stats["drops"] += 1
        return True
    except (IndexError, ZeroDivisionError, ValueError, OverflowError, _p4sim_ParserError) as e:
        sw._runtime_error("egress", e)
        return True
    if sw._pending or eport == sw.cpu_port:
        sw._egress_out(None, hdr, meta, sm, payload, frame, 0, port, trunc, eport, end)
        return True
    cap = sw.cap
    if sm.f_egress_spec == sw.drop_port:
        sw.stats["drops"] += 1
        return True
    out = []
    try:
        {C}(hdr, meta)
        {D}(out, hdr)
    except (IndexError, ZeroDivisionError, ValueError, OverflowError, _p4sim_ParserError,
            _p4sim_struct_error) as e:
        sw._runtime_error("deparser", e)
        return True
    out.append(payload)
    data = b"".join(out)
    if cap and len(data) > cap:
        data = data[:cap]
    if trunc and len(data) > trunc:
        data = data[:trunc]
    sw.stats["tx"] += 1
    o = _p4sim_new(_p4sim_OutputPacket)
    d = o.__dict__
    d["port"] = eport
    d["data"] = data
    d["time_ns"] = end
    sw._out.append(o)
    return True

"""


# TrafficManager.send_now (p4sim/runtime/tm.py) step for step, for the TrafficManager class
# itself with its own send_now (an instance's or a class's replacement is called instead),
# its and its port state's attributes read at their slots' offsets (p4sim.compiled.slots)
SEND_NOW_INLINE = """    prio = sm.f_priority
    length = sm.f_packet_length
    if "send_now" in tm.__dict__ or _p4sim_TMT.send_now is not _p4sim_TM_send_now:
        tx = tm.send_now(eport, prio, length, now)
    elif tm._active or tm._departed or not 0 <= prio < tm.nb_queues:
        tx = -1
    else:
        state = tm._ports.get(eport)
        if state is None:
            state = tm._port(eport)
        if state.capacity[prio] <= 0 or state.busy_until > now or state.paused_until[prio] > now:
            tx = -1
        else:
            if now > tm._now:
                tm._now = now
            state.enqueued[prio] += 1
            if state.max_depth[prio] < 1:
                state.max_depth[prio] = 1
            if tm.scheduler != "strict":
                if not (state.wrr_current == prio and state.wrr_sent < tm.weights[prio]):
                    state.wrr_current = prio
                    state.wrr_sent = 0
            state.wrr_sent = state.wrr_sent + 1
            state.dequeued[prio] += 1
            tx = 0 if state.bits_per_s is None and state.pps is None else tm._tx_ns(state, length)
            state.busy_until = now + tx
            state.tx_bytes = state.tx_bytes + length
"""

_SEND = """
def _p4sim_send(sw, port, frame):
    # Switch.send (p4sim/runtime/switch.py) with the driver, for a port that is an int in
    # range and a frame that is bytes; anything else takes Switch.send itself, the reference
    if type(port) is not int or type(frame) is not bytes or not 0 <= port < 512:
        return type(sw).send(sw, port, frame)
    sw.stats["rx"] += 1
    if sw.pfc_rx and len(frame) >= 18 and frame[12] == 0x88 and frame[13] == 0x08:
        sw._pfc(port, frame)
    seq = sw._enq_seq
    if _p4sim_drive(sw, port, frame) and sw._enq_seq == seq:
        return None
    sw._service(sw._now)
    return None
"""


def drive_source(
    program: CompiledProgram, classes: dict[str, dict], defined: set[str], new: Callable[[str], str]
) -> str:
    """The driver's text for the factory, or "" when the program's standard_metadata is not
    the typed v1model one (every field the driver touches a C integer) or a stage is not
    one of the module's functions: the switch then keeps the Python driver. `new(cls)`: the
    module's cheapest expression for a fresh `cls()`."""
    pl = program.pipeline
    sm = classes.get(pl.new_sm)
    if sm is None or pl.new_hdr not in classes or pl.new_meta not in classes:
        return ""
    if any(sm.get(f, (None,))[0] is None or sm[f][0][0] != "ll" for f in SM_FIELDS):
        return ""
    stages = [pl.parser, pl.verify, pl.ingress, pl.egress, pl.compute, pl.deparser]
    if not set(stages) <= defined:
        return ""
    text = _SEND + _TEMPLATE.format(
        SEND_NOW=slots.rewrite_tm(SEND_NOW_INLINE),
        newH=new(pl.new_hdr),
        newM=new(pl.new_meta),
        newS=new(pl.new_sm),
        H=pl.new_hdr,
        M=pl.new_meta,
        S=pl.new_sm,
        P=pl.parser,
        V=pl.verify,
        I=pl.ingress,
        E=pl.egress,
        C=pl.compute,
        D=pl.deparser,
    )
    # the switch's slots read and written at their offsets (p4sim.compiled.slots)
    return slots.rewrite_switch(text, "sw")
