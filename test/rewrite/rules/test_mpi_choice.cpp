// The choice of MPI's own collectives (Algorithm::mpi, rewrite/rules/choice.cpp mpi_serves and
// collective_algorithm) and its lowering: across ranks of one device each it is one COLLECTIVE item whose
// algorithm is mpi; where MPI's cannot serve the ring runs. Pure rewriting: the device names carry the ranks
// ("rank1/CPU:0"), no MPI runs here (test/mpi/test_ranks.cpp runs it under mpirun).
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/params.hpp"
#include "rewrite/collective.hpp"
#include "rewrite/lower/lower.hpp"
#include "rewrite/rules/multi.hpp"
#include "rewrite/tuning.hpp"

BOOST_AUTO_TEST_SUITE(test_mpi_choice)

using namespace ringrt;
namespace fs = std::filesystem;

namespace {

// One device on each of `ranks` ranks, or `per_rank` on each.
DeviceTuple ranked(int ranks, int per_rank = 1, const std::string& kind = "CPU") {
  DeviceTuple out;
  for (int r = 0; r < ranks; ++r)
    for (int d = 0; d < per_rank; ++d) out.push_back("rank" + std::to_string(r) + "/" + kind + ":" + std::to_string(d));
  return out;
}

// The algorithm of every COLLECTIVE node the lowering of an allreduce of numel float32 over devs makes.
std::vector<std::string> collective_items(const DeviceTuple& devs, int64_t numel, const AllreduceSettings& s) {
  DeviceSpec tuple(devs);
  UOp buf = new_buffer(tuple, numel, DType::float32);
  Lowered low = lower_multi({buf.allreduce(Ops::ADD, tuple)}, s);
  std::vector<std::string> out;
  for (const UOp& u : low.roots[0].graph().toposort(low.roots))
    if (u.op() == Ops::COLLECTIVE) out.emplace_back(fused_name(collective_arg(u).algorithm));
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(mpi_serves_ranks_of_one_cpu_device_each) {
  auto serves = [](Collective c, const DeviceTuple& devs, DType dtype) {
    return mpi_serves(CollectiveSize::of(c, devs, 1000, dtype));
  };
  for (Collective c : kFusedCollectives) {
    BOOST_TEST(serves(c, ranked(2), DType::float32), c);
    BOOST_TEST(serves(c, ranked(4), DType::int64), c);
    BOOST_TEST(!serves(c, ranked(2, 2), DType::float32), c);         // two devices of a rank
    BOOST_TEST(!serves(c, ranked(2, 1, "HIP"), DType::float32), c);  // GPU memory
    BOOST_TEST(!serves(c, {"CPU:0", "CPU:1"}, DType::float32), c);   // one process
    BOOST_TEST(!serves(c, {"rank0/CPU:0"}, DType::float32), c);      // one rank
  }
  // MPI reduces no 16-bit float or FP8; it moves them
  for (DType d : {DType::float16, DType::bfloat16, DType::fp8e4m3}) {
    BOOST_TEST(!serves(Collective::allreduce, ranked(2), d));
    BOOST_TEST(!serves(Collective::reduce_scatter, ranked(2), d));
    BOOST_TEST(serves(Collective::allgather, ranked(2), d));
    BOOST_TEST(serves(Collective::broadcast, ranked(2), d));
  }
  BOOST_TEST(!serves(Collective::alltoall, ranked(2), DType::float32));
  // MPI_MAX and MPI_MIN drop a NaN the interpreter's max keeps: no float max or min; integers' are exact
  auto by = [](Ops op, DType d) {
    return mpi_serves(CollectiveSize::of(Collective::allreduce, ranked(2), 1000, d), op);
  };
  BOOST_TEST(!by(Ops::MAX, DType::float32));
  BOOST_TEST(!by(Ops::MIN, DType::float64));
  BOOST_TEST(by(Ops::MAX, DType::int32));
  BOOST_TEST(by(Ops::MUL, DType::float32));
  // MPI counts in int: at most INT_MAX bytes per device
  BOOST_TEST(mpi_serves(CollectiveSize::of(Collective::broadcast, ranked(2), int64_t{1} << 28, DType::float32)));
  BOOST_TEST(!mpi_serves(CollectiveSize::of(Collective::broadcast, ranked(2), int64_t{1} << 29, DType::float32)));
  // an allreduce inside one rank of a job: tinygrad's rule, never the cost model of this rank's own figures
  AllreduceSettings s;
  BOOST_TEST((collective_algorithm(
                  CollectiveSize::of(Collective::allreduce, {"rank0/CPU:0", "rank0/CPU:1"}, 65536, DType::float32),
                  s) == Algorithm::naive));
  BOOST_TEST(!serves(Collective::reduce, ranked(2), DType::float32));
}

// Automatic across ranks: mpi up to allreduce.mpi_bytes per device (the default's edge: 8 MiB of float32), the
// rule above it; a level set, a forced algorithm or mpi_bytes 0 keep the rule or the forced one.
BOOST_AUTO_TEST_CASE(automatic_across_ranks_is_mpi_up_to_mpi_bytes) {
  AllreduceSettings s;
  BOOST_TEST_REQUIRE(s.mpi_bytes == int64_t{8} << 20);
  auto algo = [](int64_t numel, const AllreduceSettings& settings, int per_rank = 1) {
    return collective_algorithm(CollectiveSize::of(Collective::allreduce, ranked(4, per_rank), numel, DType::float32),
                                settings);
  };
  BOOST_TEST((algo(1, s) == Algorithm::mpi));
  BOOST_TEST((algo(s.mpi_bytes / 4, s) == Algorithm::mpi));
  BOOST_TEST((algo(s.mpi_bytes / 4 + 1, s) == Algorithm::ring));  // the rule: > ring_threshold on 4 devices
  BOOST_TEST((algo(1000, s, 2) == Algorithm::naive));             // two devices of a rank: the rule
  AllreduceSettings never = s;
  never.mpi_bytes = 0;
  BOOST_TEST((algo(1000, never) == Algorithm::naive));
  AllreduceSettings off = s;
  off.tuning = "off";  // tinygrad's rule, across ranks as in one process
  BOOST_TEST((algo(1000, off) == Algorithm::naive));
  AllreduceSettings level = s;
  level.ring = 2;
  BOOST_TEST((algo(1000, level) == Algorithm::ring));
  AllreduceSettings forced = s;
  forced.algorithm = "all2all";
  BOOST_TEST((algo(1000, forced) == Algorithm::all2all));
  forced.algorithm = "mpi";
  BOOST_TEST((algo(s.mpi_bytes, forced) == Algorithm::mpi));  // forced: at any size
  // deterministic mode folds in tuple order, which MPI's collectives do not: the ring's direct form
  AllreduceSettings det = forced;
  det.deterministic = true;
  BOOST_TEST((form_under_settings(Algorithm::mpi, Collective::allreduce, det) == Algorithm::ring));
  // automatic, deterministic or over a wire: the rule (naive here), not mpi that would run as the ring; an allgather
  // moves bytes alike under both, and keeps mpi
  auto through = [&](const AllreduceSettings& settings, Collective collective = Collective::allreduce) {
    CollectiveSize c = CollectiveSize::of(collective, ranked(4), 1000, DType::float32);
    return form_under_settings(collective_algorithm(c, settings), collective, settings);
  };
  AllreduceSettings auto_det = s, wired = s;
  auto_det.deterministic = true;
  wired.wire = "bfloat16";
  BOOST_TEST((through(auto_det) == Algorithm::naive));
  BOOST_TEST((through(wired) == Algorithm::naive));
  BOOST_TEST((through(wired, Collective::allgather) == Algorithm::mpi));
  BOOST_TEST(!mpi_by_default(CollectiveSize::of(Collective::allreduce, ranked(4), 1000, DType::float32), wired));
}

// A tuning file's choice across as many ranks (`ringrt tune` under mpirun) wins over allreduce.mpi_bytes; an
// in-process choice for the same device count does not apply across ranks, nor one for another rank count.
BOOST_AUTO_TEST_CASE(a_tuned_choice_across_ranks_wins) {
  TunedChoice across{Collective::allreduce, "CPU", 4, DType::float32, 4096, 0, 0, Algorithm::all2all, {}};
  across.ranks = 4;
  TunedChoice local{Collective::allreduce, "CPU", 4, DType::float32, 4096, 0, 0, Algorithm::ring, {}};
  TuningTable t{ringrt_version(), machine_identity(), "now", {across, local}};
  set_bands(t.choices);
  fs::path dir = fs::temp_directory_path() / ("ringrt-mpi-choice-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string path = (dir / "t.yaml").string();
  std::ofstream(path) << tuning_yaml(t);
  AllreduceSettings s;
  s.tuning = path;
  auto algo = [&](int ranks, int per_rank) {
    return collective_algorithm(
        CollectiveSize::of(Collective::allreduce, ranked(ranks, per_rank), 1024, DType::float32), s);
  };
  BOOST_TEST((algo(4, 1) == Algorithm::all2all));  // tuned across 4 ranks
  BOOST_TEST((algo(2, 2) == Algorithm::naive));    // 4 devices over 2 ranks: untuned, the rule (mpi cannot serve)
  BOOST_TEST((algo(2, 1) == Algorithm::mpi));      // 2 ranks: untuned, mpi up to mpi_bytes
  fs::remove_all(dir);
}

// The lowering: one COLLECTIVE item of algorithm mpi across ranks of one device each; a forced mpi where MPI's
// cannot serve (one process, GPUs, two devices of a rank) lowers as the ring, with no COLLECTIVE item; over groups
// of two devices per rank, the leader form's allreduce across the leaders is MPI's.
BOOST_AUTO_TEST_CASE(the_lowering_makes_one_mpi_item) {
  AllreduceSettings s;
  BOOST_TEST((collective_items(ranked(3), 1000, s) == std::vector<std::string>{"mpi"}));
  AllreduceSettings forced = s;
  forced.algorithm = "mpi";
  BOOST_TEST(collective_items({"CPU:0", "CPU:1", "CPU:2"}, 1000, forced).empty());
  BOOST_TEST(collective_items(ranked(2, 1, "HIP"), 1000, forced).empty());
  BOOST_TEST(collective_items(ranked(2, 2), 1000, forced).empty());
  AllreduceSettings grouped = s;
  for (const std::string& d : ranked(2, 2)) grouped.groups[d] = d[4] - '0';  // rank<R>/...: each rank a group
  BOOST_TEST((collective_items(ranked(2, 2), 1000, grouped) == std::vector<std::string>{"mpi"}));
  grouped.hierarchical = "reduce_scatter";  // each share across the groups: two MPI allreduces
  BOOST_TEST((collective_items(ranked(2, 2), 1000, grouped) == std::vector<std::string>{"mpi", "mpi"}));
  // a reduce onto one root, which MPI's collective does not serve: chosen automatically, tinygrad's rule (naive on
  // two devices); forced, the ring
  DeviceSpec tuple(ranked(2));
  UOp buf = new_buffer(tuple, 256, DType::float32);
  for (const char* algorithm : {"auto", "mpi"}) {
    AllreduceSettings r = s;
    r.algorithm = algorithm;
    Lowered low = lower_multi({buf.allreduce(Ops::ADD, DeviceSpec("rank1/CPU:0"))}, r);
    BOOST_TEST(algorithm_names(low.algorithms) ==
                   std::vector<std::string>{std::string(algorithm) == "auto" ? "naive" : "ring"},
               algorithm);
  }
}

BOOST_AUTO_TEST_SUITE_END()
