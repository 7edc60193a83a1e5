// The cluster over MPI (runtime/device/cluster.hpp): started by cluster() when mpirun launched this
// process. MPI_Init_thread(MPI_THREAD_MULTIPLE); hosts from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)
// or runtime.ranks_per_host; three communicators duplicated from MPI_COMM_WORLD, so that the
// transfers, the collectives of agreement and the world's own traffic never match each other's
// messages. MPI_Finalize runs at exit when no transfer is pending (a job that timed out ends with
// abort()). Reference: Open MPI 4.1's man pages; MPI 3.1.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "rewrite/errors.hpp"
#include "rewrite/params.hpp"
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

class MpiCluster final : public Cluster {
 public:
  MpiCluster() {
    int provided = 0;
    RINGRT_MPI(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided));
    world_ = mpi::Comm(MPI_COMM_WORLD);
    if (provided < MPI_THREAD_MULTIPLE)
      throw DeviceError(fmt::format("MPI: the library gives thread level {}, ringrt needs MPI_THREAD_MULTIPLE ({})",
                                    provided, MPI_THREAD_MULTIPLE));
    p2p_ = world_.dup();
    coll_ = world_.dup();
    info_.rank = world_.rank();
    info_.ranks = world_.size();
    info_.host_of_rank = hosts_of_ranks(world_, current_runtime_params().ranks_per_host);
    info_.host = info_.host_of_rank[static_cast<size_t>(info_.rank)];
    info_.hosts = *std::max_element(info_.host_of_rank.begin(), info_.host_of_rank.end()) + 1;
    info_.host_names = host_names(world_, info_.host_of_rank, info_.hosts);
    info_.host_name = info_.host_names[static_cast<size_t>(info_.host)];
    int* tag_ub = nullptr;
    int found = 0;
    RINGRT_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &found));
    transfers_ = std::make_unique<mpi::Transfers>(p2p_.get(), found && tag_ub ? *tag_ub : 32767);
  }

  // At exit: the progress thread stops, then MPI_Finalize, unless transfers are still pending (their
  // requests would never complete: the job ends without finalizing).
  void finalize() {
    bool clean = transfers_->pending() == 0;
    transfers_.reset();
    if (!clean) return;
    p2p_ = mpi::Comm();
    coll_ = mpi::Comm();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }

  const RankInfo& info() const override { return info_; }

  Event send(Device& from, const void* src, size_t bytes, int peer, size_t item, std::vector<Event> after) override {
    return transfers_->send(from, src, bytes, peer, item, std::move(after));
  }
  Event recv(Device& to, void* dst, size_t bytes, int peer, size_t item, std::vector<Event> after) override {
    return transfers_->recv(to, dst, bytes, peer, item, std::move(after));
  }

  void agree(uint64_t hash, const std::string& what, std::chrono::milliseconds timeout) override {
    std::vector<uint64_t> all(static_cast<size_t>(info_.ranks));
    MPI_Request req = MPI_REQUEST_NULL;
    RINGRT_MPI(MPI_Iallgather(&hash, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, coll_.get(), &req));
    wait(req, timeout, "agreeing on " + what);
    std::vector<int> differ;
    for (int r = 0; r < info_.ranks; ++r)
      if (all[static_cast<size_t>(r)] != all[0]) differ.push_back(r);
    if (!differ.empty())
      throw ConfigError(
          fmt::format("the ranks differ in {}: rank 0 has hash {:016x}, rank(s) {} another; every rank "
                      "must run the same program with the same config and settings",
                      what, all[0], fmt::join(differ, ", ")));
  }

  std::vector<std::string> allgather(const std::string& value, std::chrono::milliseconds timeout) override {
    size_t n = static_cast<size_t>(info_.ranks);
    int len = static_cast<int>(value.size());
    std::vector<int> lens(n), offsets(n);
    MPI_Request req = MPI_REQUEST_NULL;
    RINGRT_MPI(MPI_Iallgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, coll_.get(), &req));
    wait(req, timeout, "gathering a value from every rank");
    int total = 0;
    for (size_t r = 0; r < n; ++r) {
      offsets[r] = total;
      total += lens[r];
    }
    std::string all(static_cast<size_t>(total), '\0');
    RINGRT_MPI(MPI_Iallgatherv(value.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(), MPI_CHAR,
                               coll_.get(), &req));
    wait(req, timeout, "gathering a value from every rank");
    std::vector<std::string> out;
    for (size_t r = 0; r < n; ++r)
      out.push_back(all.substr(static_cast<size_t>(offsets[r]), static_cast<size_t>(lens[r])));
    return out;
  }

  [[noreturn]] void abort(int status) override {
    std::fflush(nullptr);
    MPI_Abort(MPI_COMM_WORLD, status);
    std::_Exit(status);  // MPI_Abort does not return; should it, the process still ends
  }

 private:
  // Waits for a collective of coll_; a rank that does not arrive by the timeout is a TimeoutError.
  void wait(MPI_Request& req, std::chrono::milliseconds timeout, const std::string& what) {
    if (!mpi::wait_until(req, Clock::now() + timeout))
      throw TimeoutError(
          fmt::format("rank {}: {} did not complete within {} ms: a rank has died, hangs, or runs "
                      "another program (every rank must make the same calls in the same order)",
                      info_.rank, what, timeout.count()));
  }

  mpi::Comm world_, p2p_, coll_;
  RankInfo info_;
  std::unique_ptr<mpi::Transfers> transfers_;
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
