"""The real P4 toolchain: BMv2 and p4c's BMv2 back end, found once for every user of it.

Where from: under one prefix given once (`ROCELAB_BMV2_PREFIX=DIR`, the Makefile's
`BMV2_PREFIX`), else on PATH. Found there: `simple_switch_grpc`, `simple_switch_CLI` (BMv2's
Thrift CLI: queue rates), `p4c-bm2-ss` and, when the prefix has `perf/bin`, the performance
build's `simple_switch_grpc`.

A prefix whose shared-library symlinks were flattened into small text files holding the
target's name (a read-only copy that lost its links, e.g. ../shared/refp4) cannot run where
it is: it is copied once, links restored, into `~/.cache/rocelab/bmv2-<hash>`, atomically
(the copy is built beside the cache entry and renamed into place: concurrent pytest workers
either win the rename or use the winner's copy).

    toolchain() -> Toolchain          # cached per (ROCELAB_BMV2_PREFIX, PATH)
    toolchain().bmv2_problem()        # None, or one line: why BMv2 cannot run here
    toolchain().p4c_problem()         # None, or one line: why p4c cannot compile here
    ensure_artifacts(program)         # build/p4 (P4Info + BMv2 JSON), compiled when stale
    compile_p4(program, out_dir)      # p4c-bm2-ss once; returns the paths and its stderr

`python -m controller.targets.toolchain` prints the toolchain found (exit 0) or why there is
none (exit 1; 2 when a prefix was given and cannot be used); `... p4c [PROGRAM] [--out DIR]`
compiles when stale (`make p4-bmv2`).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .config import ConfigError
from .program import DEFAULT_PROGRAM

PREFIX_ENV = "ROCELAB_BMV2_PREFIX"
SWITCH, CLI, P4C = "simple_switch_grpc", "simple_switch_CLI", "p4c-bm2-ss"
REPO_ROOT = DEFAULT_PROGRAM.parents[1]
DEFAULT_ARTIFACTS = REPO_ROOT / "build" / "p4"
STAMP = ".rocelab-p4c.stamp"  # what a directory of artifacts was compiled from, and by which p4c
# The Debian packages BMv2's libraries need at run time (../shared/refp4/README.md); the
# Makefile's BMV2_APT_PACKAGES installs the same list.
APT_HINT = "as root, `make setup BMV2_PREFIX=DIR` installs the Debian runtime packages"


def cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rocelab"


# ------------------------------------------------------------------ the toolchain


@dataclass(frozen=True)
class Toolchain:
    """Paths of the tools found (None: not found) and where they came from."""

    source: str  # "ROCELAB_BMV2_PREFIX=DIR" or "PATH"
    prefix: Path | None = None  # the prefix the tools run from (a materialised copy, maybe)
    simple_switch_grpc: Path | None = None
    simple_switch_cli: Path | None = None
    p4c: Path | None = None
    perf_simple_switch_grpc: Path | None = None
    p4include: Path | None = None  # p4c's core.p4/v1model.p4, when the prefix has them
    error: str | None = None  # the prefix given cannot be used at all
    _checks: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def configured(self) -> bool:
        """A prefix was given: a toolchain that cannot run is an error, not a skip."""
        return self.source != "PATH"

    def bmv2_problem(self) -> str | None:
        """None when simple_switch_grpc and simple_switch_CLI run here, else one line."""
        if "switch" not in self._checks:
            self._checks["switch"] = self._bmv2_problem()
        return self._checks["switch"]

    def p4c_problem(self) -> str | None:
        """None when p4c-bm2-ss runs here, else one line."""
        if "p4c" not in self._checks:
            self._checks["p4c"] = self._p4c_problem()
        return self._checks["p4c"]

    def p4c_env(self) -> dict[str, str]:
        """p4c's environment: its p4include named when the prefix has one (p4c looks for
        it only where it was configured to be installed, or in P4C_16_INCLUDE_PATH)."""
        env = dict(os.environ)
        if self.p4include is not None:
            env.setdefault("P4C_16_INCLUDE_PATH", str(self.p4include))
        return env

    def p4c_version(self) -> str | None:
        if self.p4c is None:
            return None
        if "p4c_version" not in self._checks:
            try:
                r = subprocess.run(
                    [str(self.p4c), "--version"],
                    capture_output=True,
                    text=True,
                    timeout=60,
                    env=self.p4c_env(),
                )
                lines = (r.stdout + r.stderr).strip().splitlines()
                self._checks["p4c_version"] = lines[-1].strip() if lines else "unknown"
            except (OSError, subprocess.TimeoutExpired) as e:
                self._checks["p4c_version"] = f"unknown ({e})"
        return self._checks["p4c_version"]

    def describe(self) -> str:
        """One line: what was found, from where."""
        parts = [
            f"{name} {path}"
            for name, path in (
                (SWITCH, self.simple_switch_grpc),
                (CLI, self.simple_switch_cli),
                (P4C, self.p4c),
                ("perf " + SWITCH, self.perf_simple_switch_grpc),
            )
            if path is not None
        ]
        return f"{', '.join(parts) or 'nothing'} (from {self.source})"

    def _where(self) -> str:
        return self.source if self.configured else "on PATH"

    def _bmv2_problem(self) -> str | None:
        if self.error:
            return self.error
        if self.simple_switch_grpc is None:
            return (
                f"{SWITCH} not found {self._where()} (install BMv2, set {PREFIX_ENV}=DIR "
                "or BMV2_PREFIX=DIR for make, or use --bmv2-docker IMAGE, e.g. "
                "rocelab:latest from docker/Dockerfile)"
            )
        missing = missing_libraries(self.simple_switch_grpc)
        if missing:
            return (
                f"{self.simple_switch_grpc} cannot run: missing {', '.join(missing)} ({APT_HINT})"
            )
        if self.simple_switch_cli is None:
            return f"{CLI} not found {self._where()} (BMv2's CLI sets the queue rates)"
        return cli_problem(self.simple_switch_cli)

    def _p4c_problem(self) -> str | None:
        if self.error:
            return self.error
        if self.p4c is None:
            return f"{P4C} not found {self._where()} (install p4c, or set {PREFIX_ENV}=DIR)"
        missing = missing_libraries(self.p4c)
        if missing:
            return f"{self.p4c} cannot run: missing {', '.join(missing)} ({APT_HINT})"
        return None


def missing_libraries(exe: Path) -> list[str]:
    """The shared libraries `exe` needs that the loader cannot find (`ldd`)."""
    try:
        r = subprocess.run(["ldd", str(exe)], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return []  # no ldd (not glibc): the binary's own start will say
    return [line.split("=>")[0].strip() for line in r.stdout.splitlines() if "not found" in line]


def cli_problem(cli: Path) -> str | None:
    """None when BMv2's Python CLI starts (it imports thrift and its runtime modules before
    parsing its arguments: `--help` shows an import that fails)."""
    try:
        r = subprocess.run(
            [str(cli), "--help"],
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{cli} --help: {e}"
    if r.returncode == 0:
        return None
    err = (r.stderr or r.stdout).strip().splitlines()
    last = err[-1] if err else f"exit {r.returncode}"
    if "No module named" in last:
        return (
            f"{cli} cannot start: {last} (BMv2's CLI needs the Python `thrift` package "
            "beside its own modules)"
        )
    return f"{cli} --help failed: {last}"


def toolchain() -> Toolchain:
    """The toolchain for the current ROCELAB_BMV2_PREFIX and PATH (found once for each)."""
    return _find(os.environ.get(PREFIX_ENV) or None, os.environ.get("PATH", ""))


@functools.lru_cache(maxsize=8)
def _find(prefix: str | None, path: str) -> Toolchain:
    if prefix is not None:
        return from_prefix(Path(prefix), f"{PREFIX_ENV}={prefix}")
    found = {name: shutil.which(name, path=path) for name in (SWITCH, CLI, P4C)}
    # Tools on PATH inside a prefix with flattened links: the prefix, materialised.
    for exe in filter(None, found.values()):
        root = Path(exe).resolve().parents[1]
        if flattened_links(root):
            return from_prefix(root, f"PATH ({root})")
    p4c = found[P4C]
    include = Path(p4c).resolve().parents[1] / "share" / "p4c" / "p4include" if p4c else None
    return Toolchain(
        "PATH",
        None,
        *(Path(found[n]) if found[n] else None for n in (SWITCH, CLI, P4C)),
        None,
        include if include and include.is_dir() else None,
    )


def from_prefix(prefix: Path, source: str) -> Toolchain:
    """The tools under `prefix` (bin/, perf/bin/, share/p4c/p4include), materialised first
    when its library links were flattened."""
    if not (prefix / "bin").is_dir():
        return Toolchain(source, error=f"{source}: no bin/ directory there")
    try:
        root = materialise(prefix) if flattened_links(prefix) else prefix.resolve()
    except OSError as e:
        return Toolchain(source, error=f"{source}: cannot copy it to restore its links ({e})")

    def tool(rel: str) -> Path | None:
        p = root / rel
        return p if p.is_file() and os.access(p, os.X_OK) else None

    include = root / "share" / "p4c" / "p4include"
    return Toolchain(
        source,
        root,
        tool(f"bin/{SWITCH}"),
        tool(f"bin/{CLI}"),
        tool(f"bin/{P4C}"),
        tool(f"perf/bin/{SWITCH}"),
        include if include.is_dir() else None,
    )


# ------------------------------------------------------------------ flattened prefixes


def _flattened_target(path: Path) -> str | None:
    """The link target a flattened shared-library symlink holds (`libbmpi.so.0` containing
    `libbmpi.so.0.0.0`), or None for any other file."""
    if ".so" not in path.name or path.is_symlink() or not path.is_file():
        return None
    try:
        if path.stat().st_size > 255:
            return None
        text = path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not text or "/" in text or "\n" in text or text == path.name:
        return None
    return text if (path.parent / text).is_file() else None


def _lib_dirs(prefix: Path) -> list[Path]:
    return [d for d in (prefix / "lib", prefix / "perf" / "lib") if d.is_dir()]


def flattened_links(prefix: Path) -> bool:
    """Does `prefix` hold shared-library links flattened into text files?"""
    return any(_flattened_target(p) for d in _lib_dirs(prefix) for p in d.iterdir())


def materialise(prefix: Path) -> Path:
    """A runnable copy of `prefix` in the cache, links restored; made once per prefix
    content (its path, and the size and time of each of its tools)."""
    prefix = prefix.resolve()
    h = hashlib.sha256(str(prefix).encode())
    for sub in ("bin", "perf/bin", "lib", "perf/lib"):
        d = prefix / sub
        for p in sorted(d.iterdir()) if d.is_dir() else ():
            st = p.stat()
            h.update(f"{p.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    dest = cache_root() / f"bmv2-{h.hexdigest()[:16]}"
    if dest.is_dir():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        _copy_restoring_links(prefix, tmp)
        os.chmod(tmp, 0o755)  # mkdtemp made it private
        try:
            os.rename(tmp, dest)  # atomic; fails when another process got there first
        except OSError:
            if not dest.is_dir():
                raise
    finally:
        if tmp.exists():
            _rmtree(tmp)
    return dest


def _copy_restoring_links(src: Path, dst: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(src):
        rel = Path(dirpath).relative_to(src)
        out = dst / rel
        out.mkdir(parents=True, exist_ok=True)
        for name in filenames:
            p = Path(dirpath) / name
            target = _flattened_target(p)
            if target is not None:
                os.symlink(target, out / name)
            elif p.is_symlink():
                os.symlink(os.readlink(p), out / name)
            else:
                shutil.copy2(p, out / name)
                os.chmod(out / name, (out / name).stat().st_mode | 0o200)
        dirnames.sort()


def _rmtree(path: Path) -> None:
    for dirpath, _, _ in os.walk(path):
        os.chmod(dirpath, 0o755)
    shutil.rmtree(path, ignore_errors=True)


# ------------------------------------------------------------------ p4c


@dataclass(frozen=True)
class Compiled:
    p4info: Path
    bmv2_json: Path
    stderr: str  # p4c's diagnostics (warnings included)


def compile_p4(program: Path, out_dir: Path, tc: Toolchain | None = None) -> Compiled:
    """p4c-bm2-ss --arch v1model on `program`: NAME.json and NAME.p4info.txtpb (NAME.p4info.txt
    when this p4c refuses .txtpb, as p4c 1.2.4.0 does; 1.2.5 warns on .txt) in `out_dir`.
    ConfigError with p4c's last lines when it fails."""
    tc = tc or toolchain()
    why = tc.p4c_problem()
    if why:
        raise ConfigError(why)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = program.stem
    bmv2_json = out_dir / f"{stem}.json"
    for suffix in (".txtpb", ".txt"):
        info = out_dir / f"{stem}.p4info{suffix}"
        argv = [
            str(tc.p4c),
            "--arch",
            "v1model",
            "-o",
            str(bmv2_json),
            "--p4runtime-files",
            str(info),
            str(program),
        ]
        try:
            # errors="replace": p4c's excerpt of a source line may cut a UTF-8 character
            r = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=600,
                env=tc.p4c_env(),
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ConfigError(f"{P4C} {program}: {e}") from None
        text = r.stdout + r.stderr
        if r.returncode == 0 and info.is_file() and bmv2_json.is_file():
            return Compiled(info, bmv2_json, text)
        if suffix == ".txtpb" and "txtpb" in text:
            continue  # an older p4c that knows only .txt
        tail = " | ".join(text.strip().splitlines()[-4:])
        raise ConfigError(f"{P4C} failed on {program} (exit {r.returncode}): {tail}")
    raise AssertionError("unreachable")


def artifacts_dir(program: Path) -> Path:
    """Where ensure_artifacts puts `program`'s artifacts: build/p4 for the project's own
    program, build/p4-NAME-HASH for any other."""
    program = Path(program).resolve()
    if program == DEFAULT_PROGRAM.resolve():
        return DEFAULT_ARTIFACTS
    digest = hashlib.sha256(str(program).encode()).hexdigest()[:8]
    return REPO_ROOT / "build" / f"p4-{program.stem}-{digest}"


def _sources(program: Path) -> list[Path]:
    """The .p4 files a change of which makes `program`'s artifacts stale: its folder's."""
    return sorted(program.parent.rglob("*.p4"))


def _newest(paths: list[Path]) -> int:
    return max((p.stat().st_mtime_ns for p in paths), default=0)


def stale(program: Path, out_dir: Path, tc: Toolchain | None = None) -> str | None:
    """Why `out_dir` must be (re)compiled from `program`, or None when it is up to date:
    missing, compiled from another program or by another p4c, or a .p4 file in the
    program's folder (its includes) newer than those compiled."""
    program = Path(program).resolve()
    try:
        stamp = json.loads((out_dir / STAMP).read_text())
        if not all((out_dir / stamp[k]).is_file() for k in ("p4info", "bmv2_json")):
            return "missing"
        compiled = int(stamp["sources_mtime_ns"])
    except (OSError, ValueError, KeyError, TypeError):
        return "missing"
    if stamp.get("program") != str(program):
        return f"compiled from {stamp.get('program')}"
    tc = tc or toolchain()
    if tc.p4c is not None and stamp.get("p4c") != tc.p4c_version():
        return f"compiled by {stamp.get('p4c')}"
    newer = [p for p in _sources(program) if p.stat().st_mtime_ns > compiled]
    return f"{newer[0]} is newer" if newer else None


def is_ours(out_dir: Path) -> bool:
    """Was `out_dir` compiled here (by ensure_artifacts), so that it may be recompiled?"""
    return (Path(out_dir) / STAMP).is_file()


def ensure_artifacts(
    program: Path = DEFAULT_PROGRAM, out_dir: Path | None = None, tc: Toolchain | None = None
) -> Path:
    """`out_dir` (default artifacts_dir(program)) with P4Info + BMv2 JSON of `program`,
    compiled with p4c only when missing or stale; one process compiles at a time."""
    program = Path(program).resolve()
    out_dir = Path(out_dir) if out_dir is not None else artifacts_dir(program)
    tc = tc or toolchain()
    if stale(program, out_dir, tc) is None:
        return out_dir
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    with _locked(out_dir.parent / f".{out_dir.name}.lock"):
        if stale(program, out_dir, tc) is None:  # another process compiled it meanwhile
            return out_dir
        tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}-", dir=out_dir.parent))
        try:
            sources_mtime = _newest(_sources(program))  # before: an edit meanwhile is newer
            done = compile_p4(program, tmp, tc)
            out_dir.mkdir(exist_ok=True)
            for old in [*out_dir.glob("*.p4info.*"), *out_dir.glob("*.json")]:
                old.unlink()
            for p in (done.p4info, done.bmv2_json):
                os.replace(p, out_dir / p.name)
            (out_dir / STAMP).write_text(
                json.dumps(
                    {
                        "program": str(program),
                        "p4c": tc.p4c_version(),
                        "p4info": done.p4info.name,
                        "bmv2_json": done.bmv2_json.name,
                        "sources_mtime_ns": sources_mtime,
                    }
                )
            )
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return out_dir


@contextlib.contextmanager
def _locked(path: Path):
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


# ------------------------------------------------------------------ command line


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(
        prog="python -m controller.targets.toolchain",
        description="find BMv2 and p4c (ROCELAB_BMV2_PREFIX or PATH)",
    )
    sub = ap.add_subparsers(dest="cmd")
    c = sub.add_parser("p4c", help="compile a program for BMv2 when its artifacts are stale")
    c.add_argument("program", nargs="?", type=Path, default=DEFAULT_PROGRAM)
    c.add_argument("--out", type=Path, default=None, help="default: build/p4 for roce_switch.p4")
    args = ap.parse_args(argv)
    tc = toolchain()
    if args.cmd == "p4c":
        if not args.program.is_file():
            print(f"{P4C}: {args.program}: no such file", file=sys.stderr)
            return 2
        out = args.out or artifacts_dir(args.program)
        why = stale(args.program, out, tc)
        try:
            ensure_artifacts(args.program, out, tc)
        except ConfigError as e:
            print(e, file=sys.stderr)
            return 2 if tc.p4c is None else 1
        print(f"{out}: {'compiled (' + why + ')' if why else 'up to date'} with {tc.p4c_version()}")
        return 0
    why = tc.bmv2_problem() or tc.p4c_problem()
    if why:
        print(why)
        return 2 if tc.configured else 1
    print(f"BMv2 toolchain: {tc.describe()}; {tc.p4c_version()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
