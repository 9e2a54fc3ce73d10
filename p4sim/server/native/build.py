"""Build the native front end (frontend.cc against Debian's libgrpc++), cached per user.

frontend.cc is one translation unit that includes its parts (state.h, transport.h, ...):
the sources are every .cc and .h file of this folder (`sources()`), copied together into
the build directory. The artefact lives in p4sim's compiled-module cache
(p4sim.compiled.build.cache_dir), keyed by a hash of (every source file's name and text,
compiler and its version, flags, pkg-config's grpc++ flags, Python ABI: `build_key`); it is built in a temporary directory and renamed into place, so two
processes building at once never load a half-written file.

grpcio bundles its own gRPC core; this module links the system's. Both coexist: Python
loads extensions RTLD_LOCAL and grpcio's cygrpc exports no symbol but its PyInit
(`nm -D --defined-only`), so neither binds to the other's gRPC
(tests/p4sim_native/test_native_frontend.py runs both in one process).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import ModuleType

from p4sim.compiled.build import building, cache_dir, load_extension, prune

HERE = Path(__file__).resolve().parent
MAIN = "frontend.cc"  # the translation unit compiled; it includes the other sources
MODULE = "p4sim_native_frontend"  # its PyInit name; the file name carries the key
CXXFLAGS = ("-std=c++17", "-shared", "-fPIC", "-O2", "-w")
BUILD_TIMEOUT_S = 900

_loaded: ModuleType | None = None


class NativeUnavailable(Exception):
    """The native front end cannot be built or loaded here (one-line reason)."""


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    except FileNotFoundError:
        raise NativeUnavailable(f"{cmd[0]} not found") from None
    except subprocess.TimeoutExpired:
        raise NativeUnavailable(
            f"{os.path.basename(cmd[0])} took over {BUILD_TIMEOUT_S} s"
        ) from None


def _cxx() -> str:
    cxx = (os.environ.get("CXX") or "g++").split()[0]
    if shutil.which(cxx) is None:
        raise NativeUnavailable(f"no C++ compiler ({cxx!r} not found; apt-get install g++)")
    return cxx


def _grpc_flags() -> list[str]:
    if shutil.which("pkg-config") is None:
        raise NativeUnavailable("pkg-config not found (apt-get install pkg-config libgrpc++-dev)")
    r = _run(["pkg-config", "--cflags", "--libs", "grpc++"])
    if r.returncode != 0:
        raise NativeUnavailable("libgrpc++ not found by pkg-config (apt-get install libgrpc++-dev)")
    return r.stdout.split()


def unavailable_reason() -> str:
    """Why the native front end cannot be built here, or "" when it can."""
    try:
        _cxx()
        _grpc_flags()
    except NativeUnavailable as e:
        return str(e)
    return ""


def sources() -> dict[str, str]:
    """The front end's sources: file name -> text, every .cc and .h file of this folder."""
    return {
        p.name: p.read_text(encoding="utf-8")
        for p in sorted(HERE.iterdir())
        if p.suffix in (".cc", ".h")
    }


def load() -> ModuleType:
    """The native front end module (built once per key, then loaded from the cache)."""
    global _loaded
    if _loaded is None:
        _loaded = _build(sources(), CXXFLAGS)
    return _loaded


def load_variant(srcs: Mapping[str, str], optimize: bool = False) -> ModuleType:
    """A module built from `srcs` (as `sources()` gives them, some edited: tests' planted
    slips; -O0 unless `optimize`), cached as load()'s; to serve with it, tests set `_loaded`."""
    flags = CXXFLAGS if optimize else tuple("-O0" if f == "-O2" else f for f in CXXFLAGS)
    return _build(srcs, flags)


def build_key(srcs: Mapping[str, str], toolchain: Iterable[str]) -> str:
    """The cache key of a build: every source file's name and text, then the toolchain's
    parts (compiler, version, flags, ABI), each delimited."""
    h = hashlib.sha256()
    for part in (*(x for name in sorted(srcs) for x in (name, srcs[name])), *toolchain):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def _build(srcs: Mapping[str, str], cxxflags: tuple[str, ...]) -> ModuleType:
    cxx, flags = _cxx(), _grpc_flags()
    version = _run([cxx, "--version"]).stdout.splitlines()[:1]
    include = "-I" + sysconfig.get_paths()["include"]
    key = build_key(
        srcs,
        (
            cxx,
            *version,
            *cxxflags,
            *flags,
            include,
            sys.implementation.cache_tag,
            sysconfig.get_config_var("EXT_SUFFIX") or "",
        ),
    )
    root = cache_dir()
    so = os.path.join(
        root, f"native_frontend_{key}{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"
    )
    if not os.path.exists(so):
        with building(
            root, os.path.basename(so)
        ):  # one process builds it; the others wait, then load
            if not os.path.exists(so):
                _compile(srcs, cxx, cxxflags, include, flags, root, so)
        prune(root)
    else:
        os.utime(so)  # most recently used: pruned last
    try:
        return load_extension(MODULE, so)
    except ImportError as e:
        raise NativeUnavailable(f"cannot load the native front end: {e}") from None


def _compile(
    srcs: Mapping[str, str],
    cxx: str,
    cxxflags: tuple[str, ...],
    include: str,
    flags: list[str],
    root: str,
    so: str,
) -> None:
    with tempfile.TemporaryDirectory(dir=root, prefix=".build-") as tmp:
        out, src = os.path.join(tmp, "m.so"), os.path.join(tmp, MAIN)
        for name, text in srcs.items():  # side by side: frontend.cc's #include "part.h" finds them
            with open(os.path.join(tmp, os.path.basename(name)), "w", encoding="utf-8") as f:
                f.write(text)
        r = _run([cxx, *cxxflags, include, src, "-o", out, *flags])
        if r.returncode != 0:
            last = (r.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise NativeUnavailable(f"building the native front end failed: {last}")
        os.replace(out, so)
