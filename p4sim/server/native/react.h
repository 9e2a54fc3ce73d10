// Python called from a gRPC thread: Call.react(fn), each request handled by fn in the gRPC
// thread whose read completed (the GIL taken there, one Python thread state per gRPC thread).
// Part of p4sim's native front end: one translation unit, frontend.cc, includes its parts in
// order (each uses what the parts before it define).

#pragma once

#include "call.h"
#include "state.h"
#include "transport.h"

namespace {

// With the GIL held: fn(request) appended to outs (copied). False when fn failed (its
// exception printed): the call is then ended INTERNAL.
bool react_call(PyObject* fn, PyObject* req, std::vector<grpc::Slice>& outs) {
  PyObject* r = PyObject_CallOneArg(fn, req);
  if (r == nullptr) {
    PyErr_Print();
    return false;
  }
  bool ok = true;
  if (r != Py_None) {
    PyObject* seq = PySequence_Fast(r, "a reaction returns a list of bytes");
    if (seq == nullptr) {
      ok = false;
    } else {
      for (Py_ssize_t i = 0; ok && i < PySequence_Fast_GET_SIZE(seq); i++) {
        char* data;
        Py_ssize_t len;
        if (PyBytes_AsStringAndSize(PySequence_Fast_GET_ITEM(seq, i), &data, &len) != 0) ok = false;
        else outs.emplace_back(data, static_cast<size_t>(len));
      }
      Py_DECREF(seq);
    }
    if (!ok) PyErr_Print();
  }
  Py_DECREF(r);
  return ok;
}

// A gRPC thread's reaction to one request: takes the GIL, calls the call's react_fn (if it
// is still set once the GIL is held), gives the GIL back. Never called with a lock held.
PyInterpreterState* g_interp = nullptr;

// one Python thread state per gRPC thread, made once (PyGILState_Ensure makes and frees one
// per call when the thread has none)
PyThreadState* grpc_tstate() {
  thread_local PyThreadState* ts = nullptr;
  if (ts == nullptr) ts = PyThreadState_New(g_interp);
  return ts;
}

bool react_one(CallState& st, const std::string& msg, std::vector<grpc::Slice>& outs) {
  // a thread that takes the GIL during finalization never returns (PyEval_RestoreThread)
#if PY_VERSION_HEX >= 0x030D0000
  if (Py_IsFinalizing()) return false;
#else
  if (_Py_IsFinalizing()) return false;
#endif
  PyEval_RestoreThread(grpc_tstate());
  PyObject* fn;
  {
    std::lock_guard<std::mutex> l(st.mu);
    fn = st.react_fn;
  }
  bool ok = true;
  if (fn != nullptr) {
    Py_INCREF(fn);
    PyObject* req = PyBytes_FromStringAndSize(msg.data(), static_cast<Py_ssize_t>(msg.size()));
    ok = req != nullptr && react_call(fn, req, outs);
    if (req == nullptr) PyErr_Print();
    Py_XDECREF(req);
    Py_DECREF(fn);
  }
  PyEval_SaveThread();
  return ok;
}

// react(fn): from now on each request is handled by fn(bytes) -> [response bytes] in the
// gRPC thread that read it (GIL taken there); requests already read are handled here first.
// take() then returns only objects posted and the end (None). react(None) lets fn go (a
// reaction running keeps its own reference): fn usually refers to the Call itself, a cycle
// through C++ that Python's collector cannot see. Reads then wait in `in` again.
PyObject* call_react(PyObject* self, PyObject* fn) {
  if (fn == Py_None) {
    CallState& st = state_of(self);
    PyObject* old;
    {
      std::lock_guard<std::mutex> g(st.mu);
      old = st.react_fn;
      st.react_fn = nullptr;
    }
    Py_XDECREF(old);
    Py_RETURN_NONE;
  }
  if (!PyCallable_Check(fn)) {
    PyErr_SetString(PyExc_TypeError, "react() takes a callable");
    return nullptr;
  }
  CallState& st = state_of(self);
  std::deque<std::string> pending;
  bool restart = false;
  {
    std::lock_guard<std::mutex> g(st.mu);
    if (st.react_fn != nullptr) {
      PyErr_SetString(PyExc_RuntimeError, "react() already called");
      return nullptr;
    }
    Py_INCREF(fn);
    st.react_fn = fn;
    st.reacting = true;  // reads completing meanwhile queue in `in`, behind these
    pending.swap(st.in);
    st.in_bytes = 0;
  }
  std::vector<grpc::Slice> outs;
  bool ok = true;
  for (;;) {
    for (const std::string& m : pending) {
      PyObject* req = PyBytes_FromStringAndSize(m.data(), static_cast<Py_ssize_t>(m.size()));
      ok = req != nullptr && react_call(fn, req, outs);
      if (req == nullptr) PyErr_Print();
      Py_XDECREF(req);
      if (!ok) break;
    }
    pending.clear();
    std::lock_guard<std::mutex> g(st.mu);
    if (ok && !st.in.empty()) {  // read while these were handled (the GIL may change hands)
      pending.swap(st.in);
      st.in_bytes = 0;
      continue;
    }
    // from here on the reads react; the read-ahead stopped (full): this thread restarts it
    st.reacting = false;
    if (!st.reading && !st.read_closed && !st.finished && st.reactor != nullptr) {
      st.starting++;
      restart = true;
    }
    break;
  }
  Py_BEGIN_ALLOW_THREADS;
  deliver(st, outs, !ok, restart, false);
  Py_END_ALLOW_THREADS;
  Py_RETURN_NONE;
}

}  // namespace
