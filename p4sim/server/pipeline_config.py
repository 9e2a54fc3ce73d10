"""The pipeline config RPCs: SetForwardingPipelineConfig (VERIFY, VERIFY_AND_SAVE, COMMIT,
VERIFY_AND_COMMIT, RECONCILE_AND_COMMIT; the program compiled outside the lock, one push at a
time) and GetForwardingPipelineConfig."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

from p4rtproto import p4runtime_pb2
from p4rtproto.codec import replicas as _replicas
from p4rtproto.errors import RequestError, invalid
from p4sim.model import P4SimError, TableEntry
from p4sim.p4info import p4info_from_model
from p4sim.server.pipeline import Pipeline, compile_device_config, make_pipeline
from p4sim.server.wire import _error_of

_SFP = p4runtime_pb2.SetForwardingPipelineConfigRequest
_GFP = p4runtime_pb2.GetForwardingPipelineConfigRequest


class PipelineConfigService:
    """The pipeline config RPCs of P4RuntimeServer (its state lives in the server)."""

    def SetForwardingPipelineConfig(self, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            self._set_pipeline(request, lambda: self._stop.is_set() or not context.is_active())
        except Exception as exc:
            self._abort(context, _error_of(exc))
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def _set_pipeline(self, request: Any, cancelled: Callable[[], bool] = lambda: False) -> None:
        with self._lock:
            self._check_device(request.device_id)
            self._check_primary(request)
            action = request.action
        if action == _SFP.UNSPECIFIED:
            raise invalid("SetForwardingPipelineConfig: action is UNSPECIFIED")
        if action == _SFP.COMMIT:
            with self._lock:
                if self._saved is None:
                    raise RequestError(
                        "FAILED_PRECONDITION", "COMMIT without a config saved by VERIFY_AND_SAVE"
                    )
                saved, self._saved = self._saved, None
                self._install(saved)
            return
        if action not in (
            _SFP.VERIFY,
            _SFP.VERIFY_AND_SAVE,
            _SFP.VERIFY_AND_COMMIT,
            _SFP.RECONCILE_AND_COMMIT,
        ):
            raise invalid(f"SetForwardingPipelineConfig: unknown action {action}")
        if not request.HasField("config"):
            raise invalid("SetForwardingPipelineConfig: config is missing")
        cfg = request.config
        # compile outside the lock: packets keep flowing through the old pipeline meanwhile
        if not self._compiles.acquire(blocking=False):
            raise RequestError(
                "RESOURCE_EXHAUSTED", "another SetForwardingPipelineConfig is compiling"
            )
        try:
            same = self._installed_same(action, bytes(cfg.p4_device_config))
            if same is not None:
                # the program already running, pushed again (to start from a clean state, as
                # STF runs and test fixtures do): a fresh switch of the same compiled program,
                # without compiling it twice more (it holds no state; the switch does)
                compiled, workdir = same.compiled, same.workdir
                our_p4info = p4info_from_model(compiled.model)
            else:
                compiled, our_p4info, workdir = compile_device_config(
                    cfg.p4_device_config, self.limits, cancelled
                )
        finally:
            self._compiles.release()
        cookie = cfg.cookie.cookie if cfg.HasField("cookie") else None
        try:
            pipeline = make_pipeline(
                compiled,
                our_p4info,
                cfg.p4info,
                bytes(cfg.p4_device_config),
                cookie,
                self._switch_factory,
                workdir,
            )
        except BaseException:
            if same is None:  # the installed pipeline's files stay its own
                workdir.cleanup()
            raise
        if action == _SFP.VERIFY:
            workdir.cleanup()
            return
        with self._lock:
            if action == _SFP.VERIFY_AND_SAVE:
                if self._saved is not None and self._saved.workdir is not None:
                    self._saved.workdir.cleanup()
                self._saved = pipeline
                return
            if action == _SFP.RECONCILE_AND_COMMIT and self.pipeline is not None:
                self._reconcile(self.pipeline, pipeline)
            self._saved = None
            if same is not None and self.pipeline is same:
                same.workdir = None  # the new pipeline owns the compiled program's files now
            elif same is not None:  # replaced meanwhile: compile after all
                raise RequestError("ABORTED", "the pipeline changed during this push; push again")
            self._install(pipeline)

    def _installed_same(self, action: Any, device_config: bytes) -> Pipeline | None:
        """The installed pipeline when a commit pushes exactly its device config again."""
        if action not in (_SFP.VERIFY_AND_COMMIT, _SFP.RECONCILE_AND_COMMIT):
            return None
        with self._lock:
            p = self.pipeline
        return p if p is not None and p.device_config == device_config else None

    def _reconcile(self, old: Pipeline, new: Pipeline) -> None:
        """Carry the forwarding state into the new pipeline; refuse if it does not fit."""
        sw_old, sw_new = old.switch, new.switch
        try:
            for tname in old.maps.table_ids:
                if tname not in new.maps.table_ids:
                    if sw_old.table_entries(tname):
                        raise invalid(
                            f"RECONCILE_AND_COMMIT: table {tname} has entries but is not in the new program"
                        )
                    continue
                if old.compiled.model.tables[tname].const_entries:
                    continue
                for e in sw_old.table_entries(tname):
                    sw_new.table_add(
                        TableEntry(e.table, dict(e.match), e.action, dict(e.params), e.priority)
                    )
                action, params = sw_old.table_default(tname)
                if action and not new.compiled.model.tables[tname].const_default_action:
                    sw_new.table_set_default(tname, action, params)
            for gid, g in old.mc_groups.items():
                sw_new.mc_group_set(gid, _replicas(g))
            for sid, s in old.clone_sessions.items():
                sw_new.clone_session_set(sid, _replicas(s), s.packet_length_bytes)
        except P4SimError as exc:
            raise invalid(
                f"RECONCILE_AND_COMMIT: the forwarding state does not fit the new program: {exc}"
            ) from None
        new.entry_metadata.update(old.entry_metadata)
        new.mc_groups.update(old.mc_groups)
        new.clone_sessions.update(old.clone_sessions)
        new.digest_configs.update(
            {k: v for k, v in old.digest_configs.items() if k in new.maps.digests}
        )

    def GetForwardingPipelineConfig(self, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            with self._lock:
                self._check_device(request.device_id)
                p = self._need_pipeline()
                cfg = p4runtime_pb2.ForwardingPipelineConfig()
                rt = request.response_type
                if rt in (_GFP.ALL, _GFP.P4INFO_AND_COOKIE):
                    cfg.p4info.CopyFrom(p.p4info)
                if rt in (_GFP.ALL, _GFP.DEVICE_CONFIG_AND_COOKIE):
                    cfg.p4_device_config = p.device_config
                if p.cookie is not None:
                    cfg.cookie.cookie = p.cookie
                return p4runtime_pb2.GetForwardingPipelineConfigResponse(config=cfg)
        except Exception as exc:
            self._abort(context, _error_of(exc))
