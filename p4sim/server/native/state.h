// The state of one call (CallState), shared by its grpc++ reactor and its Python Call object,
// and of the server (Core: the calls waiting for a Python worker; the bounds).
// Part of p4sim's native front end: one translation unit, frontend.cc, includes its parts in
// order (each uses what the parts before it define).

#pragma once

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
  bool wrote = false;  // a write was started (the initial metadata went with it)
  uint64_t corked = 0;  // writes started corked (the cork's test)
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

  // with mu held: hand the next queued response to gRPC when no write runs. The answer says
  // what the caller must do after unlocking (start_write(), transport.h; `writing` keeps the
  // reactor alive): nothing, write and flush, or write corked. Corked (grpc++'s buffer hint)
  // when more responses wait behind this one: their writes follow at once and the last one,
  // never corked, sends them all in one sendmsg instead of one each. Never the call's first
  // write: it carries the initial metadata, and a corked batch with them never completes
  // (grpc/grpc#12975, #34231).
  enum class Write { none, flush, cork };
  Write claim_write() {
    if (!can_write()) return Write::none;
    wbuf = std::move(out.front().buf);
    out_kind[out.front().kind]--;
    out.pop_front();
    writing = true;
    bool first = !wrote;
    wrote = true;
    if (out.empty() || first) return Write::flush;
    corked++;
    return Write::cork;
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

}  // namespace
