// The cluster over MPI (runtime/device/cluster.hpp): started by cluster() when mpirun launched this
// process, on a thread of its own, so that a rank that never starts is a TimeoutError, not a hang.
// MPI_Init_thread(MPI_THREAD_MULTIPLE); hosts from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) or
// runtime.ranks_per_host; two communicators duplicated from MPI_COMM_WORLD, so that the transfers and
// the collectives never match each other's messages. Every collective opens with a header (what the
// rank is doing, a value), so ranks at different calls get a ConfigError, never each other's bytes.
// MPI_Finalize runs at exit when no transfer is pending (a job that timed out ends with abort()).
// Reference: Open MPI 4.1's man pages; MPI 3.1 (12.4.3: finalize on the thread that initialized).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/errors.hpp"
#include "core/hash.hpp"
#include "core/interrupt.hpp"
#include "core/params_internal.hpp"
#include "runtime/device/cluster.hpp"
#include "runtime/mpi/mpi.hpp"
#include "runtime/mpi/transfers.hpp"

namespace ringrt {
namespace {

using Clock = std::chrono::steady_clock;

// Ranks numbered by host: host h is the h-th distinct shared-memory node in rank order.
std::vector<int> hosts_of_ranks(const mpi::Comm& world, int ranks_per_host) {
  int n = world.size();
  std::vector<int> host(static_cast<size_t>(n));
  if (ranks_per_host > 0) {
    for (int r = 0; r < n; ++r) host[static_cast<size_t>(r)] = r / ranks_per_host;
    return host;
  }
  MPI_Comm node = MPI_COMM_NULL;
  RINGRT_MPI(MPI_Comm_split_type(world.get(), MPI_COMM_TYPE_SHARED, world.rank(), MPI_INFO_NULL, &node));
  mpi::Comm node_comm(node);
  // each rank learns the lowest world rank of its node; hosts are numbered in order of those
  int first = world.rank();
  RINGRT_MPI(MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, node_comm.get()));
  std::vector<int> firsts(static_cast<size_t>(n));
  RINGRT_MPI(MPI_Allgather(&first, 1, MPI_INT, firsts.data(), 1, MPI_INT, world.get()));
  std::vector<int> seen;
  for (int r = 0; r < n; ++r) {
    auto it = std::find(seen.begin(), seen.end(), firsts[static_cast<size_t>(r)]);
    host[static_cast<size_t>(r)] = static_cast<int>(it - seen.begin());
    if (it == seen.end()) seen.push_back(firsts[static_cast<size_t>(r)]);
  }
  return host;
}

// The name of every host (MPI_Get_processor_name of its first rank), by host number.
std::vector<std::string> host_names(const mpi::Comm& world, const std::vector<int>& host_of_rank, int hosts) {
  std::vector<char> names(host_of_rank.size() * MPI_MAX_PROCESSOR_NAME);
  char mine[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  RINGRT_MPI(MPI_Get_processor_name(mine, &len));
  RINGRT_MPI(MPI_Allgather(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                           world.get()));
  std::vector<std::string> out(static_cast<size_t>(hosts));
  for (size_t r = host_of_rank.size(); r-- > 0;)  // the first rank of each host names it
    out[static_cast<size_t>(host_of_rank[r])] = std::string(&names[r * MPI_MAX_PROCESSOR_NAME]);
  return out;
}

// What the MPI thread starts: MPI itself, the communicators and this rank's place. Shared with the
// thread, which outlives a constructor that gave up waiting for it (a rank that never starts).
struct MpiState {
  std::mutex mu;
  std::condition_variable cv;
  bool started = false, finalize = false, finalized = false;
  std::exception_ptr error;  // of the start-up
  mpi::Comm world, p2p, coll;
  RankInfo info;
  int tag_ub = 32767;
};

// On the MPI thread: MPI_Init_thread, then the ranks' places; every rank must ask for the same
// runtime.ranks_per_host (else a ConfigError on every rank). Blocking MPI calls: the constructor bounds
// the wait for them by the watchdog.
void start_mpi(MpiState& st) {
  int provided = 0;
  RINGRT_MPI(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided));
  st.world = mpi::Comm(MPI_COMM_WORLD);
  if (provided < MPI_THREAD_MULTIPLE)
    throw DeviceError(fmt::format("MPI: the library gives thread level {}, ringrt needs MPI_THREAD_MULTIPLE ({})",
                                  provided, MPI_THREAD_MULTIPLE));
  st.p2p = st.world.dup();
  st.coll = st.world.dup();
  RankInfo& info = st.info;
  info.rank = st.world.rank();
  info.ranks = st.world.size();
  int per_host = current_runtime_params().ranks_per_host;
  std::vector<int> all(static_cast<size_t>(info.ranks));
  RINGRT_MPI(MPI_Allgather(&per_host, 1, MPI_INT, all.data(), 1, MPI_INT, st.world.get()));
  for (int r = 0; r < info.ranks; ++r)
    if (all[static_cast<size_t>(r)] != per_host)
      throw ConfigError(fmt::format("the ranks differ in runtime.ranks_per_host: rank {} has {}, rank {} has {}",
                                    info.rank, per_host, r, all[static_cast<size_t>(r)]));
  info.host_of_rank = hosts_of_ranks(st.world, per_host);
  info.host = info.host_of_rank[static_cast<size_t>(info.rank)];
  info.hosts = *std::max_element(info.host_of_rank.begin(), info.host_of_rank.end()) + 1;
  info.host_names = host_names(st.world, info.host_of_rank, info.hosts);
  info.host_name = info.host_names[static_cast<size_t>(info.host)];
  int* tag_ub = nullptr;
  int found = 0;
  RINGRT_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &found));
  if (found && tag_ub) st.tag_ub = *tag_ub;
}

// The MPI thread: starts MPI, then waits to finalize it (MPI_Finalize belongs on the thread that
// initialized MPI).
void mpi_thread(const std::shared_ptr<MpiState>& st) {
  std::exception_ptr error;
  try {
    start_mpi(*st);
  } catch (...) {
    error = std::current_exception();
  }
  std::unique_lock<std::mutex> lock(st->mu);
  st->started = true;
  st->error = error;
  st->cv.notify_all();
  if (error) return;  // the process ends with the error (MPI_Abort or exit): nothing to finalize
  st->cv.wait(lock, [&] { return st->finalize; });
  st->p2p = mpi::Comm();
  st->coll = mpi::Comm();
  MPI_Finalize();
  st->finalized = true;
  st->cv.notify_all();
}

// A collective's header: what each rank is doing (a hash of its description) and a value.
struct Header {
  uint64_t what = 0, value = 0;
};

class MpiCluster final : public Cluster {
 public:
  // Starts MPI on its own thread and waits for it up to runtime.mpi_start_s or the watchdog, the longer (15 s
  // and 60 s by default). Throws TimeoutError when some rank does not start (MPI_Init waits for every rank),
  // ConfigError or DeviceError from the start-up.
  MpiCluster() : st_(std::make_shared<MpiState>()) {
    std::thread(mpi_thread, st_).detach();  // never joined: it ends with MPI_Finalize, or with the process
    // the watchdog, but at least runtime.mpi_start_s: MPI_Init connects every rank, seconds on a large or
    // loaded job, while a watchdog tuned for one item may be shorter
    auto start = std::chrono::milliseconds(std::llround(current_runtime_params().mpi_start_s * 1000));
    auto timeout = std::max<std::chrono::milliseconds>(watchdog_timeout(), start);
    std::unique_lock<std::mutex> lock(st_->mu);
    if (!st_->cv.wait_for(lock, timeout, [&] { return st_->started; }))
      throw TimeoutError(
          fmt::format("MPI did not start within {} ms (runtime.mpi_start_s, or runtime.watchdog_s when longer): "
                      "a rank of the job did not start or stopped, or MPI_Init took longer (it waits for every rank)",
                      timeout.count()));
    if (st_->error) std::rethrow_exception(st_->error);
    transfers_ = std::make_unique<mpi::Transfers>(st_->p2p.get(), st_->tag_ub);
  }

  // At exit: the ranks agree that every one of them is ending (a rank still waiting for a run this
  // one skipped gets a ConfigError at once, not a timeout; then the job ends with status 2), the
  // progress thread stops, then MPI_Finalize on the MPI thread, unless transfers are still pending
  // (their requests would never complete: the job ends without finalizing).
  void finalize() noexcept {
    if (interrupt_signal() != 0) stopped_exit(false);  // no agreement (the others are stopping), no MPI_Finalize
    try {
      agree("ending the job (every rank's last call)", 0, watchdog_timeout());
    } catch (const Interrupted&) {  // a stop while the others finish: this rank is stopped, not failed
      stopped_exit(true);
    } catch (const std::exception& e) {
      std::string line = fmt::format("ringrt: rank {}: {}\n", st_->info.rank, e.what());
      std::fwrite(line.data(), 1, line.size(), stderr);
      std::this_thread::sleep_for(std::chrono::seconds(1));  // the others report too (as the program does)
      abort(dynamic_cast<const TimeoutError*>(&e) ? 3 : 2);
    }
    bool clean = transfers_->pending() == 0 && parked_done();
    transfers_.reset();
    if (!clean) return;
    {
      std::lock_guard<std::mutex> lock(comms_mu_);
      comms_.clear();  // freed before MPI_Finalize
    }
    std::unique_lock<std::mutex> lock(st_->mu);
    st_->finalize = true;
    st_->cv.notify_all();
    st_->cv.wait_for(lock, kFinalizeWait, [&] { return st_->finalized; });
  }

  // A stop request at the job's end ends this rank with 128 + the signal, as a stopped run: no MPI_Finalize
  // (other ranks may never reach it), no MPI_Abort and no grace second (every rank of a stopped job is
  // stopping; a rank signalled alone ends the job when it exits). Output flushed first.
  [[noreturn]] void stopped_exit(bool during_agreement) noexcept {
    int sig = interrupt_signal();
    if (during_agreement) {
      std::string line = fmt::format(
          "ringrt: rank {}: interrupted by signal {} at the job's end (its runs completed)\n", st_->info.rank, sig);
      std::fwrite(line.data(), 1, line.size(), stderr);
    }
    std::fflush(nullptr);
    std::_Exit(128 + sig);
  }

  const RankInfo& info() const override { return st_->info; }

  Event send(Device& from, const void* src, size_t bytes, int peer, size_t item, std::vector<Event> after) override {
    return transfers_->send(from, src, bytes, peer, item, std::move(after));
  }
  Event recv(Device& to, void* dst, size_t bytes, int peer, size_t item, std::vector<Event> after) override {
    return transfers_->recv(to, dst, bytes, peer, item, std::move(after));
  }

  Event collective(Device& on, const CollectiveCall& call, std::vector<Event> after) override {
    MPI_Comm comm = MPI_COMM_NULL;
    {
      std::lock_guard<std::mutex> lock(comms_mu_);
      auto it = comms_.find(call.ranks);
      if (it == comms_.end())
        throw DeviceError(
            fmt::format("MPI's {} across ranks {}: no communicator was made for them "
                        "(prepare_collectives)",
                        collective_name(call.collective), fmt::join(call.ranks, ", ")));
      comm = it->second.get();
    }
    return transfers_->collective(on, comm, call, std::move(after));
  }

  void prepare_collectives(const std::vector<std::vector<int>>& rank_lists) override {
    constexpr size_t kMaxComms = 64;  // MPI's communicator ids are a finite resource; real jobs need one or two
    std::lock_guard<std::mutex> lock(comms_mu_);
    for (const std::vector<int>& ranks : rank_lists) {
      if (comms_.count(ranks)) continue;
      if (comms_.size() >= kMaxComms)
        throw ResourceError(fmt::format("MPI's collectives over more than {} lists of ranks in one job", kMaxComms));
      auto at = std::find(ranks.begin(), ranks.end(), st_->info.rank);
      int color = at == ranks.end() ? MPI_UNDEFINED : 0, key = static_cast<int>(at - ranks.begin());
      MPI_Comm made = MPI_COMM_NULL;  // every rank splits (a collective over the job): members in list order
      RINGRT_MPI(MPI_Comm_split(st_->world.get(), color, key, &made));
      comms_.emplace(ranks, mpi::Comm(made));
    }
  }

  void agree(const std::string& what, uint64_t value, std::chrono::milliseconds timeout) override {
    std::vector<Header> all = headers(what, value, timeout);
    std::vector<int> differ;
    for (size_t r = 0; r < all.size(); ++r)
      if (all[r].value != value) differ.push_back(static_cast<int>(r));
    if (!differ.empty())
      throw ConfigError(
          fmt::format("the ranks differ in {}: rank(s) {} differ from this rank ({}); every rank must "
                      "run the same program with the same config and settings",
                      what, fmt::join(differ, ", "), st_->info.rank));
  }

  std::vector<std::string> allgather(const std::string& what, const std::string& value,
                                     std::chrono::milliseconds timeout) override {
    std::vector<Header> all = headers(what, value.size(), timeout);
    size_t n = all.size();
    auto ex = std::make_shared<Exchange>();
    ex->sent = value;
    ex->lens.resize(n);
    ex->offsets.resize(n);
    int total = 0;
    for (size_t r = 0; r < n; ++r) {
      ex->lens[r] = static_cast<int>(all[r].value);
      ex->offsets[r] = total;
      total += ex->lens[r];
    }
    ex->gathered.assign(static_cast<size_t>(total), '\0');
    ex->requests.push_back(MPI_REQUEST_NULL);
    RINGRT_MPI(MPI_Iallgatherv(ex->sent.data(), static_cast<int>(ex->sent.size()), MPI_CHAR, ex->gathered.data(),
                               ex->lens.data(), ex->offsets.data(), MPI_CHAR, st_->coll.get(), &ex->requests[0]));
    auto deadline = Clock::now() + timeout;
    if (mpi::Waited w = mpi::wait_until(ex->requests[0], deadline); w != mpi::Waited::done)
      fail(ex, w,
           fmt::format("{} did not complete within {} ms: a rank has died, hangs, or runs another "
                       "program (every rank must make the same calls in the same order)",
                       what, timeout.count()),
           what);
    std::vector<std::string> out;
    for (size_t r = 0; r < n; ++r)
      out.push_back(ex->gathered.substr(static_cast<size_t>(ex->offsets[r]), static_cast<size_t>(ex->lens[r])));
    return out;
  }

  bool progress() override { return transfers_->progress(); }
  void unattended() override { transfers_->unattended(); }

  size_t parked() override {
    parked_done();
    std::lock_guard<std::mutex> lock(parked_mu_);
    return parked_.size();
  }

  [[noreturn]] void abort(int status) override {
    std::fflush(nullptr);
    MPI_Abort(MPI_COMM_WORLD, status);
    std::_Exit(status);  // MPI_Abort does not return; should it, the process still ends
  }

 private:
  static constexpr std::chrono::seconds kFinalizeWait{10};
  static constexpr int kHeaderTag = 1;  // on coll: the headers of collectives (the collectives have their own matching)

  // The buffers and requests of one exchange between the ranks (a round of headers, a gather), held on
  // the heap: a wait that ends early (a timeout, a stop) parks them, requests and buffers together, so
  // that a message arriving late, or a collective MPI cannot cancel, never writes freed memory.
  struct Exchange {
    Header mine;
    std::vector<Header> all;
    std::string sent, gathered;
    std::vector<int> lens, offsets;
    std::vector<MPI_Request> requests;
  };

  // Parks ex and throws: Interrupted for a stop (the job is ending: every rank got the signal, or the
  // launcher ends the job when this rank exits), TimeoutError with `late` for a timeout.
  [[noreturn]] void fail(const std::shared_ptr<Exchange>& ex, mpi::Waited how, const std::string& late,
                         const std::string& what) {
    {
      std::lock_guard<std::mutex> lock(parked_mu_);
      parked_.push_back(ex);
    }
    if (how == mpi::Waited::stopped)
      throw Interrupted(
          fmt::format("stopped by signal {} while waiting for the other ranks ({})", interrupt_signal(), what));
    throw TimeoutError(late);
  }

  // Whether every parked exchange completed (those done are dropped): MPI_Finalize needs none pending.
  bool parked_done() {
    std::lock_guard<std::mutex> lock(parked_mu_);
    std::erase_if(parked_, [](const std::shared_ptr<Exchange>& ex) {
      int done = 1;
      for (MPI_Request& r : ex->requests)
        if (r != MPI_REQUEST_NULL) {
          int flag = 0;
          if (MPI_Test(&r, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS || !flag) done = 0;
        }
      return done != 0;
    });
    return parked_.empty();
  }

  // Every rank's header: first of every collective, so that ranks at different calls (one gathers,
  // another agrees on a run) meet a ConfigError naming the call, not each other's payloads. Sent point
  // to point to every other rank (tag kHeaderTag; one pair's messages arrive in order), so that a
  // timeout names the ranks whose header never came.
  std::vector<Header> headers(const std::string& what, uint64_t value, std::chrono::milliseconds timeout) {
    const int n = st_->info.ranks, me = st_->info.rank;
    auto ex = std::make_shared<Exchange>();
    ex->mine = Header{fnv1a(what), value};
    ex->all.resize(static_cast<size_t>(n));
    ex->all[static_cast<size_t>(me)] = ex->mine;
    ex->requests.assign(2 * static_cast<size_t>(n), MPI_REQUEST_NULL);  // [r]: the receive from r, [n + r]: the send
    for (int r = 0; r < n; ++r) {
      if (r == me) continue;
      auto ru = static_cast<size_t>(r);
      RINGRT_MPI(MPI_Isend(&ex->mine, 2, MPI_UINT64_T, r, kHeaderTag, st_->coll.get(), &ex->requests[ru + n]));
      RINGRT_MPI(MPI_Irecv(&ex->all[ru], 2, MPI_UINT64_T, r, kHeaderTag, st_->coll.get(), &ex->requests[ru]));
    }
    auto deadline = Clock::now() + timeout;
    std::vector<int> missing;
    for (int r = 0; r < n; ++r) {
      if (r == me) continue;
      mpi::Waited w = mpi::wait_until(ex->requests[static_cast<size_t>(r)], deadline);
      if (w == mpi::Waited::stopped) fail(ex, w, "", what);
      if (w == mpi::Waited::timed_out) missing.push_back(r);
    }
    if (!missing.empty())
      fail(ex, mpi::Waited::timed_out,
           fmt::format("{}: rank(s) {} did not arrive within {} ms (died, stopped, still busy before it (a watchdog "
                       "shorter than the work between two calls: runtime.watchdog_s), or running another program: "
                       "every rank must make the same calls in the same order)",
                       what, fmt::join(missing, ", "), timeout.count()),
           what);
    for (size_t s = static_cast<size_t>(n); s < ex->requests.size(); ++s)
      if (mpi::Waited w = mpi::wait_until(ex->requests[s], deadline); w != mpi::Waited::done)
        fail(ex, w, fmt::format("{}: a header to another rank was not delivered within {} ms", what, timeout.count()),
             what);
    std::vector<int> elsewhere;
    for (size_t r = 0; r < ex->all.size(); ++r)
      if (ex->all[r].what != ex->mine.what) elsewhere.push_back(static_cast<int>(r));
    if (!elsewhere.empty())
      throw ConfigError(
          fmt::format("the ranks are at different calls: this rank ({}) at {}, rank(s) {} elsewhere; "
                      "every rank must make the same calls in the same order",
                      me, what, fmt::join(elsewhere, ", ")));
    return ex->all;
  }

  std::shared_ptr<MpiState> st_;
  std::unique_ptr<mpi::Transfers> transfers_;
  std::mutex comms_mu_;
  std::map<std::vector<int>, mpi::Comm> comms_;  // MPI's collectives': by their ranks (null where not a member)
  std::mutex parked_mu_;
  std::vector<std::shared_ptr<Exchange>> parked_;  // exchanges a timeout or a stop left pending
};

MpiCluster* the_cluster = nullptr;  // for the exit handler

std::unique_ptr<Cluster> make_mpi_cluster() {
  if (!mpi::launched_by_mpirun()) return nullptr;
  auto c = std::make_unique<MpiCluster>();
  the_cluster = c.get();
  std::atexit([] { the_cluster->finalize(); });
  return c;
}

}  // namespace

// Called by the generated register_builtin_backends() of a build with MPI (CMakeLists.txt).
void register_mpi_backend() { register_cluster_factory(make_mpi_cluster); }

}  // namespace ringrt
