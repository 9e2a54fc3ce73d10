"""The compiled write path: which `Rec` and bulk loops this process uses.

`P4SIM_WRITE=python|compiled`, read once, when p4sim.runtime.tables is first imported
(before any table exists, so every Rec of the process is of one class). Unset: compiled
with the native front end (`P4SIM_FRONTEND=native`, the configuration the table-write
figures are measured on), python otherwise. The pure-Python code is the reference and the
fallback: when the module cannot be built (no Cython, no C compiler), one line says why and
the process runs Python.

The extension is built from _write.pyx into p4sim's compiled-module cache
(p4sim.compiled.build.cache_dir), keyed by a hash of (its source, Cython's version, the
Python ABI, the flags), so an edited source never runs stale compiled code; it is built in
a temporary directory and renamed into place (two processes building at once never load a
half-written file).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from types import ModuleType

from p4sim.compiled import SettingError
from p4sim.compiled.build import CompileUnavailable, cache_dir, load_extension, prune

SOURCE = Path(__file__).with_name("_write.pyx")
CFLAGS = ("-shared", "-fPIC", "-O2", "-w")
BUILD_TIMEOUT_S = 900
CHOICES = ("python", "compiled")


def selected() -> str:
    """The write path this environment asks for."""
    w = os.environ.get("P4SIM_WRITE", "").strip().lower()
    if not w:
        native = os.environ.get("P4SIM_FRONTEND", "").strip().lower() == "native"
        return "compiled" if native else "python"
    if w not in CHOICES:
        raise SettingError(f"P4SIM_WRITE={w!r}: expected one of {', '.join(CHOICES)}")
    return w


def build(source: str, stem: str = "p4sim_write") -> ModuleType:
    """The extension compiled from the Cython text `source` (built once per key, then
    loaded from the cache)."""
    try:
        import Cython
    except ImportError:
        raise CompileUnavailable("Cython is not installed (pip install 'rocelab[compiled]')") from None
    cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    h = hashlib.sha256()
    for part in (source, Cython.__version__, cc, sys.implementation.cache_tag, suffix, *CFLAGS):
        h.update(part.encode())
        h.update(b"\0")
    name = f"{stem}_{h.hexdigest()[:16]}"  # the module's own name: its PyInit carries the key
    root = cache_dir()
    so = os.path.join(root, name + suffix)
    if os.path.exists(so):
        os.utime(so)  # most recently used: pruned last
    else:
        os.makedirs(root, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=root, prefix=".build-") as tmp:
            pyx, c, out = (os.path.join(tmp, name + ext) for ext in (".pyx", ".c", ".so"))
            with open(pyx, "w", encoding="utf-8") as f:
                f.write(source)
            for cmd in ([sys.executable, "-m", "cython", "-3", "--fast-fail", pyx, "-o", c],
                        [cc, *CFLAGS, "-I" + sysconfig.get_paths()["include"], c, "-o", out]):
                try:
                    r = subprocess.run(cmd, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
                except FileNotFoundError:
                    raise CompileUnavailable(f"{cmd[0]} not found") from None
                except subprocess.TimeoutExpired:
                    raise CompileUnavailable(f"{os.path.basename(cmd[0])} took over {BUILD_TIMEOUT_S} s") from None
                if r.returncode != 0:
                    last = (r.stderr.strip().splitlines() or ["(no output)"])[-1]
                    raise CompileUnavailable(f"building {name} failed: {last}")
            os.replace(out, so)
        prune(root)
    try:
        return load_extension(name, so)
    except ImportError as e:
        raise CompileUnavailable(f"cannot load {so}: {e}") from None


def load() -> ModuleType | None:
    """The compiled write module when this environment selects it and it can be built,
    else None (the pure-Python reference). Run when p4sim.runtime.tables is imported, before
    any command-line tool's main: a bad P4SIM_WRITE ends the process with one line (exit 2)."""
    try:
        choice = selected()
    except SettingError as e:
        print(f"p4sim: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    if choice != "compiled":
        return None
    try:
        return build(SOURCE.read_text(encoding="utf-8"))
    except CompileUnavailable as e:
        print(f"p4sim: compiled write path unavailable, running Python: {e}", file=sys.stderr)
        return None
