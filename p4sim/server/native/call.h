// Python: the Call object, one call as its Python handler sees it (read, write, write_many,
// post, take, push, count, finish, is_active, wait_done, and its method/peer/metadata).
// Part of p4sim's native front end: one translation unit, frontend.cc, includes its parts in
// order (each uses what the parts before it define).

#pragma once

#include "state.h"
#include "transport.h"

namespace {

// ------------------------------------------------------------------ Python: Call

struct CallObject {
  PyObject_HEAD
  std::shared_ptr<CallState>* st;
};

PyTypeObject CallType = {PyVarObject_HEAD_INIT(nullptr, 0)};

PyObject* wrap_call(std::shared_ptr<CallState> st) {
  CallObject* o = PyObject_New(CallObject, &CallType);
  if (o == nullptr) return nullptr;
  o->st = new std::shared_ptr<CallState>(std::move(st));
  return reinterpret_cast<PyObject*>(o);
}

void call_dealloc(PyObject* self) {
  std::shared_ptr<CallState>* sp = reinterpret_cast<CallObject*>(self)->st;
  std::deque<PyObject*> left;
  {
    std::lock_guard<std::mutex> g((*sp)->mu);
    left.swap((*sp)->posted);
    (*sp)->py_gone = true;
    if ((*sp)->react_fn != nullptr) left.push_back((*sp)->react_fn);
    (*sp)->react_fn = nullptr;
  }
  for (PyObject* o : left) Py_DECREF(o);
  delete sp;
  PyObject_Free(self);
}

CallState& state_of(PyObject* self) { return **reinterpret_cast<CallObject*>(self)->st; }

// read() -> bytes, or None when the client has half-closed or the call is over
PyObject* call_read(PyObject* self, PyObject*) {
  CallState& st = state_of(self);
  std::string msg;
  bool got = false, start = false;
  Py_BEGIN_ALLOW_THREADS;
  {
    std::unique_lock<std::mutex> g(st.mu);
    st.cv.wait(g, [&] { return !st.in.empty() || st.read_closed || st.cancelled || st.finished || st.done; });
    if (!st.in.empty()) {
      msg = std::move(st.in.front());
      st.in.pop_front();
      st.in_bytes -= msg.size();
      got = true;
      if (!st.reading && !st.read_closed && !st.finished && st.reactor != nullptr) {
        st.reading = true;
        st.starting++;
        start = true;
      }
    }
  }
  if (start) restart_read(st);
  Py_END_ALLOW_THREADS;
  if (!got) Py_RETURN_NONE;
  return PyBytes_FromStringAndSize(msg.data(), static_cast<Py_ssize_t>(msg.size()));
}

// write(data) -> bool: queued (False: the call is over). Waits only while kWriteWindow
// responses are already queued (the client does not read: flow control).
PyObject* call_write(PyObject* self, PyObject* arg) {
  Py_buffer view;
  if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) != 0) return nullptr;
  CallState& st = state_of(self);
  bool ok = false;
  CallState::Write start = CallState::Write::none;
  grpc::Slice slice(view.buf, static_cast<size_t>(view.len));
  PyBuffer_Release(&view);
  Py_BEGIN_ALLOW_THREADS;
  {
    std::unique_lock<std::mutex> g(st.mu);
    auto over = [&] { return st.finish_wanted || st.finished || st.cancelled || st.broken || st.done; };
    st.cv.wait(g, [&] { return over() || st.out.size() < kWriteWindow; });
    if (!over()) {
      ok = true;
      st.queue(slice, 0);
      start = st.claim_write();
    }
  }
  start_write(st, start);  // writing: the reactor stays alive
  Py_END_ALLOW_THREADS;
  return PyBool_FromLong(ok);
}

// post(obj) -> bool: queue a Python object (never bytes: take() returns requests as bytes)
// for the thread that take()s this call's messages; False, and dropped, once the call is over.
// The mutex is held only briefly by anyone, so it is taken here with the GIL held.
PyObject* call_post(PyObject* self, PyObject* obj) {
  if (PyBytes_Check(obj)) {
    PyErr_SetString(PyExc_TypeError, "post() takes objects, not bytes (bytes are the requests)");
    return nullptr;
  }
  CallState& st = state_of(self);
  bool ok;
  {
    std::lock_guard<std::mutex> g(st.mu);
    ok = !(st.finished || st.done || st.py_gone);
    if (ok) {
      Py_INCREF(obj);
      st.posted.push_back(obj);
      st.take_cv.notify_all();
    }
  }
  return PyBool_FromLong(ok);
}

// take() -> list: everything waiting for the handler, in one call: the objects posted so far
// (in order), then the requests read off the wire (bytes, in order), then None if the client
// has half-closed (or the call is over) and no request is left. Waits, GIL released, only when
// nothing is waiting. Taking requests restarts the read-ahead, bounded as read()'s.
PyObject* take_impl(PyObject* self, bool wait) {
  CallState& st = state_of(self);
  std::deque<PyObject*> objs;
  std::deque<std::string> reqs;
  bool end = false, start = false;
  auto over = [&] { return st.read_closed || st.cancelled || st.finished || st.done || st.broken; };
  auto ready = [&] { return !st.posted.empty() || !st.in.empty() || over(); };
  auto grab = [&] {
    objs.swap(st.posted);
    reqs.swap(st.in);
    st.in_bytes = 0;
    end = st.in.empty() && reqs.empty() && over();
    if (!reqs.empty() && !st.reading && !st.read_closed && !st.finished && st.reactor != nullptr) {
      st.reading = true;
      st.starting++;
      start = true;
    }
  };
  {
    std::unique_lock<std::mutex> g(st.mu);
    if (ready()) grab();
  }
  if (wait && objs.empty() && reqs.empty() && !end) {
    Py_BEGIN_ALLOW_THREADS;  // one GIL hand-over for the wait and the read it restarts
    {
      std::unique_lock<std::mutex> g(st.mu);
      for (;;) {
        // responses pushed outside a reaction (nobody's deliver() will) are started here
        st.take_cv.wait(g, [&] { return ready() || st.can_write(); });
        CallState::Write w = st.claim_write();
        if (w == CallState::Write::none) break;
        g.unlock();
        start_write(st, w);
        g.lock();
      }
      grab();
    }
    if (start) restart_read(st);
    Py_END_ALLOW_THREADS;
  } else if (start) {
    Py_BEGIN_ALLOW_THREADS;
    restart_read(st);
    Py_END_ALLOW_THREADS;
  }
  Py_ssize_t n = static_cast<Py_ssize_t>(objs.size() + reqs.size()) + (end ? 1 : 0);
  PyObject* list = PyList_New(n);
  Py_ssize_t i = 0;
  for (PyObject* o : objs) {  // the list takes the references post() took
    if (list != nullptr) PyList_SET_ITEM(list, i++, o);
    else Py_DECREF(o);
  }
  if (list == nullptr) return nullptr;
  for (const std::string& r : reqs) {
    PyObject* b = PyBytes_FromStringAndSize(r.data(), static_cast<Py_ssize_t>(r.size()));
    if (b == nullptr) {
      Py_DECREF(list);
      return nullptr;
    }
    PyList_SET_ITEM(list, i++, b);
  }
  if (end) {
    Py_INCREF(Py_None);
    PyList_SET_ITEM(list, i++, Py_None);
  }
  return list;
}

PyObject* call_take(PyObject* self, PyObject*) { return take_impl(self, true); }

// take_ready() -> list: as take(), but never waits ([] when nothing is waiting)
PyObject* call_take_ready(PyObject* self, PyObject*) { return take_impl(self, false); }

// write_many(list of bytes) -> bool: write() of each, in order, with one wait for room
// (GIL released) per window's worth instead of one per response. False: the call is over.
PyObject* call_write_many(PyObject* self, PyObject* arg) {
  PyObject* seq = PySequence_Fast(arg, "write_many() takes a sequence of bytes");
  if (seq == nullptr) return nullptr;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  std::vector<grpc::Slice> slices;
  slices.reserve(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject* item = PySequence_Fast_GET_ITEM(seq, i);
    char* data;
    Py_ssize_t len;
    if (PyBytes_AsStringAndSize(item, &data, &len) != 0) {
      Py_DECREF(seq);
      return nullptr;
    }
    slices.emplace_back(data, static_cast<size_t>(len));
  }
  Py_DECREF(seq);
  CallState& st = state_of(self);
  auto over = [&] { return st.finish_wanted || st.finished || st.cancelled || st.broken || st.done; };
  size_t next = 0;
  bool ok = true;
  // queue what fits; the write to start (outside the mutex)
  auto queue_some = [&]() -> CallState::Write {
    while (next < slices.size() && st.out.size() < kWriteWindow) st.queue(slices[next++], 0);
    return st.claim_write();
  };
  CallState::Write start = CallState::Write::none;
  {
    std::lock_guard<std::mutex> g(st.mu);  // the common case: room for all, no wait
    if (over()) ok = false;
    else start = queue_some();
  }
  if (start != CallState::Write::none || (ok && next < slices.size())) {
    Py_BEGIN_ALLOW_THREADS;  // gRPC may write inline: not with the GIL held
    start_write(st, start);  // writing: the reactor stays alive
    while (ok && next < slices.size()) {
      start = CallState::Write::none;
      {
        std::unique_lock<std::mutex> g(st.mu);
        st.cv.wait(g, [&] { return over() || st.out.size() < kWriteWindow; });
        if (over()) ok = false;
        else start = queue_some();
      }
      start_write(st, start);
    }
    Py_END_ALLOW_THREADS;
  }
  return PyBool_FromLong(ok);
}

// push(data, kind, limit) -> 1: queued for writing; 0: refused, `limit` responses of this
// kind (0..2) are queued already, not yet handed to gRPC; -1: the call is over. Never waits
// and makes no gRPC call (any thread, GIL held): the caller's limits bound the queue. The
// write is started by the running reaction's deliver(), or else by the call's thread in
// take() (woken here). Responses go out in the order they were pushed, write()s included.
PyObject* call_push(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 3) {
    PyErr_SetString(PyExc_TypeError, "push(data, kind, limit)");
    return nullptr;
  }
  char* data;
  Py_ssize_t len;
  if (PyBytes_AsStringAndSize(args[0], &data, &len) != 0) return nullptr;
  long kind = PyLong_AsLong(args[1]);
  Py_ssize_t limit = PyLong_AsSsize_t(args[2]);
  if (PyErr_Occurred()) return nullptr;
  if (kind < 0 || kind >= kKinds) {
    PyErr_SetString(PyExc_ValueError, "push(): kind must be 0..2");
    return nullptr;
  }
  grpc::Slice slice(data, static_cast<size_t>(len));
  CallState& st = state_of(self);
  long r;
  {
    std::lock_guard<std::mutex> g(st.mu);
    if (st.finish_wanted || st.finished || st.cancelled || st.broken || st.done) {
      r = -1;
    } else if (limit < 0 || st.out_kind[kind] >= static_cast<size_t>(limit)) {
      r = 0;
      st.refused = true;
    } else {
      st.queue(slice, static_cast<int>(kind));
      r = 1;
      if (!st.writing && !st.reacting) st.take_cv.notify_all();
    }
  }
  return PyLong_FromLong(r);
}

// count(kind) -> responses of that kind pushed and not yet handed to gRPC
PyObject* call_count(PyObject* self, PyObject* arg) {
  long kind = PyLong_AsLong(arg);
  if (kind == -1 && PyErr_Occurred()) return nullptr;
  if (kind < 0 || kind >= kKinds) {
    PyErr_SetString(PyExc_ValueError, "count(): kind must be 0..2");
    return nullptr;
  }
  CallState& st = state_of(self);
  std::lock_guard<std::mutex> g(st.mu);
  return PyLong_FromSize_t(st.out_kind[kind]);
}

// finish(code, message, trailers): the status, sent after every queued response
PyObject* call_finish(PyObject* self, PyObject* args) {
  int code;
  const char* message;
  Py_ssize_t message_len;
  PyObject* trailers;
  if (!PyArg_ParseTuple(args, "is#O", &code, &message, &message_len, &trailers)) return nullptr;
  if (code < 0 || code > 16) {
    PyErr_SetString(PyExc_ValueError, "status code must be 0..16");
    return nullptr;
  }
  std::vector<std::pair<std::string, std::string>> md;
  PyObject* seq = PySequence_Fast(trailers, "trailers must be a sequence of (key, bytes) pairs");
  if (seq == nullptr) return nullptr;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
    const char *k, *v;
    Py_ssize_t kl, vl;
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "s#y#", &k, &kl, &v, &vl)) {
      Py_DECREF(seq);
      return nullptr;
    }
    md.emplace_back(std::string(k, kl), std::string(v, vl));
  }
  Py_DECREF(seq);
  CallState& st = state_of(self);
  grpc::Status status(static_cast<grpc::StatusCode>(code), std::string(message, message_len));
  bool fin = false;
  CallState::Write start = CallState::Write::none;
  Py_BEGIN_ALLOW_THREADS;
  {
    std::lock_guard<std::mutex> g(st.mu);
    if (!st.finish_wanted && !st.finished && st.ctx != nullptr) {
      for (auto& kv : md) st.ctx->AddTrailingMetadata(kv.first, kv.second);
      st.finish_wanted = true;
      st.status = status;
      start = st.claim_write();  // what was pushed and not yet started goes first
      fin = st.take_finish();
    }
  }
  start_write(st, start);
  if (fin) st.reactor->Finish(st.status);
  Py_END_ALLOW_THREADS;
  Py_RETURN_NONE;
}

PyObject* call_is_active(PyObject* self, PyObject*) {
  CallState& st = state_of(self);
  std::lock_guard<std::mutex> g(st.mu);
  return PyBool_FromLong(!(st.cancelled || st.broken || st.finished || st.done));
}

// wait_done(timeout_s) -> bool: the call has completed (its status sent or it was cancelled)
PyObject* call_wait_done(PyObject* self, PyObject* arg) {
  double timeout = PyFloat_AsDouble(arg);
  if (timeout == -1.0 && PyErr_Occurred()) return nullptr;
  CallState& st = state_of(self);
  bool done;
  Py_BEGIN_ALLOW_THREADS;
  {
    std::unique_lock<std::mutex> g(st.mu);
    done = st.cv.wait_for(g, std::chrono::duration<double>(timeout), [&] { return st.done; });
  }
  Py_END_ALLOW_THREADS;
  return PyBool_FromLong(done);
}

PyObject* call_get_method(PyObject* self, void*) {
  const std::string& m = state_of(self).method;
  return PyUnicode_DecodeUTF8(m.data(), static_cast<Py_ssize_t>(m.size()), "replace");
}

PyObject* call_get_peer(PyObject* self, void*) {
  const std::string& p = state_of(self).peer;
  return PyUnicode_DecodeUTF8(p.data(), static_cast<Py_ssize_t>(p.size()), "replace");
}

PyObject* call_get_id(PyObject* self, void*) { return PyLong_FromUnsignedLongLong(state_of(self).id); }

// bytes of requests read off the wire and not yet taken by read() (the read-ahead bound's test)
PyObject* call_get_buffered(PyObject* self, void*) {
  CallState& st = state_of(self);
  std::lock_guard<std::mutex> g(st.mu);
  return PyLong_FromSize_t(st.in_bytes);
}

// responses queued and not yet handed to gRPC (react's write-window bound's test)
PyObject* call_get_queued(PyObject* self, void*) {
  CallState& st = state_of(self);
  std::lock_guard<std::mutex> g(st.mu);
  return PyLong_FromSize_t(st.out.size());
}

// writes started corked (the stream cork's test)
PyObject* call_get_corked(PyObject* self, void*) {
  CallState& st = state_of(self);
  std::lock_guard<std::mutex> g(st.mu);
  return PyLong_FromUnsignedLongLong(st.corked);
}

// ((key, value), ...): keys ending in -bin have bytes values, others str (as grpc-python)
PyObject* call_get_metadata(PyObject* self, void*) {
  const auto& md = state_of(self).metadata;
  PyObject* t = PyTuple_New(static_cast<Py_ssize_t>(md.size()));
  if (t == nullptr) return nullptr;
  for (size_t i = 0; i < md.size(); i++) {
    const std::string& k = md[i].first;
    const std::string& v = md[i].second;
    bool bin = k.size() >= 4 && k.compare(k.size() - 4, 4, "-bin") == 0;
    PyObject* pair = bin ? Py_BuildValue("(s#y#)", k.data(), (Py_ssize_t)k.size(), v.data(), (Py_ssize_t)v.size())
                         : Py_BuildValue("(s#N)", k.data(), (Py_ssize_t)k.size(),
                                         PyUnicode_DecodeUTF8(v.data(), (Py_ssize_t)v.size(), "replace"));
    if (pair == nullptr) {
      Py_DECREF(t);
      return nullptr;
    }
    PyTuple_SET_ITEM(t, static_cast<Py_ssize_t>(i), pair);
  }
  return t;
}

PyObject* call_react(PyObject* self, PyObject* fn);  // react.h

PyMethodDef call_methods[] = {
    {"read", call_read, METH_NOARGS, "next request bytes, or None at the end"},
    {"write", call_write, METH_O, "queue one response; False when the call is over"},
    {"write_many", call_write_many, METH_O, "queue responses in order; False when the call is over"},
    {"post", call_post, METH_O, "queue an object for take(); False when the call is over"},
    {"push", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(call_push)), METH_FASTCALL,
     "push(data, kind, limit) -> 1 queued, 0 refused (limit reached), -1 over"},
    {"count", call_count, METH_O, "count(kind): pushed responses of that kind not yet handed to gRPC"},
    {"react", call_react, METH_O, "react(fn): handle each request in gRPC's read reaction"},
    {"take_ready", call_take_ready, METH_NOARGS, "take() without waiting"},
    {"take", call_take, METH_NOARGS, "[posted objects..., request bytes..., None at the end]"},
    {"finish", call_finish, METH_VARARGS, "finish(code, message, trailers)"},
    {"is_active", call_is_active, METH_NOARGS, "neither finished nor cancelled"},
    {"wait_done", call_wait_done, METH_O, "wait_done(timeout_s) -> completed"},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef call_getset[] = {
    {"method", call_get_method, nullptr, nullptr, nullptr},
    {"peer", call_get_peer, nullptr, nullptr, nullptr},
    {"id", call_get_id, nullptr, nullptr, nullptr},
    {"buffered", call_get_buffered, nullptr, nullptr, nullptr},
    {"queued", call_get_queued, nullptr, nullptr, nullptr},
    {"corked", call_get_corked, nullptr, nullptr, nullptr},
    {"metadata", call_get_metadata, nullptr, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

}  // namespace
