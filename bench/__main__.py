"""`make bench`: run every benchmark section and print its figures.

Each section is a module `bench/<name>.py` with `run(argv: list[str]) -> None` that prints
its own figures with the target it is measured against. `python -m bench NAME...` runs
only the named sections; options after them go to the sections.

`--smoke` runs each section at its smallest size: the options in the section's own
`SMOKE` list, so the smoke run goes through the same code as the full one:
figures in their usual shape, not worth reading, in well under 30 s for all sections.
tests/bench runs it, so a section that breaks when an API moves turns the suite red.

`python -m bench --help` (or `-h`) prints this help and the sections;
`python -m bench SECTION... --help` prints those sections' help (their options where
they take argparse's, else their docstring). Neither runs anything.
"""

from __future__ import annotations

import ast
import importlib
import sys
import time
from pathlib import Path

SECTIONS = [
    "p4sim_pipeline",
    "table_growth",
    "p4runtime",
    "veth_forwarding",
    "scenario",
    "paper",
    "packets",
    "fabric",
    "hdl",
    "fil",
]


def usage() -> str:
    """This module's help and one line per section (the first line of its docstring),
    read from the source without importing the section (nothing runs)."""
    lines = [
        __doc__.strip(),
        "",
        "usage: python -m bench [SECTION...] [--smoke] [SECTION OPTIONS]",
        "",
        "sections:",
    ]
    for name in SECTIONS:
        path = Path(__file__).with_name(f"{name}.py")
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        lines.append(f"  {name:16} {doc.splitlines()[0] if doc else ''}")
    return "\n".join(lines)


def wants_help(opts: list[str]) -> bool:
    """The sections' options ask for help (argparse's own would exit inside a section's
    run(), and a section without argparse would ignore it and run)."""
    return "-h" in opts or "--help" in opts


def section_help(name: str) -> str:
    """A section's help, nothing run: its parser's help when it has one (`parser()`; the
    module is imported, which only defines things), else its docstring (read, not imported)."""
    path = Path(__file__).with_name(f"{name}.py")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    if any(isinstance(n, ast.FunctionDef) and n.name == "parser" for n in tree.body):
        return importlib.import_module(f"bench.{name}").parser().format_help()
    return f"python -m bench {name}\n\n{ast.get_docstring(tree) or '(no help)'}\n"


def main(argv: list[str]) -> int:
    # section names come first; from the first option on, the arguments are the sections'
    # own (`python -m bench p4runtime --trials 3`)
    first_opt = next((i for i, a in enumerate(argv) if a.startswith("-")), len(argv))
    names = argv[:first_opt] or SECTIONS
    opts = argv[first_opt:]
    if first_opt == 0 and opts and opts[0] in ("-h", "--help"):
        print(usage())
        return 0
    if wants_help(opts):  # a section's own help: it must not run
        unknown = [n for n in names if n not in SECTIONS]
        if unknown:
            print(
                f"bench: unknown section {unknown[0]!r}; known: {', '.join(SECTIONS)}",
                file=sys.stderr,
            )
            return 2
        print("\n".join(section_help(name) for name in names))
        return 0
    smoke = "--smoke" in opts
    opts = [a for a in opts if a != "--smoke"]
    failed = 0
    for name in names:
        if name not in SECTIONS:
            print(f"bench: unknown section {name!r}; known: {', '.join(SECTIONS)}", file=sys.stderr)
            return 2
        print(f"== bench {name}", flush=True)
        start = time.perf_counter()
        try:
            module = importlib.import_module(f"bench.{name}")
            module.run(opts + module.SMOKE if smoke else opts)
        except Exception as exc:  # one broken section must not hide the others' figures
            failed += 1
            print(f"bench {name}: FAILED: {exc!r}", file=sys.stderr)
        print(f"== bench {name} done in {time.perf_counter() - start:.1f} s\n", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
