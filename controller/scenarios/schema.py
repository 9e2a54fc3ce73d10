"""A scenario file checked before anything runs: every key's type, range and unit by the
typed schema (controller/schemas/files.py, types from controller/schemas/types.py), then here
the rules that need the whole file. A bad value raises `ScenarioError` naming its key path
(and the file's line where YAML gives it): the CLI prints it on one line and exits 2. Bounds
keep every run finite: the duration, the number of samples, the messages a flow posts.

The switch block is the switch config (controller.config) and is checked by its own parser
and `check` (XOFF/headroom/buffer arithmetic), with the flows' queue pairs added.
"""

from __future__ import annotations

import math
from typing import Any, NoReturn

from controller.config import ConfigError
from controller.hosts.dcqcn import DcqcnParams

from .kinds import kind_of

MAX_SAMPLES = 100_000  # duration / sample_us
MAX_MESSAGES = 100_000  # per flow: bytes / message


class ScenarioError(ConfigError):
    """A bad scenario input: `key` is its dotted path (file:line first when known)."""


class Validator:
    """Raises ScenarioError for a key path, with the file:line prefix when known (the rules
    that need the whole file; types and ranges are the typed schema's)."""

    def __init__(self, source: str, lines: dict[str, int]):
        self.source, self.lines = source, lines

    def fail(self, key: str, msg: str) -> NoReturn:
        line = self.lines.get(key)
        where = f"{self.source}:{line}: " if line else f"{self.source}: "
        raise ScenarioError(f"{where}{key}", msg)


def typed_value(v: Validator, key: str, kind: Any, value: Any) -> Any:
    """`value` checked as the typed schema's type `kind` (a command-line override of a file's
    key is held to the key's own type)."""
    from pydantic import TypeAdapter, ValidationError

    from controller.schemas import _message

    try:
        return TypeAdapter(kind).validate_python(value)
    except ValidationError as exc:
        v.fail(key, _message(exc.errors(include_url=False)[0]))


def validate(
    sc: dict, lines: dict[str, int] | None = None, duration_us: float | None = None
) -> None:
    """Raise ScenarioError for the first bad key of a loaded scenario (and of the command
    line's --duration-us); returns nothing when all is well."""
    v = Validator(sc.get("_path", "<scenario>"), lines or {})
    # types, ranges and units: the typed schema (controller/schemas/files.py); then the rules
    # that need the whole file, below (or the kind's own, for another kind of file)
    from controller.schemas import kinds
    from controller.schemas import validate as typed
    from controller.schemas.files import RunDuration, ScenarioFile

    kind = kind_of(sc)
    m, errors = typed(
        kinds()["fabric" if kind is not None else "scenario"],
        {k: x for k, x in sc.items() if k != "_path"},
    )
    if errors:
        v.fail(errors[0].key, errors[0].message)
    if kind is not None:  # another kind of file (controller.fabric's): its own rules
        kind.validate(sc, v, duration_us)
        return
    assert isinstance(m, ScenarioFile)  # (no errors: the model of the whole file)
    dur = m.duration_us
    if duration_us is not None:
        dur = typed_value(v, "--duration-us", RunDuration, duration_us)
    if dur / m.sample_us > MAX_SAMPLES:
        v.fail(
            "sample_us",
            f"{dur:g} us / {m.sample_us:g} us = {dur / m.sample_us:.0f} samples "
            f"(at most {MAX_SAMPLES})",
        )
    if m.nic.ack_every > m.nic.window:
        v.fail("nic.ack_every", f"{m.nic.ack_every} is more than nic.window ({m.nic.window})")
    if m.dcqcn is not None:
        try:
            DcqcnParams(**m.dcqcn.model_dump(exclude_none=True)).validate()
        except (TypeError, ValueError) as exc:
            v.fail("dcqcn", str(exc))
    hosts, ports = m.switch.hosts, m.switch.ports
    frame = m.switch.roce_mtu + 74  # the flows' sizes in packets count whole RoCE frames
    for i, f in enumerate(m.flows):
        p = f"flows[{i}]."
        for end in ("src", "dst"):
            name = getattr(f, end)
            if name not in hosts:
                v.fail(
                    f"{p}{end}",
                    f"unknown host {name!r} (switch.hosts: {', '.join(map(str, hosts)) or 'none'})",
                )
        if f.src == f.dst:
            v.fail(f"{p}dst", "a flow needs two different hosts")
        total, msg = f.bytes.to_bytes(frame), f.message.to_bytes(frame)
        if msg > total:
            v.fail(f"{p}message", f"message {msg} B is larger than the flow's {total} B")
        if math.ceil(total / msg) > MAX_MESSAGES:
            v.fail(
                f"{p}message",
                f"{total} B in {msg} B messages is {math.ceil(total / msg)} "
                f"messages (at most {MAX_MESSAGES})",
            )
        if f.start_us > dur:
            v.fail(f"{p}start_us", f"{f.start_us:g} us is after the run's end ({dur:g} us)")
    if m.watch.port is not None and ports and m.watch.port not in ports:
        v.fail("watch.port", f"port {m.watch.port} is not in switch.ports")


def key_lines(text: str) -> dict[str, int]:
    """Dotted key path -> 1-based line of its value in the YAML text (best effort)."""
    from controller.schemas import key_lines as lines

    return lines(text)
