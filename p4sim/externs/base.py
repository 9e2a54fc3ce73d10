"""The shape of one extern module: the hooks every stage of p4sim calls through the registry.

Stages and their hooks (each has a default, so a module implements only what it has):
- lowering (`p4sim.lower.codegen.Compiler`, passed as `cc`): `instantiate`, `method`,
  `call`, `bind_table`; they emit Python through `fn.emit` and return lowered values `V`;
- runtime (`p4sim.runtime`): `build` makes the per-switch object from the `ExternSpec`,
  `attach` exposes it through the switch's API, `namespace` adds globals for generated code;
- per packet (`p4sim.runtime.switch.Switch`): `setup` adds the extern's per-switch state,
  `runtime_methods` the `_RT.<name>` functions its generated code calls, `reset` clears its
  per-pass state, and the stage hooks `after_ingress`, `after_egress`, `after_deparse` act
  on what the pass asked for (a clone, a resubmission...), in simple_switch's order;
- operations: `api` (SwitchAPI methods, e.g. `counter_read`) and `stf_commands` (STF lines);
- control plane: `objects` (its entries in `ProgramModel`), `p4info`, `read`/`write`
  (P4Runtime entities it serves), `cells` (what the sandbox bounds), `describe` (`p4sim info`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from p4sim.frontend.errors import bug  # lowering's internal error (no import of lowering)

if TYPE_CHECKING:
    from p4sim.frontend import ast
    from p4sim.model import Annotated, ProgramModel
    from p4sim.spec import ExternSpec


class Extern:
    name: ClassVar[str] = ""  # extern object type as v1model.p4/core.p4 declare it ("" if none)
    functions: ClassVar[tuple[str, ...]] = ()  # extern functions this module lowers
    model_field: ClassVar[str] = ""  # ProgramModel dict of its control-plane objects
    p4info_prefix: ClassVar[str] = ""  # P4Ids.Prefix name of its P4Info ids (COUNTER, ...)
    # does an instance make p4c write `type_info` (p4info.py `_touches_type_info`)?
    touches_type_info: ClassVar[bool] = True
    entities: ClassVar[tuple[str, ...]] = ()  # P4Runtime Entity oneofs it reads and writes
    table_property: ClassVar[str] = ""  # table property naming an instance (direct resources)

    # ------------------------------------------------------------------ checking

    # `p4sim.check` (passed as `ck`) has typed the use against the extern's declaration
    # (arch/v1model.p4) before these run: they add p4sim's own rules for this extern and
    # raise P4TypeError / P4Unsupported at file:line:column. Lowering then finds no error.

    def check_instance(self, ck: Any, d: ast.Instantiation, t: Any, scope: Any) -> None:
        """Rules for `t(args) d;` beyond the declared constructor."""

    def check_call(
        self, ck: Any, name: str, argv: list, c: ast.MethodCall, scope: Any, ctx: Any
    ) -> None:
        """Rules for a call of extern function `name` beyond its declared signature."""

    def check_method(
        self, ck: Any, t: Any, m: str, argv: list, c: ast.MethodCall, scope: Any, ctx: Any
    ) -> None:
        """Rules for a call of method `m` beyond its declared signature."""

    # ------------------------------------------------------------------ lowering

    def instantiate(
        self, cc: Any, d: ast.Instantiation, t: Any, scope: Any, name: str
    ) -> ExternSpec | None:
        """Lower `t(args) d;` (control-plane name `name`): record it in `cc.model` and
        return the spec the runtime builds its object from (None: no runtime object)."""
        raise bug(f"extern {t.name} has no lowering", d)

    # check (ExternChecker) refuses by name an instance, method or function whose module
    # does not override its lowering hook, so these defaults are never reached

    def method(
        self, cc: Any, obj: Any, t: Any, m: str, argv: list, c: ast.MethodCall, scope: Any, fn: Any
    ) -> Any:
        raise bug(f"method {m} of extern {t.name} has no lowering", c)

    def call(self, cc: Any, name: str, argv: list, c: ast.MethodCall, scope: Any, fn: Any) -> Any:
        raise bug(f"extern function {name} has no lowering", c)

    def bind_table(self, cc: Any, instance: str, table: str) -> None:
        """The instance named `instance` is a table property of `table` (direct resources)."""
        raise bug(f"{self.name} is not a table property (check allows only those)", None)

    # ------------------------------------------------------------------ runtime

    def build(self, spec: ExternSpec) -> object:
        """A fresh runtime object for one switch."""
        return spec

    def attach(self, sw: Any, spec: ExternSpec, obj: object) -> None:
        """Expose `obj` through the switch's API (its counters, registers... dicts)."""

    def namespace(self) -> dict[str, object]:
        """Globals the generated code of this extern refers to."""
        return {}

    # ------------------------------------------------------------------ per packet

    # The switch (`sw`, also the generated code's `_RT`) resolves these once, when it is
    # built: the stage hooks of an extern the program's code never calls are not run at all.
    # A hook runs only after a pass in which some extern asked for something (`request`).
    # Hooks of one stage run in increasing `*_order`; the values below follow
    # simple_switch (targets/simple_switch/simple_switch.cpp, ingress_thread/egress_thread).
    after_ingress_order: ClassVar[int] = 50
    after_egress_order: ClassVar[int] = 50
    after_deparse_order: ClassVar[int] = 50

    # exceptions the extern's generated code raises to stop the packet: the switch logs the
    # message and counts a drop (in the parser: as a runtime error)
    stops: ClassVar[tuple[type[BaseException], ...]] = ()

    def setup(self, sw: Any, program: Any, ns: dict) -> None:
        """Add this extern's per-switch state to `sw` (once per switch, every extern, before
        any packet; `ns` is the program's namespace of runtime objects)."""

    def runtime_methods(self) -> dict[str, Callable[..., Any]]:
        """`_RT.<name>` functions the generated code calls: `f(sw, *args)`, bound to each switch."""
        return {}

    def reset(self, sw: Any) -> None:
        """Clear this extern's per-pass state (called before a pass that follows one in
        which something was asked for)."""

    def after_ingress(
        self, sw: Any, port: int, frame: bytes, hdr: Any, meta: Any, sm: Any, passes: int
    ) -> bool:
        """After the ingress control; True: the packet is consumed (goes no further)."""
        return False

    def after_egress(self, sw: Any, pkt: Any, hdr: Any, meta: Any, sm: Any) -> bool:
        """After the egress control, before the drop check and the deparser."""
        return False

    def after_deparse(self, sw: Any, pkt: Any, data: bytes, meta: Any) -> bool:
        """After the deparser (`data`: the outgoing bytes, already cut); True: consumed."""
        return False

    def api(self) -> dict[str, Callable[..., Any]]:
        """SwitchAPI operations this extern provides: name -> `f(sw, *args)`, bound to each switch."""
        return {}

    def stf_commands(self) -> dict[str, Callable[..., Any]]:
        """STF commands (p4c's STF / simple_switch_CLI names): op -> `f(runner, cmd)`."""
        return {}

    # ------------------------------------------------------------------ control plane

    def objects(self, model: ProgramModel) -> dict[str, Annotated]:
        """Its control-plane objects in `model`, by name."""
        if not self.model_field:
            return {}
        if hasattr(model, self.model_field):
            return getattr(model, self.model_field)
        return model.externs.setdefault(self.model_field, {})

    def p4info(self, out: Any, info: Any, pre: Any, ids: Any) -> None:
        """Add `info` to P4Info message `out`. `pre(msg, prefix, info)` fills a preamble;
        `ids(prefix, name)` is the id of another object. By default an architecture
        extern instance (P4Info `externs`, as p4c lists externs it has no field for)."""
        from p4rtproto import p4info_pb2

        ext = next((e for e in out.externs if e.extern_type_name == self.name), None)
        if ext is None:
            ext = out.externs.add()
            ext.extern_type_name = self.name
            ext.extern_type_id = p4info_pb2.P4Ids.Prefix.Value(self.p4info_prefix)
        pre(ext.instances.add(), self.p4info_prefix, info)

    def write(self, svc: Any, p: Any, utype: int, entity: str, msg: Any) -> None:
        from p4rtproto.errors import RequestError

        raise RequestError("UNIMPLEMENTED", f"p4sim does not support writing {entity}")

    def read(self, svc: Any, p: Any, entity: str, req: Any) -> Any:
        from p4rtproto.errors import RequestError

        raise RequestError("UNIMPLEMENTED", f"p4sim does not support reading {entity}")

    def cells(self, info: Any) -> int:
        """Cells the declaration makes the switch allocate (bounded by the sandbox)."""
        return 0

    def describe(self, info: Any) -> str:
        """One line for `p4sim info`."""
        table = getattr(info, "table", None)
        return f"{self.name} {info.name}" + (
            f" table {table}" if table else f" size {getattr(info, 'size', 0)}"
        )


class RefusedExtern(Extern):
    """A v1model extern p4sim does not implement: refused by name where it is used."""

    reason: ClassVar[str] = ""  # check refuses it with this reason; it has no lowering


def lowers(ext: Extern, hook: str) -> bool:
    """Whether the module of `ext` lowers `hook` ('instantiate', 'method' or 'call')."""
    return not isinstance(ext, RefusedExtern) and getattr(type(ext), hook) is not getattr(
        Extern, hook
    )
