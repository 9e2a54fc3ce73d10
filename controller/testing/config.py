"""What the suite's switches look like, whichever target runs it. The options themselves
and their parsing live with the targets (controller/targets/config.py, registry.py)."""

from __future__ import annotations

from controller.targets.config import RATE_FRAME_BYTES

DEFAULT_PORTS = (1, 2, 3, 4)  # data ports the plugin creates when it builds veths itself
# Overload tests need an egress slower than a sender: on every switch the plugin runs (the
# in-process p4sim, p4sim-switch, BMv2 it starts) port 4 sends 100 frames/s of 1250 bytes on
# the wire. p4sim's rate is in bits/s, BMv2's `set_queue_rate` in packets/s (of each
# priority queue of the port): the two agree for those frames.
RATE_LIMITED_PORT = 4
RATE_LIMITED_PPS = 100
RATE_LIMITED_BPS = RATE_LIMITED_PPS * RATE_FRAME_BYTES * 8
