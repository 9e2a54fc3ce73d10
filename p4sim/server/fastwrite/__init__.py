"""A Write fast path: table-entry updates decoded from the request bytes by shape.

Reading one TableEntry through upb's Python wrappers costs about 4-5 us (every
sub-message read builds a wrapper); the entries of a batch mostly share one layout and
differ only in their value bytes. So the server keeps the bytes of a WriteRequest, cuts
them into its Updates (`update_spans`), and recognises each Update by its *shape*: the
serialized bytes with the value bytestrings (match values, masks, bounds, action
parameter values) cut out. A known shape gives the update's type and its
`codec.PlainEntry` by slicing the values into a template: no protobuf call at all.

Why this is exact (the same PlainEntry as `codec.plain_from_proto` on the parsed
message): a shape is learned from a real Update only when its bytes are exactly what
upb serializes for the message it parses to, and when replacing each value by another
of the same length changes exactly that value's bytes in the serialization. The
serialization of a bytes field depends on its length only, so every message that differs
from the learned one only in value contents (same lengths) serializes to the skeleton
with those values in the slots; parsing such bytes gives that message back. Anything
else (another layout, a value of another length, unknown top-level fields) misses and
takes the reference path: the result is the same, only slower. Validation is not done
here: the PlainEntry goes through the same checks as the reference path's.

The learned shapes are bounded (SHAPE_LIMIT, cleared when full; SHAPES_PER_LENGTH per
serialized length, the oldest replaced, so a lookup tries a few at most), only Updates of up to
LEARN_MAX_BYTES are learned, and a request may only teach LEARN_PER_REQUEST new ones: a
client sending a new layout per update costs a few small serializations per request,
never unbounded memory or time.

Cut along the three steps of a request (imports flow scan <- shapes <- builders):
- scan.py: the request's bytes cut into its Updates, in runs of one length (`update_runs`,
  `update_spans`), and the strided column checks a run is found with;
- shapes.py: the learned shapes (`WriteScanner`: learn, lookup, the runs of one shape,
  `plan` of a whole request);
- builders.py: a shape bound to one pipeline (`bind`): value bytes -> the entry, or stored
  through the table's pre-checked entry points.
"""

from p4sim.server.fastwrite.builders import DONE, Builder, bind
from p4sim.server.fastwrite.scan import update_runs, update_spans, varint_bytes
from p4sim.server.fastwrite.shapes import (
    LEARN_MAX_BYTES,
    LEARN_PER_REQUEST,
    SHAPE_LIMIT,
    SHAPES_PER_LENGTH,
    RunRows,
    WriteScanner,
)

__all__ = [
    "DONE",
    "LEARN_MAX_BYTES",
    "LEARN_PER_REQUEST",
    "SHAPES_PER_LENGTH",
    "SHAPE_LIMIT",
    "Builder",
    "RunRows",
    "WriteScanner",
    "bind",
    "update_runs",
    "update_spans",
    "varint_bytes",
]
