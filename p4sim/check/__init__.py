"""Name resolution and typing of P4 programs (see names.py, types.py).

The checker's work is done as the code generator walks each declaration
(`p4sim.lower.codegen`): every name is resolved through `names.Scope`, every expression
gets a `types.Type` (stored in its `checked_type`), constants are folded, and any error
is a `P4TypeError` / `P4Unsupported` carrying file:line:column. `types.check_type_args`
holds p4c's rule for specialised extern types; `controlplane.py` the control-plane field
ids p4c derives from declarations.
"""

from .names import Scope, Sym
from .types import P4TypeError

__all__ = ["P4TypeError", "Scope", "Sym"]
