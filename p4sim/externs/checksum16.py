"""v1model `Checksum16` (deprecated): p4c's v1model.p4 still declares it and p4c's front end
accepts it, but p4c's BMv2 back end has no converter for it (backends/bmv2/simple_switch/
simpleSwitch.h lists EXTERN_CONVERTERs for clone, hash, digest, ..., action_profile and
action_selector; none for Checksum16), so no program using it runs on simple_switch and
BMv2 gives it no semantics to follow. p4sim refuses it by name, at the file:line:column of
the instantiation; verify_checksum/update_checksum compute what it would."""

from __future__ import annotations

from . import extern
from .base import RefusedExtern


@extern
class Checksum16(RefusedExtern):
    name = "Checksum16"
    reason = (
        "deprecated, and p4c's BMv2 back end does not compile it: use"
        " verify_checksum/update_checksum"
    )
