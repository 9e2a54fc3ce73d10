"""Build a Cython extension module from Python source, cached per user.

The source is Cython's pure-Python mode (plain .py text): the interpreted path and the
compiled one start from the same text. Artefacts live in a per-user cache directory keyed
by a hash of (source, Cython version, Python ABI, compiler flags), are built in a
temporary directory there and renamed into place (two processes building the same key do
not see a half-written file), and the cache is pruned oldest-first to a size bound.
Nothing is ever written into site-packages.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
from collections.abc import Iterator
from types import ModuleType

CFLAGS = ("-shared", "-fPIC", "-O2", "-w")
MAX_MB = 512  # the cache's bound, least recently used pruned first
BUILD_TIMEOUT_S = 3600  # one large program at -O2 on a loaded 2-core machine: minutes

_loaded: dict[str, ModuleType] = {}
_background: dict[str, threading.Thread] = {}  # first builds running while the caller runs Python


class CompileUnavailable(Exception):
    """The compiled backend cannot be used here (one-line reason); fall back to Python."""


def cache_dir() -> str:
    """Where built modules live: P4SIM_CACHE_DIR (a documented setting: a CI run keeps it
    between runs, a test run isolates its builds there), else ~/.cache/p4sim/compiled."""
    d = os.environ.get("P4SIM_CACHE_DIR")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "p4sim", "compiled")
    return d


def _cython_version() -> str:
    try:
        import Cython
    except ImportError:
        raise CompileUnavailable(
            "Cython is not installed (pip install 'rocelab[compiled]')"
        ) from None
    return Cython.__version__


def _cc() -> str:
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    cc = cc.split()[0]
    if shutil.which(cc) is None:
        raise CompileUnavailable(f"no C compiler ({cc!r} not found)")
    return cc


def unavailable_reason() -> str:
    """Why no extension can be built here (Cython or a C compiler missing), or "" when one can."""
    try:
        _cython_version()
        _cc()
    except CompileUnavailable as e:
        return str(e)
    return ""


def toolchain_parts(kind: str = ".py") -> tuple[str, ...]:
    """What a module's key holds besides its source (the Cython version, Python ABI, flags)."""
    return (
        _cython_version(),
        sys.implementation.cache_tag,
        sysconfig.get_config_var("EXT_SUFFIX") or "",
        " ".join(CFLAGS),
        *([kind] if kind != ".py" else []),
    )


def module_key(source: str, kind: str = ".py") -> str:
    h = hashlib.sha256()
    for part in (source, *toolchain_parts(kind)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def build_module(source: str, stem: str, kind: str = ".py", wait: bool = True) -> ModuleType:
    """The extension module compiled from `source` (built once, then loaded from the cache);
    `kind` ".pyx": the source is Cython syntax, not pure-Python mode. `wait=False`: when it
    is not built yet, build it in a background thread and raise CompileUnavailable at once
    (a P4Runtime push must not wait minutes for gcc: the pipeline runs Python, the next push
    of the program, or the next process, loads the module)."""
    if not stem.isidentifier():
        raise ValueError(f"module stem {stem!r} is not an identifier")
    if kind not in (".py", ".pyx"):
        raise ValueError(f"source kind {kind!r}: .py or .pyx")
    name = f"{stem}_{module_key(source, kind)}"
    if name in _loaded:
        return _loaded[name]
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    root = cache_dir()
    so = os.path.join(root, name + suffix)
    if not os.path.exists(so) and not wait:
        _build_in_background(source, name, root, so, kind)
        raise CompileUnavailable(
            f"{stem}: its first build runs in the background (cached in {root});"
            " this pipeline runs Python"
        )
    if not os.path.exists(so):
        with building(root, name):  # one process builds a key; the others wait, then load it
            if not os.path.exists(so):
                _build(source, name, root, so, kind)
    else:
        os.utime(so)  # most recently used: pruned last
    try:
        mod = load_extension(name, so)
    except ImportError as e:  # a damaged cache entry: rebuild it once
        os.unlink(so)
        _build(source, name, root, so, kind)
        try:
            mod = load_extension(name, so)
        except ImportError:
            raise CompileUnavailable(f"cannot load the built module: {e}") from None
    _loaded[name] = mod
    return mod


def load_cached(name: str) -> ModuleType | None:
    """The built module `name` if it is in this process or the cache and loads, else None
    (the caller then makes its source and goes through build_module)."""
    if name in _loaded:
        return _loaded[name]
    so = os.path.join(cache_dir(), name + (sysconfig.get_config_var("EXT_SUFFIX") or ".so"))
    if not os.path.exists(so):
        return None
    try:
        mod = load_extension(name, so)
    except ImportError:
        return None  # damaged: build_module rebuilds it from the source
    with contextlib.suppress(OSError):
        os.utime(so)  # most recently used: pruned last
    _loaded[name] = mod
    return mod


def _build_in_background(source: str, name: str, root: str, so: str, kind: str) -> None:
    def run() -> None:
        with contextlib.suppress(CompileUnavailable, OSError), building(root, name):
            if not os.path.exists(so):
                _build(source, name, root, so, kind)

    t = _background.get(name)
    if t is None or not t.is_alive():
        t = _background[name] = threading.Thread(
            target=run, name=f"p4sim-build-{name}", daemon=True
        )
        t.start()


@contextlib.contextmanager
def building(root: str, name: str) -> Iterator[None]:
    """Hold the build lock of `name` (an flock, released if the holder dies): test workers
    and switches starting at once on an empty cache build each program once, not once each."""
    os.makedirs(root, exist_ok=True)
    fd = os.open(os.path.join(root, f".lock-{name}"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock (the lock file stays: unlinking it races)


def load_extension(name: str, so: str) -> ModuleType:
    """The extension module in the file `so`, imported as `name` (ImportError if it cannot be)."""
    spec = importlib.util.spec_from_file_location(name, so)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {so}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _build(source: str, name: str, root: str, so: str, kind: str = ".py") -> None:
    cc = _cc()
    os.makedirs(root, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root, prefix=".build-") as tmp:
        py = os.path.join(tmp, name + kind)
        c = os.path.join(tmp, name + ".c")
        with open(py, "w", encoding="utf-8") as f:
            f.write(source)
        steps = [
            [sys.executable, "-m", "cython", "-3", "--fast-fail", py, "-o", c],
            [
                cc,
                *CFLAGS,
                "-I" + sysconfig.get_paths()["include"],
                c,
                "-o",
                os.path.join(tmp, "m.so"),
            ],
        ]
        for cmd in steps:
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                raise CompileUnavailable(
                    f"{os.path.basename(cmd[0])} took over {BUILD_TIMEOUT_S} s"
                ) from None
            if r.returncode != 0:
                last = (r.stderr.strip().splitlines() or ["(no output)"])[-1]
                raise CompileUnavailable(f"building {name} failed: {last}")
        os.replace(os.path.join(tmp, "m.so"), so)
    prune(root)


def prune(root: str | None = None, max_bytes: int | None = None) -> None:
    """Delete the least recently used artefacts until the cache fits its bound."""
    root = root or cache_dir()
    if max_bytes is None:
        max_bytes = MAX_MB * 1024 * 1024
    try:
        files = [os.path.join(root, n) for n in os.listdir(root) if not n.startswith(".")]
    except FileNotFoundError:
        return
    stats = []
    for f in files:
        try:
            st = os.stat(f)
        except FileNotFoundError:  # another process pruned it
            continue
        stats.append((st.st_mtime, st.st_size, f))
    stats.sort()
    total = sum(s for _, s, _ in stats)
    for _, size, f in stats:
        if total <= max_bytes:
            break
        if os.path.basename(f).split(".")[0] in _loaded:
            continue  # mapped into this process
        try:
            os.unlink(f)
        except FileNotFoundError:
            pass
        total -= size
