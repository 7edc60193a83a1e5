// ringrt across MPI ranks (runtime/mpi/). Run under mpirun only (CTest: mpi.ranks_<np>, one test per
// mpirun; see cmake/RingrtTests.cmake): every rank runs every case in the same order, as an SPMD
// program does, and each checks the values on its own devices against host arithmetic. The CTest
// environment sets RINGRT_RANKS_PER_HOST=1, so every rank is a host of its own and the hierarchical
// forms group by rank.
//
// Inputs are small integers, exact in every dtype, and differ per global device: device g holds
// element i = ((g * 7 + i * 3) % 23) - 11, so a sum and a max differ from any device's own value.
// clang-format off
#include <boost/test/unit_test.hpp>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
// clang-format on

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "core/errors.hpp"
#include "core/interrupt.hpp"
#include "core/settings.hpp"
#include "runtime/api/internal.hpp"
#include "runtime/device/cluster.hpp"
#include "testing/checks.hpp"
#include "testing/devices.hpp"

BOOST_AUTO_TEST_SUITE(test_ranks)

namespace bdata = boost::unit_test::data;
using namespace ringrt;

namespace {

double input_value(int64_t g, int64_t i) { return static_cast<double>((g * 7 + i * 3) % 23) - 11; }

// The global devices with `per_rank` cpu devices on every rank.
std::vector<std::string> devices_with(int per_rank) { return global_devices(cpu_devices(per_rank)); }

// One allreduce case: its algorithm (naive, ring, all2all, leader: the hierarchical leader form,
// reduce_scatter: the hierarchical bandwidth form), devices per rank, dtype, op and count.
struct Case {
  std::string algo;
  int per_rank;
  DType dtype;
  ReduceOp op;
  int64_t count;
};

std::ostream& operator<<(std::ostream& os, const Case& c) {
  return os << c.algo << " x" << c.per_rank << " " << dtype_name(c.dtype) << " " << reduce_op_name(c.op)
            << " n=" << c.count;
}

AllreduceSettings settings_for(const Case& c, const std::vector<std::string>& devs) {
  AllreduceSettings s = current_settings();
  s.ring = c.algo == "ring" ? 2 : 0;
  s.all2all = c.algo == "all2all" ? 2 : 0;
  s.groups.clear();
  if (c.algo == "leader" || c.algo == "reduce_scatter") {
    s.hierarchical = c.algo;
    for (const std::string& d : devs) s.groups[d] = split_rank(d)->rank;  // every rank a host (a group)
  }
  return s;
}

// #wrong of the allreduce of c over every rank's devices, on this rank's devices.
int64_t wrong_values(const Case& c) {
  std::vector<std::string> devs = devices_with(c.per_rank);
  ScopedSettings scope(settings_for(c, devs));
  int64_t ndev = static_cast<int64_t>(devs.size());
  std::vector<HostBuffer> rows;
  for (int64_t g = 0; g < ndev; ++g) {
    HostBuffer row(c.dtype, {1, c.count});
    for (int64_t i = 0; i < c.count; ++i) row.set(i, input_value(g, i));
    rows.push_back(std::move(row));
  }
  Tensor result = Tensor::from_shards(rows, devs, 0).reduce(c.op, {0});
  // this rank's devices against the host (testing/checks.hpp), without the schedule: planning alone would not meet
  // the other ranks at the same calls
  testing::ResultCheck check =
      testing::check_values(result.local_host_shards(), devs, testing::reduction_expected(rows, c.op),
                            {"allreduce", c.algo, std::string(dtype_name(c.dtype)), ""});
  BOOST_TEST(check.devices.size() == static_cast<size_t>(c.per_rank));
  BOOST_TEST(check.ok(), check.message());
  return check.wrong();
}

const std::vector<Case> kCases = {
    // every algorithm with 1, 2 and 3 devices per rank; odd counts, and fewer elements than devices
    {"naive", 1, DType::float32, ReduceOp::sum, 37},
    {"naive", 2, DType::int32, ReduceOp::max, 5},
    {"naive", 3, DType::float32, ReduceOp::sum, 2},
    {"ring", 1, DType::float32, ReduceOp::sum, 1001},
    {"ring", 2, DType::float16, ReduceOp::sum, 37},
    {"ring", 3, DType::bfloat16, ReduceOp::max, 3},
    {"all2all", 1, DType::int32, ReduceOp::sum, 64},
    {"all2all", 2, DType::float32, ReduceOp::max, 37},
    {"all2all", 3, DType::float16, ReduceOp::sum, 1001},
    {"leader", 1, DType::float32, ReduceOp::sum, 37},
    {"leader", 2, DType::int32, ReduceOp::sum, 1001},
    {"leader", 3, DType::bfloat16, ReduceOp::max, 5},
    {"reduce_scatter", 2, DType::float32, ReduceOp::sum, 1001},
    {"reduce_scatter", 3, DType::int32, ReduceOp::max, 37},
    {"reduce_scatter", 2, DType::float16, ReduceOp::sum, 3},
};

}  // namespace

BOOST_AUTO_TEST_SUITE(ranks)

BOOST_FIXTURE_TEST_CASE(the_global_device_list_names_rank_and_device, testing::MpiRanks<2>) {
  const RankInfo& me = rank;
  BOOST_TEST_REQUIRE(me.ranks >= 2);  // run by mpirun (CTest mpi.ranks_<np>)
  const std::vector<std::string>& devs = devices;
  BOOST_TEST(local == (std::vector<std::string>{"CPU:0", "CPU:1"}));
  BOOST_TEST(devs.size() == static_cast<size_t>(2 * me.ranks));
  for (int r = 0; r < me.ranks; ++r)
    for (int d = 0; d < 2; ++d) {
      std::string name = "rank" + std::to_string(r) + "/CPU:" + std::to_string(d);
      BOOST_TEST(devs.at(static_cast<size_t>(2 * r + d)) == name);
      BOOST_TEST(is_local_device(name) == (r == me.rank));
    }
  BOOST_TEST(me.hosts == me.ranks);  // RINGRT_RANKS_PER_HOST=1
  BOOST_TEST(me.host == me.rank);
  BOOST_TEST(sum_over_ranks(me.rank + 1) == me.ranks * (me.ranks + 1) / 2);
  BOOST_TEST(max_over_ranks(0.1 * me.rank) == 0.1 * (me.ranks - 1));  // exactly: the values cross in hexadecimal
  BOOST_TEST(std::isnan(max_over_ranks(me.rank == me.ranks - 1 ? NAN : 1.0)));
}

BOOST_DATA_TEST_CASE(allreduce_matches_host_arithmetic, bdata::make(kCases), c) {
  BOOST_TEST(sum_over_ranks(wrong_values(c)) == 0);
}

// GPU memory crosses ranks through host staging buffers, chunk by chunk: forced on the cpu backend,
// with chunks of 4 KiB, a 40,000-byte ring allreduce moves several chunks per copy.
BOOST_AUTO_TEST_CASE(host_staged_transfers_match_host_arithmetic) {
  RuntimeParams p = current_runtime_params();
  p.mpi_stage_host = true;
  p.mpi_chunk_bytes = 4096;
  set_runtime_params(p, {"runtime.mpi_stage_host", "runtime.mpi_chunk_bytes"});
  int64_t wrong = wrong_values({"ring", 2, DType::float32, ReduceOp::sum, 10000});
  reset_runtime_params();
  BOOST_TEST(sum_over_ranks(wrong) == 0);
}

// Ranks that plan different programs stop with the same ConfigError on every rank, never a hang:
// rank 1 forces ring, the others naive.
BOOST_AUTO_TEST_CASE(a_plan_that_differs_between_ranks_is_an_error_on_every_rank) {
  std::vector<std::string> devs = devices_with(1);
  AllreduceSettings s = current_settings();
  s.ring = rank_info().rank == 1 ? 2 : 0;
  s.all2all = 0;
  ScopedSettings scope(s);
  std::vector<HostBuffer> rows(devs.size(), HostBuffer(DType::float32, {1, 4099}));
  Tensor result = Tensor::from_shards(std::move(rows), devs, 0).sum({0});
  BOOST_CHECK_EXCEPTION(result.realize(), ConfigError, [](const ConfigError& e) {
    return std::string(e.what()).find("the ranks differ in the plan") != std::string::npos;
  });
}

// The plan's hash covers the kernels' code: ranks that reduce with different ops (equal shapes, equal
// copies) stop with a ConfigError, never silently different results.
BOOST_AUTO_TEST_CASE(an_op_that_differs_between_ranks_is_an_error_on_every_rank) {
  std::vector<std::string> devs = devices_with(1);
  std::vector<HostBuffer> rows(devs.size(), HostBuffer(DType::float32, {1, 37}));
  Tensor x = Tensor::from_shards(std::move(rows), devs, 0);
  Tensor result = rank_info().rank == 1 ? x.max({0}) : x.sum({0});
  BOOST_CHECK_EXCEPTION(result.realize(), ConfigError, [](const ConfigError& e) {
    return std::string(e.what()).find("the ranks differ in the plan") != std::string::npos;
  });
}

// The chunk size of transfers between ranks is agreed with the plan: MPI matches chunk by chunk.
BOOST_AUTO_TEST_CASE(a_chunk_size_that_differs_between_ranks_is_an_error_on_every_rank) {
  RuntimeParams p = current_runtime_params();
  p.mpi_chunk_bytes = rank_info().rank == 1 ? 8192 : 4096;
  set_runtime_params(p, {"runtime.mpi_chunk_bytes"});
  std::vector<std::string> devs = devices_with(1);
  std::vector<HostBuffer> rows(devs.size(), HostBuffer(DType::float32, {1, 4099}));
  Tensor result = Tensor::from_shards(std::move(rows), devs, 0).sum({0});
  BOOST_CHECK_EXCEPTION(result.realize(), ConfigError, [](const ConfigError& e) {
    return std::string(e.what()).find("the ranks differ in the plan") != std::string::npos;
  });
  reset_runtime_params();
}

namespace {
// The kinds over 2 cpu devices per rank with the ring forced, each device's group its rank (grouped: the
// hierarchical reduce-scatter and allgather) or none; every device's values checked on its own rank.
void expect_collectives(const std::vector<std::string>& kinds, bool grouped) {
  std::vector<std::string> devs = devices_with(2);
  AllreduceSettings s = current_settings();
  s.ring = 2;
  s.all2all = 0;
  s.groups.clear();
  if (grouped)
    for (const std::string& d : devs) s.groups[d] = split_rank(d)->rank;
  ScopedSettings scope(s);
  int64_t n = static_cast<int64_t>(devs.size()), c = 3, count = n * c, root = n - 1;
  std::vector<HostBuffer> rows;
  for (int64_t g = 0; g < n; ++g) {
    rows.push_back(HostBuffer(DType::int32, {count}));
    for (int64_t i = 0; i < count; ++i) rows.back().set(i, input_value(g, i));
  }
  Tensor x = Tensor::from_shards(rows, devs, 0);
  for (const std::string& kind : kinds) {
    Tensor r = testing::apply_collective(kind, x, ReduceOp::sum, static_cast<int>(root));
    if (grouped) BOOST_TEST(r.algorithms() == std::vector<std::string>{"hierarchical"}, kind);
    testing::ResultCheck check =
        testing::check_values(r.local_host_shards(), r.devices(),
                              testing::collective_expected(kind, rows, ReduceOp::sum, static_cast<int>(root)),
                              {kind, grouped ? "hierarchical" : "ring", "int32", ""});
    size_t mine = kind != "reduce" ? 2u : is_local_device(devs.back()) ? 1u : 0u;
    BOOST_TEST(check.devices.size() == mine, kind);
    BOOST_TEST(check.ok(), check.message());
    BOOST_TEST(sum_over_ranks(check.wrong()) == 0, kind);
  }
}
}  // namespace

// Every collective across the ranks (2 cpu devices per rank, ring forced, int32 sum): each of this
// rank's devices holds what host arithmetic gives: reduce_scatter its chunk of the sum, allgather every
// device's buffer, alltoall slot i from device i, broadcast the root's (the last device), reduce_to the
// sum on the root's rank alone.
BOOST_AUTO_TEST_CASE(every_collective_matches_host_arithmetic) {
  expect_collectives({"reduce_scatter", "allgather", "alltoall", "broadcast", "reduce"}, false);
}

// Each rank a group of 2 devices: the hierarchical reduce-scatter and allgather (inside each rank, then
// across the ranks among the devices of one index) give the same values.
BOOST_AUTO_TEST_CASE(hierarchical_collectives_match_host_arithmetic) {
  expect_collectives({"reduce_scatter", "allgather"}, true);
}

// allreduce.deterministic over the job's 4 devices, 4 ranks x 1 device (mpi.ranks_4) or 2 x 2 (mpi.ranks_2), each
// rank a device group: naive, ring, all2all, the hierarchical leader and reduce_scatter forms and reduce_to give,
// on this rank's devices, the bits of the interpreter's fold over the 4 inputs in device order, which the cpu
// devices of one process give too (test/rewrite/rules/test_deterministic.cpp). Inputs round: +-[0.5, 2).
BOOST_AUTO_TEST_CASE(deterministic_bits_for_any_split_into_ranks) {
  int ranks = rank_info().ranks;
  if (ranks < 1 || 4 % ranks != 0) return;
  std::vector<std::string> devs = devices_with(4 / ranks);
  for (DType dtype : {DType::float16, DType::bfloat16, DType::float32, DType::float64})
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod}) {
      HostBuffer all(dtype, {4, 37});
      std::vector<HostBuffer> rows;
      for (int64_t g = 0; g < 4; ++g) {
        HostBuffer row(dtype, {1, 37});
        for (int64_t i = 0; i < 37; ++i) {
          double v = (((g * 7919 + i * 104729) % 1000) / 1000.0 * 1.5 + 0.5) * ((g + i) % 2 ? -1 : 1);
          row.set(i, v);
          all.set(g * 37 + i, row.get(i));
        }
        rows.push_back(std::move(row));
      }
      HostBuffer oracle = Tensor::from_host(all).reduce(op, {0}).interpret();
      for (std::string algo : {"naive", "ring", "all2all", "leader", "reduce_scatter", "reduce_to"}) {
        BOOST_TEST_CONTEXT(algo << " " << dtype_name(dtype) << " " << reduce_op_name(op)) {
          AllreduceSettings s = settings_for({algo == "reduce_to" ? "leader" : algo, 1, dtype, op, 37}, devs);
          s.deterministic = true;
          ScopedSettings scope(s);
          Tensor x = Tensor::from_shards(rows, devs, 0);
          Tensor r = algo == "reduce_to" ? x.reduce_to(3, op) : x.reduce(op, {0});
          int64_t differ = 0;
          for (const auto& [dev, v] : r.local_host_shards()) differ += v.bytes != oracle.bytes;
          BOOST_TEST(sum_over_ranks(differ) == 0);
        }
      }
    }
}

// A stop request (SIGINT/SIGTERM: core/interrupt.hpp) during a wait for the other ranks ends the wait with
// Interrupted, not at the watchdog (a minute here), and leaves its requests parked with their buffers: the
// other ranks, arriving late, send their headers into that parked memory (freed memory would take them),
// and once they have the call completes and is dropped.
BOOST_AUTO_TEST_CASE(a_stop_ends_a_wait_and_its_buffers_outlive_its_requests) {
  Cluster* c = cluster();
  BOOST_TEST_REQUIRE(c != nullptr);
  const auto timeout = std::chrono::seconds(60);
  if (rank_info().rank == 0) {
    std::thread stop([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      request_interrupt(SIGTERM);
    });
    auto started = std::chrono::steady_clock::now();
    BOOST_CHECK_THROW(c->agree("a stopped call", 7, timeout), Interrupted);
    auto waited = std::chrono::steady_clock::now() - started;
    stop.join();
    clear_interrupt();
    BOOST_TEST(waited < timeout);   // the stop ended it, not the watchdog
    BOOST_TEST(c->parked() == 1u);  // the others have not sent their headers yet
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
  }
  if (rank_info().rank != 0) c->agree("a stopped call", 7, timeout);  // its header lands in rank 0's parked memory
  c->agree("after the stopped call", 1, timeout);
  if (rank_info().rank == 0) {
    for (int i = 0; i < 500 && c->parked() != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    BOOST_TEST(c->parked() == 0u);  // completed, then dropped
  }
}

// MPI's own collectives (allreduce.algorithm mpi), one cpu device per rank: the allreduce in every dtype MPI
// reduces with every op MPI keeps the interpreter's values for (not a float max or min: MPI drops NaNs),
// reduce_scatter, allgather and broadcast run as algorithm mpi (one item: the cluster's MPI_I* call) and give host
// arithmetic's values; where MPI's cannot serve (a 16-bit float sum, a reduce onto one root) the ring runs instead,
// with the same values.
BOOST_AUTO_TEST_CASE(mpi_collectives_match_host_arithmetic) {
  std::vector<std::string> devs = devices_with(1);
  AllreduceSettings s = current_settings();
  s.algorithm = "mpi";
  s.groups.clear();
  ScopedSettings scope(s);
  auto n = static_cast<int64_t>(devs.size());
  auto rows_of = [&](DType dtype, int64_t count, bool positive) {
    std::vector<HostBuffer> rows;
    for (int64_t g = 0; g < n; ++g) {
      rows.push_back(HostBuffer(dtype, {1, count}));
      for (int64_t i = 0; i < count; ++i)
        rows.back().set(
            i, positive ? std::abs(input_value(g, i)) / 4 : input_value(g, i) / (dtype == DType::bool_ ? 11 : 1));
    }
    return rows;
  };
  int64_t wrong = 0;
  for (DType dtype : {DType::float32, DType::float64, DType::int32, DType::int64, DType::int8, DType::uint8,
                      DType::bool_, DType::float16})
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::max, ReduceOp::min}) {
      if (dtype == DType::float16 && op != ReduceOp::sum) continue;  // (its products round: the ring's order)
      std::string what = fmt::format("{} {}", dtype_name(dtype), reduce_op_name(op));
      std::vector<HostBuffer> rows = rows_of(dtype, 37, dtype == DType::uint8 || op == ReduceOp::prod);
      Tensor r = Tensor::from_shards(rows, devs, 0).reduce(op, {0});
      // 16-bit floats and float max and min (MPI drops NaNs there) run the ring
      bool ring = dtype == DType::float16 || (is_float(dtype) && (op == ReduceOp::max || op == ReduceOp::min));
      std::string want = ring ? "ring" : "mpi";
      BOOST_TEST(r.algorithms() == std::vector<std::string>{want}, what);
      testing::ResultCheck check = testing::check_values(
          r.local_host_shards(), devs, testing::reduction_expected(rows, op), {"allreduce", want, what, ""});
      BOOST_TEST(check.ok(), check.message());
      wrong += check.wrong();
    }
  std::vector<HostBuffer> flat = rows_of(DType::int32, n * 5, false);
  for (HostBuffer& row : flat) row.shape = {n * 5};
  Tensor x = Tensor::from_shards(flat, devs, 0);
  int root = static_cast<int>(n - 1);
  for (const std::string kind : {"reduce_scatter", "allgather", "broadcast", "reduce"}) {
    Tensor r = testing::apply_collective(kind, x, ReduceOp::sum, root);
    std::string want = kind == "reduce" ? "ring" : "mpi";
    BOOST_TEST(r.algorithms() == std::vector<std::string>{want}, kind);
    testing::ResultCheck check =
        testing::check_values(r.local_host_shards(), r.devices(),
                              testing::collective_expected(kind, flat, ReduceOp::sum, root), {kind, want, "int32", ""});
    BOOST_TEST(check.ok(), check.message());
    wrong += check.wrong();
  }
  // in place (DDP's gradients): the result is the source buffer itself, MPI_IN_PLACE
  Tensor grads = Tensor::from_shards(rows_of(DType::float32, 1001, false), devs, 0);
  std::vector<HostBuffer> before = rows_of(DType::float32, 1001, false);
  grads.allreduce_in_place(ReduceOp::max);
  testing::ResultCheck check =
      testing::check_values(grads.local_host_shards(), devs, testing::reduction_expected(before, ReduceOp::max),
                            {"allreduce_in_place", "mpi", "float32", ""});
  BOOST_TEST(check.ok(), check.message());
  wrong += check.wrong();
  BOOST_TEST(sum_over_ranks(wrong) == 0);
}

// Automatic (allreduce.algorithm auto, the levels at their defaults): across ranks of one device each, MPI's own
// allreduce up to allreduce.mpi_bytes per device, tinygrad's rule above it; the hierarchical form over groups of 2
// devices per rank takes MPI's for its allreduce across the groups' leaders (one device per rank).
BOOST_AUTO_TEST_CASE(the_automatic_choice_takes_mpi_up_to_mpi_bytes) {
  AllreduceSettings s = current_settings();
  s.algorithm = "auto";
  s.groups.clear();
  s.mpi_bytes = 4096;
  int64_t wrong = 0;
  for (int64_t count : {1024, 1025}) {
    ScopedSettings scope(s);
    std::vector<std::string> devs = devices_with(1);
    std::vector<HostBuffer> rows;
    for (size_t g = 0; g < devs.size(); ++g) {
      rows.push_back(HostBuffer(DType::float32, {1, count}));
      for (int64_t i = 0; i < count; ++i) rows.back().set(i, input_value(static_cast<int64_t>(g), i));
    }
    Tensor r = Tensor::from_shards(rows, devs, 0).sum({0});
    BOOST_TEST((r.algorithms().at(0) == "mpi") == (count * 4 <= s.mpi_bytes), count);
    testing::ResultCheck check =
        testing::check_values(r.local_host_shards(), devs, testing::reduction_expected(rows, ReduceOp::sum),
                              {"allreduce", "auto", "float32", ""});
    BOOST_TEST(check.ok(), check.message());
    wrong += check.wrong();
  }
  std::vector<std::string> devs = devices_with(2);
  AllreduceSettings grouped = s;
  for (const std::string& d : devs) grouped.groups[d] = split_rank(d)->rank;
  ScopedSettings scope(grouped);
  std::vector<HostBuffer> rows;
  for (size_t g = 0; g < devs.size(); ++g) {
    rows.push_back(HostBuffer(DType::int32, {1, 37}));
    for (int64_t i = 0; i < 37; ++i) rows.back().set(i, input_value(static_cast<int64_t>(g), i));
  }
  Tensor r = Tensor::from_shards(rows, devs, 0).sum({0});
  BOOST_TEST(r.algorithms() == std::vector<std::string>{"hierarchical"});
  std::vector<FusedItem> items = r.schedule().fused_items;  // the leaders' allreduce: one MPI item
  BOOST_TEST_REQUIRE(items.size() == 1u);
  BOOST_TEST(items[0].algorithm == "mpi");
  BOOST_TEST(items[0].collective == "allreduce");
  testing::ResultCheck check =
      testing::check_values(r.local_host_shards(), devs, testing::reduction_expected(rows, ReduceOp::sum),
                            {"allreduce", "hierarchical", "int32", ""});
  BOOST_TEST(check.ok(), check.message());
  BOOST_TEST(sum_over_ranks(wrong + check.wrong()) == 0);
}

namespace {
// Every rank of the job in order, its communicator for MPI's collectives made (Cluster::prepare_collectives).
std::vector<int> every_rank_prepared(Cluster& c) {
  std::vector<int> all;
  for (int r = 0; r < rank_info().ranks; ++r) all.push_back(r);
  c.prepare_collectives({all});
  return all;
}
}  // namespace

// The cluster posts each communicator's collectives in the order they were called, whatever order their data
// becomes ready in (MPI matches collectives by their order): rank 0's first allreduce waits 50 ms for its data
// while its second is ready at once, and every rank's two results are still their own sums. An error of an
// event a collective waited for fails that collective's event on its rank, yet the collective is posted, so
// the next one still matches.
BOOST_AUTO_TEST_CASE(collectives_post_in_call_order_whatever_order_their_data_is_ready) {
  Cluster* c = cluster();
  BOOST_TEST_REQUIRE(c != nullptr);
  const RankInfo& me = rank_info();
  std::vector<int> all = every_rank_prepared(*c);
  Device& dev = device("CPU:0");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  const int sum = me.ranks * (me.ranks + 1) / 2;
  for (bool fail : {false, true}) {
    std::vector<float> a_in(64, static_cast<float>(me.rank + 1)), a_out(64), b_in(64, 10.0f * (me.rank + 1)), b_out(64);
    Cluster::CollectiveCall a{
        Collective::allreduce, ReduceOp::sum, DType::float32, all, a_in.data(), a_out.data(), 64, 0};
    Cluster::CollectiveCall b = a;
    b.input = b_in.data();
    b.output = b_out.data();
    Event gate;
    Event ea =
        c->collective(dev, a, me.rank == 0 ? std::vector<Event>{gate} : std::vector<Event>{});  // the others': ready
    Event eb = c->collective(dev, b, {});
    if (me.rank == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    gate.set_done(fail ? std::make_exception_ptr(DeviceError("the planted upstream error")) : nullptr);
    if (fail && me.rank == 0)
      BOOST_CHECK_THROW(wait_across_ranks(ea, deadline), DeviceError);
    else
      BOOST_TEST(wait_across_ranks(ea, deadline));
    BOOST_TEST(wait_across_ranks(eb, deadline));
    if (!fail) BOOST_TEST(std::count(a_out.begin(), a_out.end(), static_cast<float>(sum)) == 64);
    BOOST_TEST(std::count(b_out.begin(), b_out.end(), 10.0f * sum) == 64, fail);
  }
}

// A wait that gives up (a timeout, a stop) leaves its transfers to the transport's own thread (Cluster::unattended,
// which a run's early end calls): rank 0 stops waiting for an allreduce after 20 ms, the others call theirs 200 ms
// later, and rank 0's completes, with its sum, while no thread of rank 0 tests it.
BOOST_AUTO_TEST_CASE(a_collective_left_unattended_completes_on_the_transport_thread) {
  Cluster* c = cluster();
  BOOST_TEST_REQUIRE(c != nullptr);
  const RankInfo& me = rank_info();
  std::vector<int> all = every_rank_prepared(*c);
  std::vector<int32_t> in(1000, me.rank + 1), out(1000);
  Cluster::CollectiveCall call{Collective::allreduce, ReduceOp::sum, DType::int32, all, in.data(), out.data(), 1000, 0};
  if (me.rank != 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  Event e = c->collective(device("CPU:0"), call, {});
  auto now = std::chrono::steady_clock::now();
  if (me.rank == 0) {
    BOOST_TEST(!wait_across_ranks(e, now + std::chrono::milliseconds(20)));
    c->unattended();
    for (int i = 0; i < 1000 && !e.done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    BOOST_TEST(e.done());
  } else {
    BOOST_TEST(wait_across_ranks(e, now + std::chrono::seconds(30)));
  }
  BOOST_TEST(std::count(out.begin(), out.end(), me.ranks * (me.ranks + 1) / 2) == 1000);
}

// Ranks at different calls (one sums a value, the others run a program) meet a ConfigError naming
// the call on every rank, not each other's messages. Last: the ranks' counts of runs differ afterwards.
BOOST_AUTO_TEST_CASE(ranks_at_different_calls_get_an_error_on_every_rank) {
  std::vector<std::string> devs = devices_with(1);
  std::vector<HostBuffer> rows(devs.size(), HostBuffer(DType::float32, {1, 37}));
  Tensor result = Tensor::from_shards(std::move(rows), devs, 0).sum({0});
  auto at_different_calls = [](const ConfigError& e) {
    return std::string(e.what()).find("the ranks are at different calls") != std::string::npos;
  };
  if (rank_info().rank == 1)
    BOOST_CHECK_EXCEPTION(sum_over_ranks(1), ConfigError, at_different_calls);
  else
    BOOST_CHECK_EXCEPTION(result.realize(), ConfigError, at_different_calls);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
