"""v1model `Checksum16` (deprecated): p4sim refuses it by name, at the file:line:column of
the instantiation; verify_checksum/update_checksum cover what it computed."""

from __future__ import annotations

from . import extern
from .base import RefusedExtern


@extern
class Checksum16(RefusedExtern):
    name = "Checksum16"
    reason = "the deprecated v1model checksum object; use verify_checksum/update_checksum"
