"""The environment variables production code reads: one setting (P4SIM_PROFILE), where built
modules are cached (P4SIM_CACHE_DIR) and the parent a started switch watches
(P4SIM_EXIT_WITH), each documented in p4sim/README.md. The A/B switches of the speed work
(P4SIM_BACKEND, _FRONTEND, _WRITE, _STREAM_REACT, ...) left with the paths they selected;
bench/ and tests/ may keep their own. Negative controls: a planted switch in a production
file, and a README that lost one of the three."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = ("p4sim", "controller", "p4rtproto", "lab")  # what a user runs (not bench/, tests/)
SUFFIXES = (".py", ".pyx", ".pxd", ".cc", ".h", ".c", ".sh")
ALLOWED = {"P4SIM_PROFILE", "P4SIM_CACHE_DIR", "P4SIM_EXIT_WITH"}
README = ROOT / "p4sim" / "README.md"
# P4SIM_ starting a word: the P4 macro __P4SIM__ is no environment variable
NAME = re.compile(r"\bP4SIM_[A-Z0-9_]+")


def production_texts() -> dict[str, str]:
    """Every source file of the production trees: path (from the root) -> text."""
    return {
        str(p.relative_to(ROOT)): p.read_text(encoding="utf-8", errors="replace")
        for top in PRODUCTION
        for p in sorted((ROOT / top).rglob("*"))
        if p.suffix in SUFFIXES and p.is_file()
    }


def env_names(texts: Mapping[str, str]) -> dict[str, list[str]]:
    """P4SIM_* name -> the files that name it."""
    found: dict[str, list[str]] = {}
    for path, text in texts.items():
        for name in sorted(set(NAME.findall(text))):
            found.setdefault(name, []).append(path)
    return found


def problems(texts: Mapping[str, str], readme: str) -> list[str]:
    found = env_names(texts)
    out = [
        f"{name} read in {', '.join(found[name])}: not one of {sorted(ALLOWED)}"
        for name in sorted(set(found) - ALLOWED)
    ]
    out += [
        f"{name} not documented in p4sim/README.md"
        for name in sorted(found)
        if f"`{name}`" not in readme
    ]
    return out


def test_production_code_reads_only_the_documented_settings() -> None:
    texts = production_texts()
    assert len(texts) > 100  # the trees were found
    assert set(env_names(texts)) == ALLOWED  # all three still read: the README check is not empty
    assert problems(texts, README.read_text(encoding="utf-8")) == []


def test_negative_control_a_planted_switch_and_an_undocumented_setting() -> None:
    texts = production_texts()
    readme = README.read_text(encoding="utf-8")
    planted = {**texts, "p4sim/server/x.py": 'FAST = os.environ.get("P4SIM_FAST_WRITE") == "1"\n'}
    assert problems(planted, readme) == [
        "P4SIM_FAST_WRITE read in p4sim/server/x.py: not one of "
        "['P4SIM_CACHE_DIR', 'P4SIM_EXIT_WITH', 'P4SIM_PROFILE']",
        "P4SIM_FAST_WRITE not documented in p4sim/README.md",
    ]
    assert problems(texts, readme.replace("`P4SIM_CACHE_DIR`", "the cache variable")) == [
        "P4SIM_CACHE_DIR not documented in p4sim/README.md"
    ]
