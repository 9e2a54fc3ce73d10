// Python: the Server object (listen, accept a call, a cancelled call, stop) and the module.
// Part of p4sim's native front end: one translation unit, frontend.cc, includes its parts in
// order (each uses what the parts before it define).

#pragma once

#include "call.h"
#include "state.h"

namespace {

// ------------------------------------------------------------------ Python: Server

struct ServerObject {
  PyObject_HEAD
  Core* core;
  int port;
};

PyTypeObject ServerType = {PyVarObject_HEAD_INIT(nullptr, 0)};

void shutdown_core(Core* core, double grace) {
  {
    std::lock_guard<std::mutex> g(core->mu);
    core->stopping = true;
    core->fresh_cv.notify_all();
    core->cancelled_cv.notify_all();
  }
  if (core->server) {
    auto deadline = std::chrono::system_clock::now() +
                    std::chrono::microseconds(static_cast<int64_t>(grace * 1e6));
    core->server->Shutdown(deadline);
    core->server->Wait();
    core->server.reset();
  }
}

// Server(address, max_message_bytes, max_concurrent_rpcs, key_pem=None, cert_pem=None,
//        ca_pem=None, client_auth=False, echo=False)
int server_init(PyObject* self, PyObject* args, PyObject* kwargs) {
  const char* address;
  int max_message, max_concurrent;
  const char *key = nullptr, *cert = nullptr, *ca = nullptr;
  int client_auth = 0, echo = 0;
  static const char* kw[] = {"address", "max_message", "max_concurrent", "key", "cert", "ca",
                             "client_auth", "echo", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "sii|zzzpp", const_cast<char**>(kw), &address, &max_message,
                                   &max_concurrent, &key, &cert, &ca, &client_auth, &echo))
    return -1;
  ServerObject* so = reinterpret_cast<ServerObject*>(self);
  if (so->core != nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "server already started");
    return -1;
  }
  Core* core = new Core();
  core->max_active = max_concurrent > 0 ? max_concurrent : 1;
  core->echo = echo != 0;
  std::shared_ptr<grpc::ServerCredentials> creds;
  if (key != nullptr && cert != nullptr) {
    grpc::SslServerCredentialsOptions opts(
        ca == nullptr ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                      : (client_auth ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                                     : GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY));
    opts.pem_key_cert_pairs.push_back({key, cert});
    if (ca != nullptr) opts.pem_root_certs = ca;
    creds = grpc::SslServerCredentials(opts);
  } else {
    creds = grpc::InsecureServerCredentials();
  }
  int port = 0;
  std::string addr(address);
  Py_BEGIN_ALLOW_THREADS;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(addr, creds, &port);
  builder.SetMaxReceiveMessageSize(max_message);
  builder.SetMaxSendMessageSize(max_message);
  builder.RegisterCallbackGenericService(core);
  core->server = builder.BuildAndStart();
  Py_END_ALLOW_THREADS;
  if (!core->server || port == 0) {
    Py_BEGIN_ALLOW_THREADS;
    shutdown_core(core, 0);
    delete core;
    Py_END_ALLOW_THREADS;
    PyErr_Format(PyExc_OSError, "cannot listen on %s", address);
    return -1;
  }
  so->core = core;
  so->port = port;
  return 0;
}

PyObject* server_new(PyTypeObject* type, PyObject*, PyObject*) {
  ServerObject* so = reinterpret_cast<ServerObject*>(type->tp_alloc(type, 0));
  if (so != nullptr) {
    so->core = nullptr;
    so->port = 0;
  }
  return reinterpret_cast<PyObject*>(so);
}

void server_dealloc(PyObject* self) {
  ServerObject* so = reinterpret_cast<ServerObject*>(self);
  if (so->core != nullptr) {
    Core* core = so->core;
    so->core = nullptr;
    Py_BEGIN_ALLOW_THREADS;
    shutdown_core(core, 0);
    delete core;
    Py_END_ALLOW_THREADS;
  }
  Py_TYPE(self)->tp_free(self);
}

Core* core_of(PyObject* self) {
  Core* c = reinterpret_cast<ServerObject*>(self)->core;
  if (c == nullptr) PyErr_SetString(PyExc_RuntimeError, "server is stopped");
  return c;
}

PyObject* take(PyObject* self, bool cancelled) {
  Core* core = core_of(self);
  if (core == nullptr) return nullptr;
  std::shared_ptr<CallState> st;
  Py_BEGIN_ALLOW_THREADS;
  {
    std::unique_lock<std::mutex> g(core->mu);
    auto& q = cancelled ? core->cancelled : core->fresh;
    (cancelled ? core->cancelled_cv : core->fresh_cv).wait(g, [&] { return !q.empty() || core->stopping; });
    if (!q.empty()) {
      st = std::move(q.front());
      q.pop_front();
    }
  }
  Py_END_ALLOW_THREADS;
  if (!st) Py_RETURN_NONE;
  return wrap_call(std::move(st));
}

// accept() -> Call, or None once the server is stopping
PyObject* server_accept(PyObject* self, PyObject*) { return take(self, false); }

// next_cancelled() -> Call a client cancelled, or None once the server is stopping
PyObject* server_next_cancelled(PyObject* self, PyObject*) { return take(self, true); }

// stop(grace_s): stop taking calls; cancel those still running after grace_s; wait for all
PyObject* server_stop(PyObject* self, PyObject* arg) {
  double grace = PyFloat_AsDouble(arg);
  if (grace == -1.0 && PyErr_Occurred()) return nullptr;
  ServerObject* so = reinterpret_cast<ServerObject*>(self);
  Core* core = so->core;
  if (core == nullptr) Py_RETURN_NONE;
  Py_BEGIN_ALLOW_THREADS;
  shutdown_core(core, grace < 0 ? 0 : grace);
  Py_END_ALLOW_THREADS;
  Py_RETURN_NONE;
}

PyObject* server_get_port(PyObject* self, void*) { return PyLong_FromLong(reinterpret_cast<ServerObject*>(self)->port); }

PyObject* server_get_active(PyObject* self, void*) {
  Core* c = reinterpret_cast<ServerObject*>(self)->core;
  return PyLong_FromLong(c == nullptr ? 0 : c->active.load());
}

PyMethodDef server_methods[] = {
    {"accept", server_accept, METH_NOARGS, "next call, or None once stopping"},
    {"next_cancelled", server_next_cancelled, METH_NOARGS, "next cancelled call, or None once stopping"},
    {"stop", server_stop, METH_O, "stop(grace_s)"},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef server_getset[] = {
    {"port", server_get_port, nullptr, nullptr, nullptr},
    {"active", server_get_active, nullptr, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "p4sim_native_frontend",
                          "grpc++ generic front end for p4sim-switch", -1, nullptr};

}  // namespace
