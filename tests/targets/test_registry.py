"""Target kinds are plug-ins (controller/targets/registry.py): one module per kind, and
nothing else in the tree lists or compares kind names. A kind written outside the tree and
registered the documented way (a `rocelab.targets` entry point) shows up in `rocelab`'s and
pytest's options and opens."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from controller.targets import registry
from controller.targets.config import ConfigError, TargetConfig

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "controller" / "examples" / "lab.yaml"
KINDS_DIR = ROOT / "controller" / "targets" / "kinds"
# Where dispatch on kinds would hide; p4sim/ is the simulator (it knows no target kinds).
SCANNED = ("controller", "lab", "bench")


def kind_dispatch(source: str, kinds: set[str]) -> list[str]:
    """Places in `source` that branch on target kind names, as "line: what": a comparison
    with a kind name (`kind == "bmv2"`, `kind in ("hw", "bmv2")`), a dict keyed by kind
    names, a literal list/tuple/set of two or more kind names (a second list of the kinds),
    a `match` case on one."""
    found: list[str] = []

    def names_in(node: ast.AST) -> list[str]:
        if isinstance(node, ast.Constant) and node.value in kinds:
            return [node.value]
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return [e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in kinds]
        return []

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            hit = [n for side in (node.left, *node.comparators) for n in names_in(side)]
            if hit:
                found.append(f"{node.lineno}: compares with {hit}")
        elif isinstance(node, ast.Dict):
            hit = [k.value for k in node.keys if isinstance(k, ast.Constant) and k.value in kinds]
            if hit:
                found.append(f"{node.lineno}: dict keyed by {hit}")
        elif isinstance(node, ast.Tuple | ast.List | ast.Set):
            hit = names_in(node)
            if len(hit) >= 2:
                found.append(f"{node.lineno}: lists kinds {hit}")
        elif isinstance(node, ast.MatchValue) and names_in(node.value):
            found.append(f"{node.lineno}: match case {names_in(node.value)}")
    return found


def imports_of(source: str) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return out


def _py_files(*dirs: str):
    for d in dirs:
        yield from sorted((ROOT / d).rglob("*.py"))


def test_the_checkers_catch_what_they_look_for():
    """Negative controls: the dispatch an AST scan must flag, and what it must leave alone."""
    kinds = {"p4sim", "bmv2", "hw"}
    bad = """
if kind == "bmv2":
    pass
elif cfg.kind in ("hw", "x"):
    pass
cls = {"p4sim": A, "bmv2": B}[kind]
CHOICES = ["p4sim", "bmv2"]
match kind:
    case "hw":
        pass
"""
    found = kind_dispatch(bad, kinds)
    assert sorted(int(f.split(":")[0]) for f in found) == [2, 4, 6, 7, 9], found
    ok = 'open_target("p4sim", seed=1)\nname = "bmv2"\nif x == "other": pass\n'
    assert kind_dispatch(ok, kinds) == []
    assert "controller.testing.netns" in imports_of("from controller.testing import netns")
    assert imports_of("import controller.testing.switches as s") == {"controller.testing.switches"}


def test_no_module_outside_the_kind_modules_dispatches_on_kinds():
    kinds = set(registry.names())
    assert {"p4sim", "p4sim-grpc", "bmv2", "hw", "p4runtime"} <= kinds
    offenders = []
    for path in _py_files(*SCANNED):
        if path.parent == KINDS_DIR:
            continue
        offenders += [
            f"{path.relative_to(ROOT)}:{f}" for f in kind_dispatch(path.read_text(), kinds)
        ]
    assert offenders == []


def test_each_kind_lives_in_its_own_module():
    modules = {k.name: type(k).__module__ for k in registry.kinds().values()}
    assert all(m.startswith("controller.targets.kinds.") for m in modules.values()), modules
    assert len(set(modules.values())) == len(modules)  # one module per kind


def test_lab_and_fabric_do_not_import_controller_testing():
    for path in _py_files("lab", "controller/fabric"):
        bad = [
            m
            for m in imports_of(path.read_text())
            if m == "controller.testing" or m.startswith("controller.testing.")
        ]
        assert bad == [], f"{path.relative_to(ROOT)} imports {bad}"


# ---------------------------------------------------------------- the registry's rules


def test_unknown_kind_and_misplaced_options_are_one_line_errors():
    with pytest.raises(ConfigError, match=r"--target nosuch: one of .*p4sim"):
        registry.get("nosuch")
    with pytest.raises(ConfigError, match="--bmv2-docker only applies to --target bmv2$"):
        registry.validate(TargetConfig(kind="p4sim-grpc", options={"bmv2_docker": "img"}))
    with pytest.raises(
        ConfigError,
        match=r"--p4-artifacts only applies to --target bmv2, hw, "
        r"p4runtime$",
    ):
        registry.validate(TargetConfig(kind="p4sim-grpc", options={"p4_artifacts": "x"}))
    # An in-process p4sim given an address stands for the switch running there.
    cfg = TargetConfig(kind="p4sim", grpc_addr="127.0.0.1:1")
    assert registry.resolve(cfg).name == "p4runtime" and cfg.kind == "p4runtime"
    assert registry.switch_kind("p4sim").name == "p4sim-grpc"
    with pytest.raises(ConfigError, match="cannot be started as a switch process"):
        registry.switch_kind("hw")


def test_two_kinds_of_one_name_or_two_versions_of_an_option_are_refused(monkeypatch):
    class A(registry.TargetKind):
        name = "dup"
        options = (registry.Option("--flavour", "one way"),)

    class B(registry.TargetKind):
        name = "dup2"
        options = (registry.Option("--flavour", "another way"),)

    with pytest.raises(ConfigError, match="--flavour declared two ways"):
        registry._check_options([A(), B()])
    registry._check_options([A(), A()])  # the same Option shared is fine


def test_kinds_answer_through_the_registry():
    """Open the in-process kind through the registry: the port rate of cfg reaches the
    switch (a kind that ignored port_rates would leave the port at its default speed)."""
    cfg = TargetConfig(kind="p4sim", port_rates={4: 1_000_000}, seed=3)
    t = registry.open_config(cfg)
    try:
        assert t.virtual_time and t.seed == 3
        assert t._tm()._port(4).bits_per_s == 1_000_000
        assert t._tm()._port(3).bits_per_s is None
    finally:
        t.close()


# ---------------------------------------------------------------- a kind from outside


PLUGIN = '''
"""A target kind living outside rocelab: the in-process p4sim under another name, with its
own option (what a vendor's kind module would look like)."""

from controller.targets.p4sim import P4SimTarget
from controller.targets.registry import Option, TargetKind

SALT = Option("--salt-seed", "seed of the extra kind's RNG", type=int, default=0)


class SaltKind(TargetKind):
    name = "salted"
    help = "p4sim under another name (a plug-in test)"
    in_process = True
    options = (SALT,)

    def open(self, cfg, program=None, process=None):
        t = P4SimTarget(program or self.program(cfg), cfg.cpu_port, cfg.options["salt_seed"])
        t.name = f"salted:{cfg.options['salt_seed']}"
        return t


KIND = SaltKind()
'''


def _plugin_site(tmp_path: Path, value: str = "salted_kind") -> dict[str, str]:
    """A directory on PYTHONPATH holding the module and the metadata pip would write for a
    distribution declaring `[project.entry-points."rocelab.targets"] salted = "salted_kind"`."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "salted_kind.py").write_text(PLUGIN)
    dist = site / "rocelab_salted-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: rocelab-salted\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[rocelab.targets]\nsalted = {value}\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _rocelab(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_a_kind_from_outside_the_tree_is_a_choice_and_opens(tmp_path):
    env = _plugin_site(tmp_path)
    helptext = _rocelab(env, "counters", "--help")
    assert helptext.returncode == 0, helptext.stderr
    assert "salted" in helptext.stdout and "--salt-seed" in helptext.stdout
    r = _rocelab(env, "apply", str(LAB), "--target", "salted", "--salt-seed", "7")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("salted:7: wrote "), r.stdout  # its own open() ran
    r = _rocelab(env, "counters", "--salt-seed", "7")  # default target p4sim reads no salt
    assert (
        r.returncode == 2
        and r.stderr.strip() == "rocelab: --salt-seed only applies to --target salted"
    )
    # Negative control: without the entry point the kind does not exist.
    plain = _rocelab(dict(os.environ), "apply", str(LAB), "--target", "salted")
    assert plain.returncode == 2 and "invalid choice: 'salted'" in plain.stderr


def test_a_kind_from_outside_the_tree_runs_the_suite(tmp_path):
    env = _plugin_site(tmp_path)
    test = tmp_path / "test_inner.py"
    test.write_text(
        "def test_target_is_the_plugin(target, target_ports):\n"
        "    assert target.name == 'salted:5' and target_ports == [1, 2, 3, 4]\n"
    )
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        str(test),
        "--rootdir",
        str(tmp_path),
    ]
    r = subprocess.run(
        [*argv, "--target", "salted", "--salt-seed", "5"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "rocelab target: salted (in-process)" in r.stdout
    control = subprocess.run(
        [*argv, "--target", "p4sim"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert control.returncode == 1  # the built-in kind is not the plug-in's
    h = subprocess.run(
        [*argv, "--help"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180
    )
    assert "salted" in h.stdout and "--salt-seed" in h.stdout


def test_a_broken_plugin_is_a_one_line_error(tmp_path):
    env = _plugin_site(tmp_path, value="no_such_module_here")
    r = _rocelab(env, "counters")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "rocelab: target plug-in salted = no_such_module_here (entry point rocelab.targets): "
        "ModuleNotFoundError: No module named 'no_such_module_here'"
    ]


def test_lab_offers_the_kinds_that_run_as_a_switch_process():
    r = subprocess.run(
        [sys.executable, "-m", "lab.run", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0
    choices = r.stdout.split("--target {", 1)[1].split("}", 1)[0].split(",")
    assert choices == registry.names(lambda k: k.switch_kind is not None)
    assert {"p4sim", "p4sim-grpc", "bmv2"} <= set(choices) and "hw" not in choices


def test_lab_says_what_a_kind_lacks_before_building_anything(no_bmv2):
    if os.geteuid() != 0:
        pytest.skip("lab.run checks for root first")
    r = subprocess.run(
        [sys.executable, "-m", "lab.run", "--target", "bmv2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2
    assert "--target bmv2 needs --p4-artifacts DIR" in r.stderr and "make p4-bmv2" in r.stderr
    # nothing was built (the sweep of namespaces that other, dead runs left may speak first)
    said = [
        line
        for line in r.stdout.splitlines()
        if line.startswith("lab:") and "left by dead runs" not in line
    ]
    assert said == [], said
