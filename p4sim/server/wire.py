"""Requests off the wire and errors back onto it: protobuf parsing that answers
INVALID_ARGUMENT (not gRPC's INTERNAL) for bytes protobuf refuses, and the mapping of our
errors to gRPC status codes (p4rtproto.errors)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import grpc
from google.protobuf.message import DecodeError

from p4rtproto import errors
from p4rtproto.errors import RequestError
from p4sim.model import P4SimError

log = logging.getLogger("p4sim.server")


class _Malformed:
    """A request whose bytes did not parse. gRPC alone answers INTERNAL ("Exception
    deserializing request!") before any handler runs; P4Runtime wants INVALID_ARGUMENT."""

    def __init__(self, kind: str, exc: Exception) -> None:
        self.message = f"malformed {kind}: {exc}"


def _lenient(cls: Any) -> Callable[[bytes], Any]:
    def parse(data: bytes) -> Any:
        try:
            return cls.FromString(data)
        except (DecodeError, ValueError) as exc:  # ValueError: bad UTF-8 in a string field
            return _Malformed(cls.__name__, exc)

    return parse


class _Raw:
    """A parsed request with its bytes (Write: the fast path decodes from the bytes).
    `plan`: a WriteRequest whose updates were all cut by shape (`WriteScanner.plan`):
    (items, number of updates); `msg` then holds the other fields only."""

    __slots__ = ("msg", "data", "plan")

    def __init__(self, msg: Any, data: bytes, plan: tuple | None = None) -> None:
        self.msg, self.data, self.plan = msg, data, plan


def _lenient_raw(cls: Any, planner: Callable[[bytes], Any] | None = None) -> Callable[[bytes], Any]:
    """The request parsed, with its bytes. With `planner` (Write's fast path), a request
    whose updates all have a learned shape is not parsed whole: only its other fields are
    (a few bytes), the updates are cut from the bytes (`WriteScanner.plan`); anything
    else, malformed requests included, is parsed whole, so its answer is the reference's."""
    parse = _lenient(cls)

    def keep(data: bytes) -> Any:
        if planner is not None:
            planned = planner(data)
            if planned is not None:
                items, n, top = planned
                try:
                    return _Raw(cls.FromString(top), data, (items, n))
                except (DecodeError, ValueError):
                    pass  # parsed whole below: the reference's error
        msg = parse(data)
        return msg if isinstance(msg, _Malformed) else _Raw(msg, data)

    return keep


def _reject_malformed(fn: Any, streaming: bool = False) -> Any:
    """Wrap an RPC handler so that a _Malformed request gets INVALID_ARGUMENT."""
    if streaming:

        def stream(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            if isinstance(request, _Malformed):
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, request.message)
            yield from fn(request, context)

        return stream

    def unary(request: Any, context: grpc.ServicerContext) -> Any:
        if isinstance(request, _Malformed):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, request.message)
        return fn(request, context)

    return unary


_status_code = errors.grpc_code


_rpc_code = errors.rpc_code


def _error_of(exc: BaseException) -> RequestError:
    """Any exception as a RequestError (p4sim's own errors keep their code)."""
    if isinstance(exc, RequestError):
        return exc
    if isinstance(exc, P4SimError):
        return RequestError(exc.code, str(exc))
    log.exception("internal error")
    return RequestError("INTERNAL", f"p4sim internal error: {type(exc).__name__}: {exc}")
