"""Finding BMv2 and p4c (controller.targets.toolchain): a prefix given once or PATH, a
read-only prefix with flattened library links materialised once, what cannot run said in
one line, and p4c run only when the artifacts are stale.

Stand-ins: shell scripts play the tools where a test needs one that misbehaves (an old p4c
that refuses .txtpb, a CLI without thrift); the real toolchain is exercised by the BMv2
tier (tests/p4src/test_p4c.py and the suites run with --target bmv2)."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from controller.targets import toolchain as tcm
from controller.targets.config import ConfigError
from controller.targets.toolchain import (
    PREFIX_ENV,
    Toolchain,
    compile_p4,
    ensure_artifacts,
    flattened_links,
    from_prefix,
    materialise,
    stale,
    toolchain,
)

ROOT = Path(__file__).resolve().parents[2]


def _script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def _flattened_prefix(root: Path) -> Path:
    """A prefix as ../shared/refp4 is: bin/ tools, lib/ with each .so link flattened into a
    text file naming its target, everything read-only."""
    prefix = root / "refp4"
    _script(prefix / "bin" / "simple_switch_grpc", "echo switch\n")
    _script(prefix / "bin" / "p4c-bm2-ss", "echo 'Version 9.9.9'\n")
    _script(prefix / "perf" / "bin" / "simple_switch_grpc", "echo perf\n")
    for lib in (prefix / "lib", prefix / "perf" / "lib"):
        lib.mkdir(parents=True)
        (lib / "libbmpi.so.0.0.0").write_bytes(b"\x7fELF" + bytes(300))
        (lib / "libbmpi.so.0").write_text("libbmpi.so.0.0.0")
        (lib / "libbmpi.so").write_text("libbmpi.so.0.0.0\n")
        (lib / "notes.so.txt").write_text("hello")  # small, but names no sibling: a file
    (prefix / "share" / "p4c" / "p4include").mkdir(parents=True)
    for dirpath, _, files in os.walk(prefix):
        for f in files:
            p = Path(dirpath) / f
            p.chmod(p.stat().st_mode & ~0o222)
    for dirpath, _, _ in os.walk(prefix, topdown=False):
        os.chmod(dirpath, 0o555)
    return prefix


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    yield tmp_path / "cache" / "rocelab"
    for dirpath, _, _ in os.walk(tmp_path):  # let pytest remove the read-only prefix
        os.chmod(dirpath, 0o755)


def test_flattened_prefix_is_materialised_once_with_its_links(tmp_path, cache):
    prefix = _flattened_prefix(tmp_path)
    assert flattened_links(prefix)
    tc = from_prefix(prefix, f"{PREFIX_ENV}={prefix}")
    assert tc.prefix is not None and tc.prefix.parent == cache and tc.error is None
    lib = tc.prefix / "lib"
    assert os.readlink(lib / "libbmpi.so.0") == "libbmpi.so.0.0.0"
    assert os.readlink(lib / "libbmpi.so") == "libbmpi.so.0.0.0"
    assert not (lib / "notes.so.txt").is_symlink()  # only real flattened links become links
    assert (lib / "libbmpi.so.0.0.0").read_bytes().startswith(b"\x7fELF")
    assert os.readlink(tc.prefix / "perf" / "lib" / "libbmpi.so.0") == "libbmpi.so.0.0.0"
    assert tc.simple_switch_grpc == tc.prefix / "bin" / "simple_switch_grpc"
    assert tc.perf_simple_switch_grpc == tc.prefix / "perf" / "bin" / "simple_switch_grpc"
    assert tc.p4include == tc.prefix / "share" / "p4c" / "p4include"
    assert tc.p4c_env()["P4C_16_INCLUDE_PATH"] == str(tc.p4include)
    assert not flattened_links(tc.prefix)
    assert (prefix / "lib" / "libbmpi.so.0").read_text() == "libbmpi.so.0.0.0"  # untouched
    # Once: the same copy again, and nothing else in the cache.
    assert materialise(prefix) == tc.prefix
    assert [p.name for p in cache.iterdir()] == [tc.prefix.name]


def test_a_prefix_without_flattened_links_is_used_where_it_is(tmp_path):
    prefix = tmp_path / "bmv2"
    _script(prefix / "bin" / "simple_switch_grpc", "exit 0\n")
    (prefix / "lib").mkdir()
    os.symlink("libbmpi.so.0.0.0", prefix / "lib" / "libbmpi.so.0")
    (prefix / "lib" / "libbmpi.so.0.0.0").write_bytes(b"\x7fELF")
    assert not flattened_links(prefix)
    tc = from_prefix(prefix, "x")
    assert tc.prefix == prefix.resolve() and tc.p4c is None and tc.perf_simple_switch_grpc is None


def _materialise_in_child(prefix: str, cache_home: str, q) -> None:
    os.environ["XDG_CACHE_HOME"] = cache_home
    q.put(str(materialise(Path(prefix))))


def test_concurrent_workers_get_one_complete_copy(tmp_path, cache):
    """xdist workers materialise the same prefix at once: each builds aside and renames;
    all end up with the same complete copy and no temporary directory is left."""
    prefix = _flattened_prefix(tmp_path)
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    procs = [
        ctx.Process(
            target=_materialise_in_child, args=(str(prefix), os.environ["XDG_CACHE_HOME"], q)
        )
        for _ in range(4)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    got = {q.get(timeout=10) for _ in procs}
    assert len(got) == 1
    dest = Path(got.pop())
    assert [p.name for p in cache.iterdir()] == [dest.name]
    assert os.readlink(dest / "lib" / "libbmpi.so.0") == "libbmpi.so.0.0.0"


def test_prefix_env_wins_over_path_and_a_bad_prefix_is_one_line(tmp_path, monkeypatch):
    on_path = _script(tmp_path / "path" / "simple_switch_grpc", "exit 0\n")
    monkeypatch.setenv("PATH", f"{on_path.parent}:/usr/bin:/bin")
    monkeypatch.delenv(PREFIX_ENV, raising=False)
    assert toolchain().simple_switch_grpc == on_path and toolchain().source == "PATH"
    monkeypatch.setenv(PREFIX_ENV, str(tmp_path / "nowhere"))
    tc = toolchain()
    assert tc.simple_switch_grpc is None and tc.configured
    assert tc.bmv2_problem() == f"{PREFIX_ENV}={tmp_path / 'nowhere'}: no bin/ directory there"
    r = subprocess.run(
        [sys.executable, "-m", "controller.targets.toolchain"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and r.stdout.strip() == tc.bmv2_problem() and not r.stderr
    monkeypatch.delenv(PREFIX_ENV)
    monkeypatch.setenv("PATH", "/nonexistent")
    r = subprocess.run(
        [sys.executable, "-m", "controller.targets.toolchain"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 1 and r.stdout.startswith("simple_switch_grpc not found on PATH")


def test_tools_on_path_inside_a_flattened_prefix_are_materialised(tmp_path, cache, monkeypatch):
    prefix = _flattened_prefix(tmp_path)
    monkeypatch.delenv(PREFIX_ENV, raising=False)
    monkeypatch.setenv("PATH", f"{prefix / 'bin'}:/usr/bin:/bin")
    tc = toolchain()
    assert tc.prefix is not None and tc.prefix.parent == cache
    assert tc.simple_switch_grpc == tc.prefix / "bin" / "simple_switch_grpc"


def test_missing_libraries_are_named_up_front(tmp_path):
    """A real ELF needing a library that is gone: ldd says so, bmv2_problem names it."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("needs a C compiler to build an ELF with a missing library")
    (tmp_path / "gone.c").write_text("int gone(void) { return 1; }\n")
    (tmp_path / "main.c").write_text("int gone(void);\nint main(void) { return gone(); }\n")
    subprocess.run(
        [cc, "-shared", "-fPIC", "-o", tmp_path / "libgone.so", tmp_path / "gone.c"],
        check=True,
        timeout=120,
    )
    exe = tmp_path / "bin" / "simple_switch_grpc"
    exe.parent.mkdir()
    subprocess.run(
        [cc, "-o", exe, tmp_path / "main.c", f"-L{tmp_path}", "-lgone"], check=True, timeout=120
    )
    (tmp_path / "libgone.so").unlink()
    tc = Toolchain("PATH", simple_switch_grpc=exe, simple_switch_cli=exe)
    why = tc.bmv2_problem()
    assert why is not None and "\n" not in why
    assert why.startswith(f"{exe} cannot run: missing libgone.so") and "make setup" in why


def test_a_cli_that_cannot_import_thrift_is_named_up_front(tmp_path):
    cli = tmp_path / "simple_switch_CLI"
    cli.write_text(f"#!{sys.executable}\nimport thrift_is_not_installed_here\n")
    cli.chmod(0o755)
    tc = Toolchain("PATH", simple_switch_grpc=Path("/bin/true"), simple_switch_cli=cli)
    why = tc.bmv2_problem()
    assert why == (
        f"{cli} cannot start: ModuleNotFoundError: No module named "
        "'thrift_is_not_installed_here' (BMv2's CLI needs the Python `thrift` "
        "package beside its own modules)"
    )
    _script(cli, "echo usage\n")  # a CLI that starts: no problem (checked once, so anew)
    assert (
        Toolchain(
            "PATH", simple_switch_grpc=Path("/bin/true"), simple_switch_cli=cli
        ).bmv2_problem()
        is None
    )


def _fake_p4c(tmp_path: Path, accepts_txtpb: bool) -> Toolchain:
    """A stand-in p4c-bm2-ss that writes its two outputs and counts its runs; the old one
    refuses a .txtpb P4Info file as p4c 1.2.4.0 does."""
    refuse = (
        ""
        if accepts_txtpb
        else (
            'case "$info" in *.txtpb) echo "$info: unknown P4Runtime file format" >&2; exit 1;; esac\n'
        )
    )
    p4c = _script(
        tmp_path / "bin" / "p4c-bm2-ss",
        f"""
[ "$1" = --version ] && {{ echo 'Version 1.2.{5 if accepts_txtpb else 4}.0'; exit 0; }}
echo run >> {tmp_path}/runs
while [ $# -gt 1 ]; do
  case "$1" in -o) out="$2"; shift;; --p4runtime-files) info="$2"; shift;; esac; shift
done
{refuse}echo '{{}}' > "$out"; echo 'pkg_info {{}}' > "$info"
""",
    )
    return Toolchain("PATH", p4c=p4c)


def _runs(tmp_path: Path) -> int:
    runs = tmp_path / "runs"
    return len(runs.read_text().splitlines()) if runs.exists() else 0


def test_p4info_suffix_follows_what_p4c_accepts(tmp_path):
    prog = ROOT / "p4src" / "roce_switch.p4"
    new = compile_p4(prog, tmp_path / "new", _fake_p4c(tmp_path / "a", True))
    assert new.p4info.name == "roce_switch.p4info.txtpb" and new.bmv2_json.is_file()
    old = compile_p4(prog, tmp_path / "old", _fake_p4c(tmp_path / "b", False))
    assert old.p4info.name == "roce_switch.p4info.txt"
    assert _runs(tmp_path / "b") == 2  # refused .txtpb, then .txt


def test_p4c_errors_are_one_clear_error(tmp_path):
    bad = _script(
        tmp_path / "bin" / "p4c-bm2-ss",
        "[ \"$1\" = --version ] && exit 0\necho 'x.p4(3): syntax error' >&2\nexit 1\n",
    )
    with pytest.raises(
        ConfigError, match=r"p4c-bm2-ss failed on .*\(exit 1\): x.p4\(3\): syntax error"
    ):
        compile_p4(ROOT / "p4src" / "roce_switch.p4", tmp_path / "out", Toolchain("PATH", p4c=bad))
    with pytest.raises(ConfigError, match="p4c-bm2-ss not found on PATH"):
        compile_p4(ROOT / "p4src" / "roce_switch.p4", tmp_path / "out", Toolchain("PATH"))


def test_artifacts_are_compiled_only_when_missing_or_stale(tmp_path):
    """p4c runs when there are no artifacts, when a .p4 file of the program (an include)
    is newer, when another p4c or another program made them; never otherwise."""
    src = tmp_path / "p4src"
    shutil.copytree(ROOT / "p4src", src, ignore=shutil.ignore_patterns("tests"))
    prog, out = src / "roce_switch.p4", tmp_path / "build" / "p4"
    tc = _fake_p4c(tmp_path / "p4c", True)
    assert stale(prog, out, tc) == "missing"
    assert ensure_artifacts(prog, out, tc) == out and _runs(tmp_path / "p4c") == 1
    assert sorted(p.name for p in out.iterdir()) == [
        ".rocelab-p4c.stamp",
        "roce_switch.json",
        "roce_switch.p4info.txtpb",
    ]
    assert stale(prog, out, tc) is None
    ensure_artifacts(prog, out, tc)
    assert _runs(tmp_path / "p4c") == 1
    later = max(p.stat().st_mtime_ns for p in src.rglob("*.p4")) + 10**9
    os.utime(src / "include" / "ecn.p4", ns=(later, later))
    assert stale(prog, out, tc) == f"{src / 'include' / 'ecn.p4'} is newer"
    ensure_artifacts(prog, out, tc)
    assert _runs(tmp_path / "p4c") == 2 and stale(prog, out, tc) is None
    (src / "README.md").touch()  # not P4: no recompile
    assert stale(prog, out, tc) is None
    old = _fake_p4c(tmp_path / "p4c-old", False)
    assert stale(prog, out, old) == "compiled by Version 1.2.5.0"
    ensure_artifacts(prog, out, old)  # the old p4c's .txt replaces the .txtpb: one P4Info
    assert sorted(p.name for p in out.iterdir()) == [
        ".rocelab-p4c.stamp",
        "roce_switch.json",
        "roce_switch.p4info.txt",
    ]
    other = src / "other.p4"
    other.write_text("// another program\n")
    assert stale(other, out, old) == f"compiled from {prog}"


def test_default_artifacts_live_in_build_p4():
    assert tcm.artifacts_dir(ROOT / "p4src" / "roce_switch.p4") == ROOT / "build" / "p4"
    other = tcm.artifacts_dir(ROOT / "tests" / "x.p4")
    assert other.parent == ROOT / "build" and other.name.startswith("p4-x-")
