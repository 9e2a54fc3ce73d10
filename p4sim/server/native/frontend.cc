// p4sim's native gRPC front end: a grpc++ callback server with one generic service
// (bytes in, bytes out; no protobuf here). gRPC's own threads do all network work and
// never take the GIL; Python worker threads take calls with accept(), and read(),
// write() and finish() them, waiting with the GIL released. The Python adapter
// (p4sim/server/native/__init__.py) runs the same servicer as the grpc-python server.
// One opt-in exception, Call.react(fn): the gRPC thread whose read completed takes the GIL
// (one Python thread state per gRPC thread, kept), calls fn, gives the GIL back and only
// then starts the write and the next read: no gRPC call is ever made with the GIL held, and
// no lock is held while the GIL is awaited. p4sim's StreamChannel uses it on this front end
// (P4RuntimeServer._stream_react): the reaction puts the stream's answers straight into the
// call's write queue (Call.push, from any thread, bounded per kind by the caller's limits),
// and the call's own thread only starts writes pushed outside a reaction (in take()) and
// handles what is posted to it (the stream's end). No reaction starts once the interpreter
// is finalizing (the call ends INTERNAL instead).
//
// Lifetime: a Reactor (owned by gRPC until OnDone) and the Python Call object share one
// CallState. A Start* call is never made while the state's mutex is held (gRPC may run
// the reaction inline, in the calling thread), and Finish is made only when no write
// and no Start* is in progress (`starting`), so no operation is ever started on a call
// that has finished (its reactor may be gone).
//
// The module is one translation unit (build.py compiles this file; its hash covers every
// .cc and .h file of this folder), cut into parts by responsibility and included in order:
//   state.h      CallState (one call, shared by its reactor and its Python Call) and Core
//   transport.h  grpc++: the call's reactor, the C++ echo, admission, restart_read, deliver
//   call.h       Python: the Call object (read, write, take, push, finish, ...)
//   react.h      Python called from gRPC's threads: Call.react and the read's reaction
//   server.h     Python: the Server object and the module definition

#include "state.h"
#include "transport.h"
#include "call.h"
#include "react.h"
#include "server.h"

PyMODINIT_FUNC PyInit_p4sim_native_frontend(void) {
  CallType.tp_name = "p4sim_native_frontend.Call";
  CallType.tp_basicsize = sizeof(CallObject);
  CallType.tp_flags = Py_TPFLAGS_DEFAULT;
  CallType.tp_dealloc = call_dealloc;
  CallType.tp_methods = call_methods;
  CallType.tp_getset = call_getset;
  ServerType.tp_name = "p4sim_native_frontend.Server";
  ServerType.tp_basicsize = sizeof(ServerObject);
  ServerType.tp_flags = Py_TPFLAGS_DEFAULT;
  ServerType.tp_new = server_new;
  ServerType.tp_init = server_init;
  ServerType.tp_dealloc = server_dealloc;
  ServerType.tp_methods = server_methods;
  ServerType.tp_getset = server_getset;
  if (PyType_Ready(&CallType) < 0 || PyType_Ready(&ServerType) < 0) return nullptr;
  g_interp = PyInterpreterState_Get();
  // Debian builds abseil with its debug-mode lock-order graph on: gRPC's every absl::Mutex
  // Lock/Unlock then updates it (GraphCycles::GetId in profiles). Tracking off: the locks
  // behave the same, only the debugging aid is gone.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  PyObject* m = PyModule_Create(&module_def);
  if (m == nullptr) return nullptr;
  Py_INCREF(&CallType);
  Py_INCREF(&ServerType);
  PyModule_AddObject(m, "Call", reinterpret_cast<PyObject*>(&CallType));
  PyModule_AddObject(m, "Server", reinterpret_cast<PyObject*>(&ServerType));
  PyModule_AddIntConstant(m, "READ_AHEAD", static_cast<long>(kReadAhead));
  PyModule_AddIntConstant(m, "WRITE_WINDOW", static_cast<long>(kWriteWindow));
  PyModule_AddIntConstant(m, "READ_AHEAD_BYTES", static_cast<long>(kReadAheadBytes));
  return m;
}
