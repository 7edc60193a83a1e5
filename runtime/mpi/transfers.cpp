// runtime/mpi/transfers.hpp: the transfers between ranks, posted where their data becomes ready.
#include "runtime/mpi/transfers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <optional>

#include "core/errors.hpp"
#include "core/params_internal.hpp"

namespace ringrt::mpi {

// One send or receive: chunks posted in order (several messages of one tag arrive in order), at most
// `window` in flight.
struct Transfers::Transfer {
  bool send = false;
  Device* dev = nullptr;
  char* ptr = nullptr;
  size_t bytes = 0;
  int peer = 0, tag = 0;
  bool staged = false;
  size_t chunk = 0, window = 0;
  Event done;
  std::optional<std::chrono::steady_clock::time_point> ready;  // when it could start, while trace_timing()
  std::exception_ptr error;  // of an event it waited for: completes it without posting

  struct Slot {
    MPI_Request request = MPI_REQUEST_NULL;
    size_t offset = 0, bytes = 0;
    char* buffer = nullptr;  // staged: the device's staging memory (Device::allocate_staging)
  };
  size_t posted = 0;  // bytes posted so far
  std::deque<Slot> in_flight;

  bool finished() const { return posted == bytes && in_flight.empty(); }
};

Transfers::Transfers(MPI_Comm comm, int tag_ub) : comm_(comm), tag_ub_(tag_ub), thread_([this] { loop(); }) {}

Transfers::~Transfers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

size_t Transfers::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_;
}

Event Transfers::send(Device& from, const void* src, size_t bytes, int peer, size_t item, std::vector<Event> after) {
  auto t = std::make_shared<Transfer>();
  t->send = true;
  t->dev = &from;
  t->ptr = const_cast<char*>(static_cast<const char*>(src));  // MPI_Isend takes const void*; staging only reads
  t->bytes = bytes;
  t->peer = peer;
  t->tag = static_cast<int>(item % (static_cast<size_t>(tag_ub_) + 1));
  return start(std::move(t), std::move(after));
}

Event Transfers::recv(Device& to, void* dst, size_t bytes, int peer, size_t item, std::vector<Event> after) {
  auto t = std::make_shared<Transfer>();
  t->dev = &to;
  t->ptr = static_cast<char*>(dst);
  t->bytes = bytes;
  t->peer = peer;
  t->tag = static_cast<int>(item % (static_cast<size_t>(tag_ub_) + 1));
  return start(std::move(t), std::move(after));
}

// Posts t once every event of `after` completed, on the thread that completes the last of them (this one
// when they all have: the common case on the cpu backend, whose small kernels run inline); the first
// error among them completes t with it instead.
Event Transfers::start(std::shared_ptr<Transfer> t, std::vector<Event> after) {
  const RuntimeParams& params = current_runtime_params();
  t->staged = !t->dev->host_addressable() || params.mpi_stage_host;
  // the same chunks on both sides whatever each stages (MPI matches message by message), so that a
  // rank with GPUs and one with cpu devices agree; the ranks agreed on the chunk size with the plan
  t->chunk = static_cast<size_t>(params.mpi_chunk_bytes);
  t->window = t->staged ? 2 : SIZE_MAX;  // host memory: every chunk posted at once
  Event done = t->done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++pending_;
  }
  auto left = std::make_shared<std::atomic<size_t>>(after.size() + 1);
  auto arrive = [this, t, left] {
    if (left->fetch_sub(1) != 1) return;
    if (trace_timing()) t->ready = std::chrono::steady_clock::now();  // a Trace records: from ready to done
    post(t);
  };
  for (const Event& e : after)
    e.on_done([t, e, arrive] {
      try {
        e.wait_for(std::chrono::milliseconds(0));  // rethrows its error
      } catch (...) {
        if (!t->error) t->error = std::current_exception();
      }
      arrive();
    });
  arrive();
  return done;
}

void Transfers::post(std::shared_ptr<Transfer> t) {
  std::vector<std::shared_ptr<Transfer>> done;
  if (t->staged && !t->error) {  // the progress thread stages and posts it
    {
      std::lock_guard<std::mutex> lock(mu_);
      ready_.push_back(std::move(t));
    }
    cv_.notify_one();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(direct_mu_);
    std::vector<std::shared_ptr<Transfer>> one{std::move(t)};
    advance_all(one, done);
    direct_.insert(direct_.end(), one.begin(), one.end());
  }
  complete(done);
  { std::lock_guard<std::mutex> lock(mu_); }  // the thread either sees direct_ or gets this notify
  cv_.notify_one();
}

bool Transfers::progress() {
  std::vector<std::shared_ptr<Transfer>> done;
  bool moved = false;
  {
    std::unique_lock<std::mutex> lock(direct_mu_, std::try_to_lock);
    if (!lock.owns_lock() || direct_.empty()) return false;
    moved = advance_all(direct_, done);
  }
  complete(done);
  return moved;
}

bool Transfers::advance_all(std::vector<std::shared_ptr<Transfer>>& list,
                            std::vector<std::shared_ptr<Transfer>>& done) {
  bool progressed = false;
  for (auto it = list.begin(); it != list.end();) {
    Transfer& t = **it;
    if (!t.error) {
      try {
        progressed |= advance(t);
      } catch (...) {
        t.error = std::current_exception();
      }
    }
    if (!t.error && !t.finished()) {
      ++it;
      continue;
    }
    done.push_back(std::move(*it));
    it = list.erase(it);
    progressed = true;
  }
  return progressed;
}

void Transfers::complete(std::vector<std::shared_ptr<Transfer>>& done) {
  for (auto& t : done) {
    {  // no longer pending once its waiters may go on (and the process may exit and finalize)
      std::lock_guard<std::mutex> lock(mu_);
      --pending_;
    }
    if (t->ready && !t->error) t->done.set_times(*t->ready, std::chrono::steady_clock::now());
    t->done.set_done(t->error);
  }
  done.clear();
}

// Completes what finished, in order, and posts chunks while the window allows.
bool Transfers::advance(Transfer& t) {
  bool progressed = false;
  while (!t.in_flight.empty()) {
    Transfer::Slot& s = t.in_flight.front();
    int done = 0;
    RINGRT_MPI(MPI_Test(&s.request, &done, MPI_STATUS_IGNORE));
    if (!done) break;
    if (t.staged && !t.send) t.dev->copy_in(t.ptr + s.offset, s.buffer, s.bytes);
    if (t.staged) t.dev->free_staging(s.buffer, t.chunk);
    t.in_flight.pop_front();
    progressed = true;
  }
  while (t.posted < t.bytes && t.in_flight.size() < t.window) {
    Transfer::Slot s;
    s.offset = t.posted;
    s.bytes = std::min(t.chunk, t.bytes - t.posted);
    char* at = t.ptr + s.offset;
    if (t.staged) {
      s.buffer = static_cast<char*>(t.dev->allocate_staging(t.chunk));  // one size: the device keeps them
      if (t.send) t.dev->copy_out(s.buffer, at, s.bytes);
      at = s.buffer;
    }
    int count = static_cast<int>(s.bytes);
    if (t.send)
      RINGRT_MPI(MPI_Isend(at, count, MPI_BYTE, t.peer, t.tag, comm_, &s.request));
    else
      RINGRT_MPI(MPI_Irecv(at, count, MPI_BYTE, t.peer, t.tag, comm_, &s.request));
    t.posted += s.bytes;
    t.in_flight.push_back(std::move(s));
    progressed = true;
  }
  return progressed;
}

void Transfers::loop() {
  std::vector<std::shared_ptr<Transfer>> staged, done;  // the thread's own
  int idle = 0;                                         // passes without progress
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      auto nothing = [&] {
        std::lock_guard<std::mutex> d(direct_mu_);
        return staged.empty() && ready_.empty() && direct_.empty();
      };
      if (nothing()) cv_.wait(lock, [&] { return stop_ || !ready_.empty() || !nothing(); });
      if (stop_) break;
      for (auto& t : ready_) staged.push_back(std::move(t));
      ready_.clear();
    }
    bool progressed = advance_all(staged, done);
    complete(done);
    progressed = progress() || progressed;
    idle = progressed ? 0 : idle + 1;
    if (idle > 64)
      std::this_thread::sleep_for(std::chrono::microseconds(50));  // no busy-poll when oversubscribed
    else if (idle > 0)
      std::this_thread::yield();
  }
  // stopped (process exit) with transfers pending: they fail; their MPI requests are left to MPI_Abort
  auto error = std::make_exception_ptr(DeviceError("MPI transfer abandoned at exit"));
  {
    std::lock_guard<std::mutex> d(direct_mu_);
    staged.insert(staged.end(), direct_.begin(), direct_.end());
    direct_.clear();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    staged.insert(staged.end(), ready_.begin(), ready_.end());
    ready_.clear();
  }
  for (auto& t : staged) t->done.set_done(error);  // no lock held: their waiters may run here
}

}  // namespace ringrt::mpi
