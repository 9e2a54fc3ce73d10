"""Target kinds as plug-ins: each kind is one module that declares its name and help, its
own command-line/pytest options, how it starts (a switch process, if it has one) and how it
opens (the `Target`). Nothing outside those modules lists or compares kind names: the CLI,
the pytest plugin, the lab and the fabric ask this registry.

Where kinds come from:
- every module of `controller/targets/kinds/` (a package scan: a new in-tree kind is one
  new file, and no second place in the tree lists the kinds to drift from the files);
- every `rocelab.targets` entry point (how a kind living outside this tree registers, the
  way pytest finds its plug-ins): `[project.entry-points."rocelab.targets"] NAME = "MODULE"`.
A module exposes its kind as `KIND = MyKind()` (a `TargetKind` instance).
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from p4sim import cliargs

from .base import Program
from .config import DEFAULT_KIND, ConfigError, TargetConfig
from .program import DEFAULT_PROGRAM

if TYPE_CHECKING:
    from .base import Target
    from .switches import SwitchProcess

ENTRY_POINT_GROUP = "rocelab.targets"
ENV_PREFIX = "ROCELAB_"  # pytest options default to ROCELAB_<DEST> from the environment


@dataclass(frozen=True)
class Option:
    """One option a kind reads, declared once for argparse (the `rocelab` CLI) and for
    pytest (whose `addoption` takes argparse's arguments). Its value reaches the kind as
    `cfg.options[dest]`. Kinds that read the same option share the same Option object."""

    flag: str
    help: str
    type: Callable[[str], Any] | None = None
    default: Any = None
    action: str | None = None  # "store_true" for a flag
    metavar: str | None = None
    cli: bool = True  # offered by `rocelab ... [target options]`
    pytest: bool = True  # offered by the pytest plugin (default from ROCELAB_<DEST>)

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    def env_default(self) -> Any:
        """The pytest default: the environment variable, else `default` (argparse applies
        `type` to a string default)."""
        text = os.environ.get(ENV_PREFIX + self.dest.upper())
        if text is None:
            return self.default
        if self.action == "store_true":
            return text.strip().lower() in ("1", "true", "yes", "on")
        return text

    def kwargs(self, context: str) -> dict[str, Any]:
        kw: dict[str, Any] = {
            "help": self.help,
            "dest": self.dest,
            "default": self.env_default() if context == "pytest" else self.default,
        }
        if self.action:
            kw["action"] = self.action
        else:
            if self.type is not None:
                kw["type"] = self.type
            if self.metavar:
                kw["metavar"] = self.metavar
        return kw


class TargetKind:
    """One kind of target. Subclass it in a kind module and set `KIND = YourKind()`.

    Override what applies: `check` (say what is missing), `program` (what gets pushed),
    `start` (a switch process on given interfaces; kinds without one leave it), `open`.
    """

    name: str = ""
    help: str = ""
    in_process: bool = False  # runs in this process in virtual time (no address, no ports)
    options: tuple[Option, ...] = ()  # the options this kind reads (shared ones included)
    # The kind a lab runs for this one as a switch process on its links (None: cannot).
    switch_kind: str | None = None
    # A switch this kind starts runs cfg.program from the start: opening it needs no push.
    loads_program: bool = False

    def resolve(self, cfg: TargetConfig) -> TargetKind:
        """The kind that really serves `cfg` (an in-process kind given an address may hand
        over to a remote one)."""
        return self

    def check(self, cfg: TargetConfig, context: str = "cli") -> None:
        """ConfigError naming what this configuration lacks. `context`: who opens it:
        "cli" (a target already running, or in-process), "pytest" (the suite: may start a
        switch, needs data ports), "lab" (a switch process the lab starts)."""

    def program(self, cfg: TargetConfig) -> Program:
        return cfg.program if isinstance(cfg.program, Program) else from_p4(cfg.program)

    def compile_p4(self, path: Path) -> Program:
        """P4 source (an existing file) as a Program this kind's switches take: P4Info and
        device config. Kinds without a compiler leave it."""
        raise ConfigError(f"--target {self.name} does not compile P4 source")

    @property
    def can_start(self) -> bool:
        return type(self).start is not TargetKind.start

    def prepare(self, cfg: TargetConfig) -> None:
        """Before any set-up (veths, ...): raise if `start` cannot work here (a missing
        binary, no Docker engine), with the way to fix it."""

    def start(
        self,
        cfg: TargetConfig,
        ports: Mapping[int, str],
        *,
        log_dir: str | os.PathLike | None = None,
        netns: str | None = None,
    ) -> SwitchProcess:
        """A switch process attached to `ports` (switch port -> interface), serving
        P4Runtime on a free local port, ready when this returns."""
        raise ConfigError(
            f"--target {self.name} is not started here: pass --grpc-addr "
            "HOST:PORT of a running switch"
        )

    def open(
        self,
        cfg: TargetConfig,
        program: Program | None = None,
        process: SwitchProcess | None = None,
    ) -> Target:
        """The Target: `program` pushed (with `cfg.push`), ports of `cfg.port_map` open.
        `process`: the switch this kind started for `cfg` (None: at `cfg.grpc_addr`)."""
        raise NotImplementedError


# ---------------------------------------------------------------- discovery

_KINDS: dict[str, TargetKind] | None = None


def _kind_of(obj: Any, where: str) -> TargetKind:
    if isinstance(obj, type) and issubclass(obj, TargetKind):
        obj = obj()
    elif not isinstance(obj, TargetKind):
        obj = getattr(obj, "KIND", None)
    if not isinstance(obj, TargetKind) or not obj.name:
        raise ConfigError(f"target plug-in {where}: no KIND = TargetKind(...) with a name")
    return obj


def _discover() -> dict[str, TargetKind]:
    from importlib.metadata import entry_points

    from . import kinds as package

    found: list[tuple[TargetKind, str]] = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        where = f"{package.__name__}.{info.name}"
        found.append((_kind_of(importlib.import_module(where), where), where))
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        where = f"{ep.name} = {ep.value} (entry point {ENTRY_POINT_GROUP})"
        try:
            obj = ep.load()
        except Exception as e:  # a broken plug-in: one line, not a traceback
            raise ConfigError(f"target plug-in {where}: {type(e).__name__}: {e}") from None
        found.append((_kind_of(obj, where), where))
    out: dict[str, TargetKind] = {}
    origin: dict[str, str] = {}
    for kind, where in found:
        if kind.name in out:
            raise ConfigError(
                f"target kind {kind.name!r} defined twice: {origin[kind.name]} and {where}"
            )
        out[kind.name], origin[kind.name] = kind, where
    _check_options(out.values())
    return out


def _check_options(kinds: Iterable[TargetKind]) -> None:
    seen: dict[str, Option] = {}
    for k in kinds:
        for opt in k.options:
            if seen.setdefault(opt.flag, opt) != opt:
                raise ConfigError(
                    f"target option {opt.flag} declared two ways "
                    f"(kind {k.name!r}); share one Option object"
                )


def kinds() -> dict[str, TargetKind]:
    """Every kind by name, in a stable order (discovered once per process)."""
    global _KINDS
    if _KINDS is None:
        _KINDS = _discover()
    return _KINDS


def names(where: Callable[[TargetKind], bool] | None = None) -> list[str]:
    return [n for n, k in kinds().items() if where is None or where(k)]


def get(name: str) -> TargetKind:
    try:
        return kinds()[name]
    except KeyError:
        raise ConfigError(f"--target {name}: one of {', '.join(names())}") from None


def resolve(cfg: TargetConfig) -> TargetKind:
    """The kind serving `cfg`; `cfg.kind` is set to its name."""
    kind = get(cfg.kind).resolve(cfg)
    cfg.kind = kind.name
    return kind


def switch_kind(name: str) -> TargetKind:
    """The kind that runs `name` as a switch process (a lab's switch)."""
    sk = get(name).switch_kind
    if sk is None:
        raise ConfigError(
            f"--target {name} cannot be started as a switch process here; one of "
            f"{', '.join(names(lambda k: k.switch_kind is not None))}"
        )
    return get(sk)


def check(cfg: TargetConfig, explicit: Iterable[str] = (), context: str = "cli") -> TargetKind:
    """Resolve and check `cfg`. `explicit`: dests of kind options the user set; one the
    chosen kind does not read is an error naming the kinds that do."""
    kind = resolve(cfg)
    mine = {o.dest for o in kind.options}
    for dest in explicit:
        if dest not in mine:
            opt = all_options()[dest]
            users = names(lambda k, d=dest: any(o.dest == d for o in k.options))
            raise ConfigError(f"{opt.flag} only applies to --target {', '.join(users)}")
    kind.check(cfg, context)
    return kind


# ---------------------------------------------------------------- options


def int_in(lo: int, hi: int, what: str) -> Callable[[str], int]:
    """argparse type: an integer in lo..hi (p4sim.cliargs.int_range: length-bounded, one line)."""
    return cliargs.int_range(lo, hi, what)


def positive_float(what: str, hi: float = 1e9) -> Callable[[str], float]:
    """argparse type: a finite number in (0, hi] (nan, inf and 5000 digits refused)."""
    return cliargs.float_range(0, hi, what, lo_open=True)


def all_options() -> dict[str, Option]:
    """Every kind's options by dest, each once."""
    out: dict[str, Option] = {}
    for k in kinds().values():
        for opt in k.options:
            out.setdefault(opt.dest, opt)
    return out


def choices_help() -> str:
    return "; ".join(f"{n}: {k.help}" for n, k in kinds().items())


def add_options(add: Callable[..., Any], context: str) -> None:
    """Add every kind's options offered in `context` ("cli" or "pytest") through `add`
    (an argparse group's `add_argument`, or pytest's `group.addoption`)."""
    for opt in all_options().values():
        if getattr(opt, context):
            add(opt.flag, **opt.kwargs(context))


def option_values(
    get_value: Callable[[str], Any], context: str
) -> tuple[dict[str, Any], list[str]]:
    """(values by dest, dests set away from their default) of the kind options offered in
    `context`; `get_value(dest)` reads one parsed value."""
    values: dict[str, Any] = {}
    explicit: list[str] = []
    for dest, opt in all_options().items():
        if not getattr(opt, context):
            continue
        values[dest] = get_value(dest)
        default = opt.env_default() if context == "pytest" else opt.default
        if opt.type is not None and isinstance(default, str) and opt.action is None:
            try:
                default = opt.type(default)
            except (ValueError, argparse.ArgumentTypeError):
                pass
        if values[dest] != default:
            explicit.append(dest)
    return values, explicit


def validate(cfg: TargetConfig, context: str = "pytest") -> None:
    """ConfigError unless `cfg`'s kind exists and accepts it (by default for the test
    suite, the strictest: see TargetKind.check). Every kind option in `cfg.options` away
    from its default counts as given."""
    known = all_options()
    check(cfg, [d for d, v in cfg.options.items() if d in known and v != known[d].default], context)


def from_p4(path: str | os.PathLike[str] = DEFAULT_PROGRAM, kind: str = DEFAULT_KIND) -> Program:
    """P4 source as a Program (P4Info + device config), compiled by `kind` (by default the
    embedded switch's compiler, whose device config is the source bundle)."""
    src = Path(path)
    if not src.is_file():
        raise FileNotFoundError(f"P4 program {src} not found")
    return get(kind).compile_p4(src)


def open_config(cfg: TargetConfig, program: Program | None = None) -> Target:
    """Resolve, check and open `cfg` (a target already running, or in this process)."""
    kind = check(cfg)
    return kind.open(cfg, program if program is not None else kind.program(cfg))


__all__ = [
    "ENTRY_POINT_GROUP",
    "Option",
    "TargetKind",
    "add_options",
    "all_options",
    "check",
    "choices_help",
    "from_p4",
    "get",
    "int_in",
    "kinds",
    "names",
    "open_config",
    "option_values",
    "positive_float",
    "resolve",
    "switch_kind",
    "validate",
]
