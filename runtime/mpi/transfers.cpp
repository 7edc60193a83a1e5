// runtime/mpi/transfers.hpp: the transfers between ranks, posted where their data becomes ready.
#include "runtime/mpi/transfers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
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

  // a collective (Transfers::collective): its call and communicator, its number there, whether MPI has it
  std::optional<Cluster::CollectiveCall> call;
  MPI_Comm comm = MPI_COMM_NULL;
  uint64_t number = 0;
  bool handed = false;
  std::vector<char> input;      // a copy of the input where it overlaps the output (not MPI_IN_PLACE's way)
  std::exception_ptr upstream;  // a collective's: of an event it waited for (it is posted all the same)

  bool finished() const { return call ? handed && in_flight.empty() : posted == bytes && in_flight.empty(); }
};

namespace {

// MPI's type of a dtype MPI reduces (mpi_serves, rewrite/rules/multi.hpp); DeviceError for another.
MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::float32:
      return MPI_FLOAT;
    case DType::float64:
      return MPI_DOUBLE;
    case DType::int32:
      return MPI_INT32_T;
    case DType::int64:
      return MPI_INT64_T;
    case DType::int16:
      return MPI_INT16_T;
    case DType::int8:
      return MPI_INT8_T;
    case DType::uint8:
      return MPI_UINT8_T;
    case DType::uint32:
      return MPI_UINT32_T;
    case DType::bool_:
      return MPI_C_BOOL;
    default:
      throw DeviceError(fmt::format("MPI reduces no {} (Algorithm::mpi)", dtype_name(dtype)));
  }
}

// MPI's op: bool's sum and max are its logical or, its prod and min its logical and (the interpreter's).
MPI_Op mpi_op(ReduceOp op, DType dtype) {
  bool logical = dtype == DType::bool_;
  switch (op) {
    case ReduceOp::sum:
      return logical ? MPI_LOR : MPI_SUM;
    case ReduceOp::prod:
      return logical ? MPI_LAND : MPI_PROD;
    case ReduceOp::max:
      return logical ? MPI_LOR : MPI_MAX;
    case ReduceOp::min:
      return logical ? MPI_LAND : MPI_MIN;
  }
  throw InternalError("mpi_op: a reduce op out of range");
}

int mpi_count(size_t n, const Cluster::CollectiveCall& c) {
  if (n > static_cast<size_t>(INT_MAX))
    throw DeviceError(
        fmt::format("MPI's {} of {} elements of {}: over MPI's int count; set allreduce.algorithm to "
                    "ring for it",
                    collective_name(c.collective), c.count, dtype_name(c.dtype)));
  return static_cast<int>(n);
}

bool overlaps(const char* a, size_t an, const char* b, size_t bn) { return a < b + bn && b < a + an; }

// Posts t's collective (MPI_I*) in place; its input copied first where it overlaps the output other than as
// MPI_IN_PLACE takes it.
void post_collective(Transfers::Transfer& t) {
  const Cluster::CollectiveCall& c = *t.call;
  auto n = static_cast<size_t>(c.ranks.size());
  size_t me = 0;
  int comm_rank = 0;
  RINGRT_MPI(MPI_Comm_rank(t.comm, &comm_rank));
  me = static_cast<size_t>(comm_rank);
  size_t item = static_cast<size_t>(itemsize(c.dtype)), bytes = c.count * item;
  const char* in = static_cast<const char*>(c.input);
  char* out = static_cast<char*>(c.output);
  size_t out_bytes = c.collective == Collective::allgather        ? n * bytes
                     : c.collective == Collective::reduce_scatter ? bytes / n
                                                                  : bytes;
  bool in_place = (c.collective == Collective::allreduce && in == out) ||
                  (c.collective == Collective::allgather && in == out + me * bytes) ||
                  c.collective == Collective::broadcast;
  if (!in_place && overlaps(in, bytes, out, out_bytes)) {
    t.input.assign(in, in + bytes);
    in = t.input.data();
  }
  const void* send = in_place ? MPI_IN_PLACE : in;
  Transfers::Transfer::Slot slot;
  switch (c.collective) {
    case Collective::allreduce:
      RINGRT_MPI(MPI_Iallreduce(send, out, mpi_count(c.count, c), mpi_type(c.dtype), mpi_op(c.op, c.dtype), t.comm,
                                &slot.request));
      break;
    case Collective::reduce_scatter:
      RINGRT_MPI(MPI_Ireduce_scatter_block(send, out, mpi_count(c.count / n, c), mpi_type(c.dtype),
                                           mpi_op(c.op, c.dtype), t.comm, &slot.request));
      break;
    case Collective::allgather: {
      int count = mpi_count(bytes, c);
      RINGRT_MPI(MPI_Iallgather(send, count, MPI_BYTE, out, count, MPI_BYTE, t.comm, &slot.request));
      break;
    }
    case Collective::broadcast:
      if (me == static_cast<size_t>(c.root) && in != out) std::memmove(out, in, bytes);
      RINGRT_MPI(MPI_Ibcast(out, mpi_count(bytes, c), MPI_BYTE, c.root, t.comm, &slot.request));
      break;
    default:
      throw InternalError(fmt::format("MPI's collective for {}", collective_name(c.collective)));
  }
  t.handed = true;
  t.in_flight.push_back(slot);
}

}  // namespace

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

Event Transfers::collective(Device& on, MPI_Comm comm, const Cluster::CollectiveCall& call, std::vector<Event> after) {
  if (!on.host_addressable())
    throw DeviceError(
        fmt::format("MPI's {} on {}: MPI reads no device memory here (Algorithm::mpi runs on cpu "
                    "devices); set allreduce.algorithm to ring",
                    collective_name(call.collective), on.name()));
  auto t = std::make_shared<Transfer>();
  t->dev = &on;
  t->call = call;
  t->comm = comm;
  {
    std::lock_guard<std::mutex> lock(direct_mu_);
    t->number = orders_[comm].called++;
  }
  return start(std::move(t), std::move(after));
}

// Posts t once every event of `after` completed, on the thread that completes the last of them (this one
// when they all have: the common case on the cpu backend, whose small kernels run inline); the first
// error among them completes t with it instead.
Event Transfers::start(std::shared_ptr<Transfer> t, std::vector<Event> after) {
  const RuntimeParams& params = runtime_params();  // this thread's copy: no environment read per transfer
  t->staged = !t->call && (!t->dev->host_addressable() || params.mpi_stage_host);
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
      } catch (...) {  // a collective is posted all the same: the other ranks' calls must still match
        std::exception_ptr& first = t->call ? t->upstream : t->error;
        if (!first) first = std::current_exception();
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
  {  // the thread that waits for the run tests it (unattended: else the progress thread)
    std::lock_guard<std::mutex> lock(direct_mu_);
    if (t->call) {
      post_in_order(std::move(t), done);
    } else {
      std::vector<std::shared_ptr<Transfer>> one{std::move(t)};
      advance_all(one, done);
      direct_.insert(direct_.end(), one.begin(), one.end());
    }
  }
  complete(done);
}

void Transfers::unattended() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    unattended_ = true;
  }
  cv_.notify_one();
}

void Transfers::post_in_order(std::shared_ptr<Transfer> t, std::vector<std::shared_ptr<Transfer>>& done) {
  Order& order = orders_[t->comm];
  order.ready.emplace(t->number, std::move(t));
  while (!order.ready.empty() && order.ready.begin()->first == order.posted) {
    std::vector<std::shared_ptr<Transfer>> one{std::move(order.ready.begin()->second)};
    order.ready.erase(order.ready.begin());
    ++order.posted;
    try {
      post_collective(*one[0]);
    } catch (...) {
      one[0]->error = std::current_exception();
    }
    advance_all(one, done);
    direct_.insert(direct_.end(), one.begin(), one.end());
  }
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
    t->done.set_done(t->error ? t->error : t->upstream);
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
  if (t.call) return progressed;  // a collective: one request, posted by post_in_order
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
      auto in_place = [&] {
        std::lock_guard<std::mutex> d(direct_mu_);
        return !direct_.empty();
      };
      if (unattended_ && !in_place()) unattended_ = false;  // all done
      if (staged.empty() && ready_.empty() && !unattended_)
        cv_.wait(lock, [&] { return stop_ || !ready_.empty() || unattended_; });
      if (stop_) break;
      for (auto& t : ready_) staged.push_back(std::move(t));
      ready_.clear();
    }
    if (staged.empty()) {  // unattended transfers in place alone: tested every kBackstop
      progress();
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, kBackstop, [&] { return stop_ || !ready_.empty(); });
      continue;
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
