// The grpc++ side: a call's reactor (reads, writes, cancellation, the end), the bench's C++-only
// echo, admission (Core::CreateReactor), and restarting a read or queueing responses
// without the GIL (restart_read, deliver: also used by the Python Call).
// Part of p4sim's native front end: one translation unit, frontend.cc, includes its parts in
// order (each uses what the parts before it define).

#pragma once

#include "state.h"

namespace {

std::string flatten(const grpc::ByteBuffer& buf) {
  std::vector<grpc::Slice> slices;
  std::string s;
  if (!buf.Dump(&slices).ok()) return s;
  s.reserve(buf.Length());
  for (const auto& sl : slices) s.append(reinterpret_cast<const char*>(sl.begin()), sl.size());
  return s;
}

// Start the write claim_write() asked for (none: nothing), never under the mutex: the only
// place a served call's response is handed to gRPC (the echo below is the bench's baseline).
void start_write(CallState& st, CallState::Write w) {
  if (w == CallState::Write::none) return;
  grpc::WriteOptions opts;
  if (w == CallState::Write::cork) opts.set_buffer_hint();
  st.reactor->StartWrite(&st.wbuf, opts);
}

bool react_one(CallState& st, const std::string& msg, std::vector<grpc::Slice>& outs);  // react.h
void deliver(CallState& st, std::vector<grpc::Slice>& outs, bool failed, bool restart, bool reacted);  // below
void restart_read(CallState& st);  // below

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
    bool fin, read = false;
    CallState::Write again = CallState::Write::none;
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
    start_write(*st_, again);
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

// Without the GIL and without the mutex: queue `outs` for writing (starting a write if none
// runs: also for what was pushed meanwhile), then, with `restart`, the next read (the caller
// holds one `starting` for it), or hold it until the write window drains. `failed`: end the
// call INTERNAL. `reacted`: the caller's reaction is over (pushes wake take() again).
void deliver(CallState& st, std::vector<grpc::Slice>& outs, bool failed, bool restart, bool reacted) {
  bool read = false, fin;
  CallState::Write start;
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
  start_write(st, start);  // writing: the reactor stays alive
  if (read) restart_read(st);
  if (fin) st.reactor->Finish(st.status);
}

}  // namespace
