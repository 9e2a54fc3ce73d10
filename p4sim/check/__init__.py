"""Name resolution and typing of P4 programs: the pass between the front end and lowering.

`check(program)` (program.py) resolves every name, types every expression, folds
constants and checks declarations, statements, calls, tables, parsers, controls and the
V1Switch package; every error is a `P4TypeError` / `P4Unsupported` with file:line:column.
Lowering (`p4sim.lower`) reads the `CheckedProgram` and only translates it.

    decls.py   top-level declarations, types (resolve_type), constants
    exprs.py   expression typing and constant folding
    stmts.py   statements and assignment targets
    calls.py   calls: actions/functions, applies, header/stack methods, externs, switch
    blocks.py  the package, parsers, controls, instances, tables
    names.py   scopes and symbols;  types.py  the type representation
    controlplane.py  the control-plane field ids p4c derives from declarations
"""

from .names import Scope, Sym
from .program import CheckedProgram, Checker, check
from .types import P4TypeError

__all__ = ["CheckedProgram", "Checker", "P4TypeError", "Scope", "Sym", "check"]
