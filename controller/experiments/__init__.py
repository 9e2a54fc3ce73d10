"""`rocelab experiment`: the RoCE primer's claims, one runnable experiment each."""

from . import memory, loss, versions, families, entropy, lossless, capture  # noqa: F401, I001  (registers, in the order they are listed)
from .base import REGISTRY, Experiment, Result, summary_text, write_outputs

__all__ = ["REGISTRY", "Experiment", "Result", "summary_text", "write_outputs"]
