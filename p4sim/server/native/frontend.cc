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

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/support/byte_buffer.h>

#include <absl/synchronization/mutex.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr size_t kReadAhead = 64;    // requests read off the wire, not yet taken by Python
constexpr size_t kReadAheadBytes = 4 << 20;  // and their bytes: a client's big messages wait on the wire
constexpr size_t kWriteWindow = 64;  // responses queued by Python, not yet written
constexpr int kKinds = 3;  // push()'s kinds of response, each bounded on its own

struct Core;

struct CallState {
  std::mutex mu;
  std::condition_variable cv;
  grpc::ServerGenericBidiReactor* reactor = nullptr;
  grpc::GenericCallbackServerContext* ctx = nullptr;
  uint64_t id = 0;
  std::string method, peer;
  std::vector<std::pair<std::string, std::string>> metadata;
  grpc::ByteBuffer rbuf, wbuf;
  std::deque<std::string> in;
  size_t in_bytes = 0;
  // responses not yet handed to gRPC, each with its kind (push()'s bounds count them per kind)
  struct Out {
    grpc::ByteBuffer buf;
    int kind;
  };
  std::deque<Out> out;
  size_t out_kind[kKinds] = {};
  // what take() waits on: kept apart from `cv` (whose every write completion would
  // otherwise wake a reacting call's thread once per response for nothing)
  std::condition_variable take_cv;
  // objects Python posted for the call's handler (post/take); touched with the GIL held only
  std::deque<PyObject*> posted;
  bool py_gone = false;  // the Python Call is gone: nothing may be posted any more
  // react(fn): fn(request bytes) -> list of response bytes, called by OnReadDone itself with
  // the GIL taken; set and cleared with the GIL held (so a reaction holding the GIL may use it)
  PyObject* react_fn = nullptr;
  bool read_held = false;  // reacting: the next read waits for the write window to drain (or a write after a refusal)
  // a reaction runs (or react() handles the requests read before it): what it pushes is
  // started by its deliver(), and a read completing meanwhile waits in `in` for it
  bool reacting = false;
  // push() refused a response (its kind's limit reached) since the last write completed: the
  // client does not keep up, so a reacting call's next read waits, as for a full window
  bool refused = false;
  bool reading = false, read_closed = false, writing = false, broken = false;
  int starting = 0;  // Start* calls in progress outside the mutex
  bool finish_wanted = false, finished = false, cancelled = false, done = false;
  grpc::Status status;

  // with mu held: whether the caller must now call Finish (after unlocking); responses
  // queued first are written first (unless the call is cancelled or its writes failed)
  bool take_finish() {
    if (finish_wanted && !finished && !writing && starting == 0 && reactor != nullptr &&
        (out.empty() || cancelled || broken)) {
      finished = true;
      take_cv.notify_all();
      return true;
    }
    return false;
  }

  void queue(grpc::Slice& sl, int kind) {
    out.push_back(Out{grpc::ByteBuffer(&sl, 1), kind});
    out_kind[kind]++;
  }

  bool can_write() const {
    return !writing && !out.empty() && !cancelled && !broken && !done && !finished && reactor != nullptr;
  }

  // with mu held: hand the next queued response to gRPC when no write runs; true when the
  // caller must now StartWrite(&wbuf) (after unlocking; `writing` keeps the reactor alive)
  bool claim_write() {
    if (!can_write()) return false;
    wbuf = std::move(out.front().buf);
    out_kind[out.front().kind]--;
    out.pop_front();
    writing = true;
    return true;
  }

  void wake() {
    cv.notify_all();
    take_cv.notify_all();
  }
};

struct Core : public grpc::CallbackGenericService {
  std::unique_ptr<grpc::Server> server;
  std::mutex mu;
  std::condition_variable fresh_cv, cancelled_cv;
  std::deque<std::shared_ptr<CallState>> fresh;      // calls waiting for a Python worker
  std::deque<std::shared_ptr<CallState>> cancelled;  // calls the client cancelled
  bool stopping = false;
  std::atomic<int> active{0};
  int max_active = 1;
  bool echo = false;  // a no-work baseline served in C++ alone (bench p4runtime)
  std::atomic<uint64_t> next_id{1};
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override;

  void push(bool cancel, std::shared_ptr<CallState> st) {
    std::lock_guard<std::mutex> g(mu);
    (cancel ? cancelled : fresh).push_back(std::move(st));
    (cancel ? cancelled_cv : fresh_cv).notify_one();
  }
};

std::string flatten(const grpc::ByteBuffer& buf) {
  std::vector<grpc::Slice> slices;
  std::string s;
  if (!buf.Dump(&slices).ok()) return s;
  s.reserve(buf.Length());
  for (const auto& sl : slices) s.append(reinterpret_cast<const char*>(sl.begin()), sl.size());
  return s;
}

bool react_one(CallState& st, const std::string& msg, std::vector<grpc::Slice>& outs);
void deliver(CallState& st, std::vector<grpc::Slice>& outs, bool failed, bool restart, bool reacted);
void restart_read(CallState& st);

class Reactor : public grpc::ServerGenericBidiReactor {
 public:
  Reactor(Core* core, grpc::GenericCallbackServerContext* ctx, bool admit)
      : core_(core), st_(std::make_shared<CallState>()) {
    st_->reactor = this;
    st_->ctx = ctx;
    st_->id = core->next_id++;
    if (!admit) {  // as grpc-python's maximum_concurrent_rpcs
      st_->finished = true;
      Finish(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "Concurrent RPC limit exceeded!"));
      return;
    }
    st_->method = ctx->method();
    st_->peer = ctx->peer();
    for (const auto& kv : ctx->client_metadata())
      st_->metadata.emplace_back(std::string(kv.first.data(), kv.first.size()),
                                 std::string(kv.second.data(), kv.second.size()));
    st_->reading = true;
    StartRead(&st_->rbuf);  // held by gRPC until the reactor is bound
    core->push(false, st_);
  }

  void OnReadDone(bool ok) override {
    bool again = false, fin = false, react = false;
    std::string msg;
    if (ok) msg = flatten(st_->rbuf);
    {
      std::lock_guard<std::mutex> g(st_->mu);
      // not while react() still handles the requests read before it: this one waits in
      // `in` behind them (react() takes it from there, in order)
      react = ok && st_->react_fn != nullptr && !st_->reacting;
      if (react) {
        st_->reading = false;
        st_->reacting = true;
        st_->starting++;  // the reactor stays alive while the reaction runs
      } else if (ok) {
        st_->in_bytes += msg.size();
        st_->in.push_back(std::move(msg));
        again = st_->in.size() < kReadAhead && st_->in_bytes < kReadAheadBytes && !st_->finished;
      } else {
        st_->read_closed = true;
      }
      if (!react) {
        st_->reading = again;
        if (again) st_->starting++;
        st_->wake();
      }
    }
    if (react) {
      std::vector<grpc::Slice> outs;
      bool failed = !react_one(*st_, msg, outs);
      deliver(*st_, outs, failed, true, true);
      return;
    }
    if (!again) return;
    StartRead(&st_->rbuf);
    {
      std::lock_guard<std::mutex> g(st_->mu);
      st_->starting--;
      fin = st_->take_finish();
    }
    if (fin) Finish(st_->status);
  }

  void OnWriteDone(bool ok) override {
    bool again = false, fin, read = false;
    {
      std::lock_guard<std::mutex> g(st_->mu);
      st_->writing = false;
      if (!ok) {
        st_->broken = true;
        st_->out.clear();
        for (size_t& n : st_->out_kind) n = 0;
        st_->take_cv.notify_all();
      } else {
        st_->refused = false;
        again = st_->claim_write();
      }
      if (st_->read_held && st_->out.size() < kWriteWindow / 2 && !st_->finished && !st_->broken) {
        st_->read_held = false;
        st_->reading = true;
        st_->starting++;
        read = true;
      }
      fin = st_->take_finish();
      st_->cv.notify_all();
    }
    if (again) StartWrite(&st_->wbuf);
    if (read) restart_read(*st_);
    if (fin) Finish(st_->status);
  }

  void OnCancel() override {
    bool fin;
    {
      std::lock_guard<std::mutex> g(st_->mu);
      st_->cancelled = true;
      if (!st_->finish_wanted) {
        st_->finish_wanted = true;
        st_->status = grpc::Status(grpc::StatusCode::CANCELLED, "");
      }
      fin = st_->take_finish();
      st_->wake();
    }
    core_->push(true, st_);
    if (fin) Finish(st_->status);
  }

  void OnDone() override {
    {
      std::lock_guard<std::mutex> g(st_->mu);
      st_->done = true;
      st_->reactor = nullptr;
      st_->ctx = nullptr;
      st_->wake();
    }
    core_->active--;
    delete this;
  }

 private:
  Core* core_;
  std::shared_ptr<CallState> st_;
};

// The bench's C++-only baseline: a stream method ("/.../S") echoes each message, any other
// method answers one empty message. No Python, no GIL: what grpc++ alone costs.
class EchoReactor : public grpc::ServerGenericBidiReactor {
 public:
  EchoReactor(Core* core, bool stream) : core_(core), stream_(stream) { StartRead(&buf_); }
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::OK);
    } else if (stream_) {
      StartWrite(&buf_);
    } else {
      buf_.Clear();
      grpc::Slice empty;
      buf_ = grpc::ByteBuffer(&empty, 1);
      StartWriteAndFinish(&buf_, grpc::WriteOptions(), grpc::Status::OK);
    }
  }
  void OnWriteDone(bool ok) override {
    if (ok)
      StartRead(&buf_);
    else
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, ""));
  }
  void OnDone() override {
    core_->active--;
    delete this;
  }

 private:
  Core* core_;
  bool stream_;
  grpc::ByteBuffer buf_;
};

grpc::ServerGenericBidiReactor* Core::CreateReactor(grpc::GenericCallbackServerContext* ctx) {
  if (echo) {
    active++;
    const std::string& m = ctx->method();
    return new EchoReactor(this, m.size() >= 2 && m.compare(m.size() - 2, 2, "/S") == 0);
  }
  int n = ++active;  // counted before the check: two calls at once cannot both take the last slot
  bool admit;
  {
    std::lock_guard<std::mutex> g(mu);
    admit = !stopping && n <= max_active;
  }
  return new Reactor(this, ctx, admit);
}

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

// The next read off the wire, started never under the mutex (`starting` keeps the reactor
// alive meanwhile); then the call is finished if that was the last thing it waited for.
// The GIL is released.
void restart_read(CallState& st) {
  st.reactor->StartRead(&st.rbuf);
  bool fin;
  {
    std::lock_guard<std::mutex> g(st.mu);
    st.starting--;
    fin = st.take_finish();
  }
  if (fin) st.reactor->Finish(st.status);
}

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

// Without the GIL and without the mutex: queue `outs` for writing (starting a write if none
// runs: also for what was pushed meanwhile), then, with `restart`, the next read (the caller
// holds one `starting` for it), or hold it until the write window drains. `failed`: end the
// call INTERNAL. `reacted`: the caller's reaction is over (pushes wake take() again).
void deliver(CallState& st, std::vector<grpc::Slice>& outs, bool failed, bool restart, bool reacted) {
  bool start = false, read = false, fin;
  {
    std::lock_guard<std::mutex> g(st.mu);
    if (reacted) st.reacting = false;
    bool over = st.finish_wanted || st.finished || st.cancelled || st.broken || st.done;
    if (!over) {
      for (auto& sl : outs) st.queue(sl, 0);
      if (failed) {
        st.finish_wanted = true;
        st.status = grpc::Status(grpc::StatusCode::INTERNAL, "p4sim native front end: reaction failed");
      }
    }
    start = st.claim_write();
    if (restart) {
      if (!over && !failed && st.out.size() < kWriteWindow && !(st.refused && !st.out.empty())) {
        st.reading = true;
        read = true;  // keeps the caller's `starting`
      } else {
        if (!over && !failed) st.read_held = true;
        st.starting--;
      }
    }
    fin = read ? false : st.take_finish();
    st.cv.notify_all();
  }
  if (start) st.reactor->StartWrite(&st.wbuf);  // writing: the reactor stays alive
  if (read) restart_read(st);
  if (fin) st.reactor->Finish(st.status);
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
  bool ok = false, start = false;
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
  if (start) st.reactor->StartWrite(&st.wbuf);  // writing: the reactor stays alive
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
        if (!st.claim_write()) break;
        g.unlock();
        st.reactor->StartWrite(&st.wbuf);
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
  // queue what fits; true when a write must be started (outside the mutex)
  auto queue_some = [&]() -> bool {
    while (next < slices.size() && st.out.size() < kWriteWindow) st.queue(slices[next++], 0);
    return st.claim_write();
  };
  bool start = false;
  {
    std::lock_guard<std::mutex> g(st.mu);  // the common case: room for all, no wait
    if (over()) ok = false;
    else start = queue_some();
  }
  if (start || (ok && next < slices.size())) {
    Py_BEGIN_ALLOW_THREADS;  // gRPC may write inline: not with the GIL held
    if (start) st.reactor->StartWrite(&st.wbuf);  // writing: the reactor stays alive
    while (ok && next < slices.size()) {
      start = false;
      {
        std::unique_lock<std::mutex> g(st.mu);
        st.cv.wait(g, [&] { return over() || st.out.size() < kWriteWindow; });
        if (over()) ok = false;
        else start = queue_some();
      }
      if (start) st.reactor->StartWrite(&st.wbuf);
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
  bool fin = false, start = false;
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
  if (start) st.reactor->StartWrite(&st.wbuf);
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
    {"metadata", call_get_metadata, nullptr, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

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
