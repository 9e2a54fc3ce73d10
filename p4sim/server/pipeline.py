"""The p4sim device config and how a pushed pipeline becomes a running switch.

Device config (`ForwardingPipelineConfig.p4_device_config`)
------------------------------------------------------------
p4sim runs P4 source, so the device config carries the source, not a BMv2 JSON. Two forms:

1. the p4sim source bundle, a UTF-8 JSON object::

       {"format": "p4sim-source/1",
        "main": "roce_switch.p4",
        "files": {"roce_switch.p4": "<text>", "include/headers.p4": "<text>"}}

   `main` names the file to compile; `files` holds every file it includes (relative
   paths, no `..`). `make_device_config(path)` builds one from a program on disk (it
   takes the main file and every file under its directory with a P4 suffix), and
   `p4sim-switch --print-device-config PROGRAM.p4` writes it for other clients.

2. the plain text of a single self-contained `.p4` file (convenient with
   p4runtime-shell's `--config p4info.txt,program.p4`).

A BMv2 JSON (what p4c-bm2-ss writes) is refused with INVALID_ARGUMENT and a pointer
here. The server writes the files into a private temporary directory, compiles them
with `p4sim.runtime.switch.load_program`, and derives the P4Info with
`p4sim.p4info.p4info_from_model`; a P4Info sent by the client must agree with it
(same names and ids) or the request fails with INVALID_ARGUMENT.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from p4rtproto import p4info_pb2, p4runtime_pb2
from p4rtproto.errors import RequestError, invalid
from p4rtproto.schema import Schema, check_p4info_matches
from p4sim.cliargs import InputError, read_text_input
from p4sim.server.sandbox import (
    CompileError,
    Limits,
    compile_confined,
    verify_in_child,
    write_bundle,
)

FORMAT = "p4sim-source/1"
P4_SUFFIXES = (".p4", ".p4h", ".p4i", ".h")


# Bounds of the walk of a program's directory: a program in / or in /tmp must not read the
# whole tree (nor a FIFO named x.h there: each file is read through p4sim.cliargs).
BUNDLE_MAX_DEPTH = 8
BUNDLE_MAX_ENTRIES = 20_000  # directory entries looked at
BUNDLE_MAX_FILES = 1_000  # P4 files taken
BUNDLE_MAX_BYTES = 16 << 20  # their total size


def make_device_config(program: str | os.PathLike[str]) -> bytes:
    """The p4sim-source/1 bundle of a program on disk (its directory's P4 files, walked to
    BUNDLE_MAX_DEPTH without following links). cliargs.InputError (one line) when the program
    is no readable file or the walk passes a bound."""
    main = Path(program)
    root = main.parent
    files = {main.name: read_text_input(main, BUNDLE_MAX_BYTES)}
    total, seen = len(files[main.name]), 0
    stack = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue  # an unreadable subdirectory holds none of the program's files
        for entry in entries:
            seen += 1
            if seen > BUNDLE_MAX_ENTRIES:
                raise InputError(
                    f"{root}: more than {BUNDLE_MAX_ENTRIES} entries under the program's"
                    " directory (put the program in a directory of its own)"
                )
            path = Path(entry.path)
            if entry.is_dir(follow_symlinks=False):
                if depth + 1 < BUNDLE_MAX_DEPTH:
                    stack.append((path, depth + 1))
                continue
            rel = path.relative_to(root).as_posix()
            if path.suffix not in P4_SUFFIXES or rel in files or not entry.is_file():
                continue
            if len(files) >= BUNDLE_MAX_FILES:
                raise InputError(
                    f"{root}: more than {BUNDLE_MAX_FILES} P4 files under the program's directory"
                )
            files[rel] = read_text_input(path, BUNDLE_MAX_BYTES - total)
            total += len(files[rel])
    return json.dumps(
        {"format": FORMAT, "main": main.name, "files": dict(sorted(files.items()))}
    ).encode()


def parse_device_config(data: bytes) -> tuple[str, dict[str, str]]:
    """(main file name, {relative path: text}) from a device config, or RequestError."""
    if not data:
        raise invalid("empty p4_device_config: give the P4 source (see p4sim.server.pipeline)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise invalid(
            "p4_device_config is not UTF-8: p4sim takes P4 source, not a binary"
        ) from None
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            obj: Any = json.loads(text)
        except json.JSONDecodeError as exc:
            raise invalid(f"p4_device_config looks like JSON but does not parse: {exc}") from None
        if not isinstance(obj, dict) or obj.get("format") != FORMAT:
            if isinstance(obj, dict) and ("header_types" in obj or "pipelines" in obj):
                raise invalid(
                    "p4_device_config is a BMv2 JSON; p4sim compiles P4 source: send a "
                    f'{{"format": "{FORMAT}", "main": ..., "files": ...}} bundle or the .p4 text'
                )
            raise invalid(f'p4_device_config JSON must have "format": "{FORMAT}"')
        main, files = obj.get("main"), obj.get("files")
        if not isinstance(main, str) or not isinstance(files, dict) or main not in files:
            raise invalid(f'{FORMAT}: "main" must name one of the "files"')
        for name, body in files.items():
            p = PurePosixPath(name)
            if not isinstance(body, str) or p.is_absolute() or ".." in p.parts or not name:
                raise invalid(f"{FORMAT}: bad file entry {name!r} (relative paths, text bodies)")
        return main, dict(files)
    return "program.p4", {"program.p4": text}


@dataclass
class Pipeline:
    """One committed (or saved) forwarding pipeline: the running switch and its names."""

    switch: Any  # p4sim.runtime.switch.Switch (SwitchAPI)
    compiled: Any
    p4info: p4info_pb2.P4Info  # as the client sent it (or ours if it sent none)
    maps: Schema
    device_config: bytes
    cookie: int | None
    # server-side shadows of what the switch API cannot read back
    entry_metadata: dict[tuple, bytes] = field(default_factory=dict)
    meter_configs: dict[tuple[str, int], Any] = field(default_factory=dict)
    mc_groups: dict[int, Any] = field(default_factory=dict)
    clone_sessions: dict[int, Any] = field(default_factory=dict)
    digest_configs: dict[int, Any] = field(default_factory=dict)
    workdir: tempfile.TemporaryDirectory[str] | None = None
    # (counter id, first cell, cells) -> a serialized ReadResponse of those cells at zero
    _zero_chunks: dict[tuple[int, int, int], bytes] = field(default_factory=dict)
    _zero_bytes: int = 0

    # PacketOut metadata (as sent) -> controller header bytes, and PacketIn metadata values
    # -> a StreamMessageResponse holding them: most packets repeat a few combinations
    packet_out_headers: dict[tuple, bytes] = field(default_factory=dict)
    packet_in_templates: dict[tuple, Any] = field(default_factory=dict)
    # packet_in header bytes (Switch.on_packet_in_frame) -> serialized PacketIn metadata
    packet_in_heads: dict[bytes, bytes] = field(default_factory=dict)

    PACKET_CACHE = 1024  # entries per cache (cleared when full: a bound, not an LRU)
    ZERO_CACHE_BYTES = 16 << 20  # beyond this (huge arrays), zero chunks are built per Read

    def zero_counter_chunk(self, counter_id: int, start: int, n: int) -> bytes:
        """Cells start..start+n-1 of a counter array at zero, as a serialized ReadResponse
        that protobuf built (each cell as p4sim's Read answers it: index and data present).
        Cached: a telemetry array is mostly zeros and a Read of it sends these bytes as they
        are (see P4RuntimeServer._counter_chunks)."""
        key = (counter_id, start, n)
        got = self._zero_chunks.get(key)
        if got is not None:
            return got
        resp = p4runtime_pb2.ReadResponse()
        add = resp.entities.add
        for i in range(start, start + n):
            ce = add().counter_entry
            ce.counter_id = counter_id
            ce.index.index = i
            ce.data.SetInParent()
        got = resp.SerializeToString()
        if self._zero_bytes + len(got) <= self.ZERO_CACHE_BYTES:
            self._zero_chunks[key] = got
            self._zero_bytes += len(got)
        return got


def compile_device_config(
    device_config: bytes,
    limits: Limits | None = None,
    cancelled: Callable[[], bool] = lambda: False,
) -> tuple[Any, p4info_pb2.P4Info, tempfile.TemporaryDirectory[str]]:
    """Verify a pushed bundle in a limited child process (see p4sim.server.sandbox), then
    compile it here, both in the preprocessor's closed world. Returns (compiled, our
    P4Info, dir); RequestError on any refusal (never a server path in its message)."""
    from p4sim.p4info import p4info_from_model

    limits = limits or Limits()
    main, files = parse_device_config(device_config)
    try:
        verify_in_child(main, files, limits, cancelled)
    except CompileError as exc:
        raise RequestError(exc.code, exc.message) from None
    workdir = tempfile.TemporaryDirectory(prefix="p4sim-pipeline-")
    root = Path(workdir.name)
    try:
        write_bundle(root, files)
        compiled = compile_confined(root, main, files, limits)
        return compiled, p4info_from_model(compiled.model), workdir
    except CompileError as exc:
        workdir.cleanup()
        raise RequestError(exc.code, exc.message) from None
    except BaseException:
        workdir.cleanup()
        raise


def compile_program(path: str | os.PathLike[str]) -> tuple[Any, p4info_pb2.P4Info]:
    """Compile a program with p4sim; errors become INVALID_ARGUMENT with file:line:column."""
    from p4sim.p4info import p4info_from_model
    from p4sim.runtime.switch import load_program

    try:
        compiled = load_program(str(path))
    except RequestError:
        raise
    except Exception as exc:  # a located compile error, or an unsupported construct
        raise invalid(f"the P4 program does not compile: {exc}") from None
    return compiled, p4info_from_model(compiled.model)


def schema_of(p4info: p4info_pb2.P4Info, model: Any) -> Schema:
    """Our P4Info's schema, with what the compiled program knows beyond it: tables with
    `const entries`, digest members, and which controller header is which."""
    return Schema(
        p4info,
        const_tables=[name for name, t in model.tables.items() if t.const_entries],
        digest_fields={name: d.fields for name, d in model.digests.items()},
        header_kinds={h.name: h.kind for h in model.controller_headers.values()},
    )


def make_pipeline(
    compiled: Any,
    our_p4info: p4info_pb2.P4Info,
    client_p4info: p4info_pb2.P4Info | None,
    device_config: bytes,
    cookie: int | None,
    switch_factory: Any,
    workdir: tempfile.TemporaryDirectory[str] | None,
) -> Pipeline:
    p4info = our_p4info
    if client_p4info is not None and client_p4info.ByteSize():
        check_p4info_matches(client_p4info, our_p4info)
        p4info = client_p4info
    maps = schema_of(our_p4info, compiled.model)
    switch = switch_factory(compiled)
    return Pipeline(
        switch=switch,
        compiled=compiled,
        p4info=p4info,
        maps=maps,
        device_config=device_config,
        cookie=cookie,
        workdir=workdir,
    )
