"""v1model `action_profile` and `action_selector`: p4sim refuses them by name, at the
file:line:column of the instantiation (tables with an `implementation` are refused too)."""

from __future__ import annotations

from . import extern
from .base import RefusedExtern


@extern
class ActionProfile(RefusedExtern):
    name = "action_profile"
    reason = "tables with action profiles/selectors"


@extern
class ActionSelector(RefusedExtern):
    name = "action_selector"
    reason = "tables with action profiles/selectors"
