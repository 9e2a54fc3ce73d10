"""Compile a pushed program in a child process, with a time and a memory limit.

A P4Runtime client controls the source it pushes, so compiling it is running untrusted
input: 40 nested doubling `#define`s, an include fan-out (each file including the next
twice) or a register of 2**32 cells would otherwise take the server's memory and time,
and go on after the client gave up. So the server first compiles the bundle here, in
`python -m p4sim.server.sandbox` (RLIMIT_AS and RLIMIT_CPU set, killed on a wall-clock
deadline, when the client cancels, or when the server stops), and checks the sizes the
program declares against `Limits`. Only a program that passed is compiled again in the
server (0.25 s for roce_switch.p4).

Both compiles run the preprocessor in its closed-world mode (includes resolve only inside
the bundle and p4sim's arch files), and every message is rendered by `describe`: file
names relative to the bundle, source lines quoted only from the bundle's own text, no
server path.

Child protocol: stdin one JSON object {"main", "files", "limits"}; stdout one JSON object
{"code": "OK" | a gRPC status name, "message": str}.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from p4sim.frontend.preprocess import ARCH_DIR, closed_world


@dataclass(frozen=True)
class Limits:
    """What a pushed program may ask of the server."""

    compile_timeout_s: float = 20.0
    compile_memory_mb: int = 1024
    max_files: int = 256
    max_table_size: int = 1 << 20  # entries (a cap, allocated lazily)
    max_array_size: int = 1 << 20  # cells of one register, counter or meter array
    max_total_cells: int = 1 << 22  # all of them together
    max_stack_size: int = 1024  # elements of one header stack (allocated per packet)


class CompileError(Exception):
    """A pushed program refused: `code` is a gRPC status name."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def write_bundle(root: Path, files: dict[str, str]) -> None:
    for name, body in files.items():
        dest = root / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(body)


def _scrub(text: str, root: str) -> str:
    """No server path in a message: bundle paths relative, arch paths by name."""
    for prefix, repl in ((os.path.realpath(root), ""), (root, ""), (ARCH_DIR, "<p4sim arch>")):
        text = text.replace(prefix + os.sep, repl).replace(prefix, repl or ".")
    return text


def describe(exc: BaseException, root: str, files: dict[str, str]) -> str:
    """One located message for a compile error, quoting only the bundle's (or arch) text."""
    from p4sim.frontend.errors import P4SourceError

    if not isinstance(exc, P4SourceError):
        return _scrub(f"{type(exc).__name__}: {exc}" if not str(exc) else str(exc), root)
    span = exc.span
    fname = span.file
    line_text = None
    rel = os.path.relpath(fname, root) if os.path.isabs(fname) and fname.startswith(root) else None
    if rel is not None and rel in files:
        lines = files[rel].splitlines()
        if 0 < span.line <= len(lines):
            line_text = lines[span.line - 1]
    elif os.path.dirname(fname) == ARCH_DIR and 0 < span.line:
        with open(fname, encoding="utf-8") as f:
            arch = f.read().splitlines()
        line_text = arch[span.line - 1] if span.line <= len(arch) else None
    head = _scrub(f"{span}: {exc.kind}: {exc.reason}", root)
    if line_text is None:
        return head
    text = line_text.expandtabs(1)
    return f"{head}\n    {text}\n    {' ' * (max(span.column, 1) - 1)}^"


def check_sizes(compiled: Any, limits: Limits) -> None:
    """Refuse declared sizes the server will not allocate (RESOURCE_EXHAUSTED)."""
    from p4sim import externs
    from p4sim.check.types import TStack

    model = compiled.model
    total = 0
    for ext in externs.with_model():  # each extern module says how many cells it allocates
        for name, info in ext.objects(model).items():
            cells = ext.cells(info)
            if cells > limits.max_array_size:
                raise CompileError(
                    "RESOURCE_EXHAUSTED",
                    f"{ext.name} {name} has {cells} cells;"
                    f" p4sim-switch allows at most {limits.max_array_size}",
                )
            total += cells
    if total > limits.max_total_cells:
        raise CompileError(
            "RESOURCE_EXHAUSTED",
            f"extern arrays declare {total} cells in all;"
            f" p4sim-switch allows at most {limits.max_total_cells}",
        )
    for name, t in model.tables.items():
        if t.size > limits.max_table_size:
            raise CompileError(
                "RESOURCE_EXHAUSTED",
                f"table {name} has size {t.size};"
                f" p4sim-switch allows at most {limits.max_table_size}",
            )
    for sname, st in compiled.struct_types.items():
        for fname, ft in st.fields:
            if isinstance(ft, TStack) and ft.size > limits.max_stack_size:
                raise CompileError(
                    "RESOURCE_EXHAUSTED",
                    f"header stack {sname}.{fname} has {ft.size} elements;"
                    f" p4sim-switch allows at most {limits.max_stack_size}",
                )


def compile_confined(root: Path, main: str, files: dict[str, str], limits: Limits) -> Any:
    """Compile the bundle written under root (closed world); CompileError on any refusal."""
    from p4sim.runtime.switch import load_program

    token = closed_world.set(str(root))
    try:
        compiled = load_program(str(root / main))
    except MemoryError:
        raise CompileError(
            "RESOURCE_EXHAUSTED",
            f"compiling the program needs more than {limits.compile_memory_mb} MB",
        ) from None
    except Exception as exc:
        raise CompileError(
            "INVALID_ARGUMENT",
            f"the P4 program does not compile: {describe(exc, str(root), files)}",
        ) from None
    finally:
        closed_world.reset(token)
    check_sizes(compiled, limits)
    return compiled


def _child() -> int:
    import resource

    req = json.loads(sys.stdin.buffer.read())
    limits = Limits(**req["limits"])
    mem = limits.compile_memory_mb << 20
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    cpu = int(limits.compile_timeout_s) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    result = {"code": "OK", "message": ""}
    with tempfile.TemporaryDirectory(prefix="p4sim-verify-") as tmp:
        try:
            write_bundle(Path(tmp), req["files"])
            compiled = compile_confined(Path(tmp), req["main"], req["files"], limits)
            from p4sim.runtime.switch import Switch

            Switch(compiled)  # state allocation too, inside the limits
        except CompileError as exc:
            result = {"code": exc.code, "message": exc.message}
        except MemoryError:
            result = {
                "code": "RESOURCE_EXHAUSTED",
                "message": f"the program needs more than {limits.compile_memory_mb} MB",
            }
        except Exception as exc:
            result = {
                "code": "INVALID_ARGUMENT",
                "message": f"the P4 program does not load: {describe(exc, tmp, req['files'])}",
            }
    sys.stdout.write(json.dumps(result))
    return 0


def verify_in_child(
    main: str, files: dict[str, str], limits: Limits, cancelled: Callable[[], bool] = lambda: False
) -> None:
    """Compile the bundle in a limited child process; CompileError unless it passed.

    `cancelled()` is polled: when it turns true (client gone, server stopping) the child
    is killed and CANCELLED raised."""
    if len(files) > limits.max_files:
        raise CompileError(
            "RESOURCE_EXHAUSTED", f"the bundle has {len(files)} files; at most {limits.max_files}"
        )
    data = json.dumps({"main": main, "files": files, "limits": asdict(limits)}).encode()
    # the child finds p4sim where this process did, and inherits nothing else it needs
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL")}
    env["PYTHONPATH"] = os.pathsep.join([here, *filter(None, [os.environ.get("PYTHONPATH")])])
    # the child checks that the program compiles and its state fits the limits: on the
    # reference (no compiled build inside the limits; the server builds after it passed)
    env["P4SIM_PROFILE"] = "reference"
    proc = subprocess.Popen(
        [sys.executable, "-m", "p4sim.server.sandbox"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd="/",
    )
    deadline = time.monotonic() + limits.compile_timeout_s
    chunks: list[bytes] = []

    def feed() -> None:  # a bundle can be larger than the pipe: write while we wait
        try:
            assert proc.stdin is not None
            proc.stdin.write(data)
            proc.stdin.close()
        except OSError:  # the child died (its limits): its exit status tells
            pass

    def drain() -> None:
        assert proc.stdout is not None
        chunks.append(proc.stdout.read())

    io = [threading.Thread(target=feed, daemon=True), threading.Thread(target=drain, daemon=True)]
    for t in io:
        t.start()
    try:
        while proc.poll() is None:
            if cancelled():
                raise CompileError("CANCELLED", "the compile was cancelled")
            if time.monotonic() > deadline:
                raise CompileError(
                    "RESOURCE_EXHAUSTED",
                    f"compiling the program takes more than {limits.compile_timeout_s:g} s",
                )
            try:
                proc.wait(timeout=0.05)
            except subprocess.TimeoutExpired:
                pass
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for t in io:
            t.join(timeout=5)
    out = b"".join(chunks)
    try:
        result = json.loads(out)
    except ValueError:
        # killed by its limits (SIGXCPU, SIGKILL) or out of memory before it could answer
        raise CompileError(
            "RESOURCE_EXHAUSTED",
            "compiling the program exceeded the server's time or"
            f" memory limit ({limits.compile_timeout_s:g} s, {limits.compile_memory_mb} MB)",
        ) from None
    if result.get("code") != "OK":
        raise CompileError(
            str(result.get("code", "INVALID_ARGUMENT")), str(result.get("message", ""))
        )


if __name__ == "__main__":
    sys.exit(_child())
