// ringrt's allreduce (float32 sum over cpu devices), timed like its peers in scripts/bench-peers.sh.
//
// For every size: the input (N, count) is sharded over CPU:0..N-1 and realized (untimed); each algorithm
// runs `warmup` untimed allreduces (which build and compile its program); then `blocks` rounds each time
// one block of `iters` allreduces of every algorithm in turn (paired: the algorithms see the same
// machine), each allreduce being what `ringrt run` times (build the lazy sum over axis 0, realize it);
// each algorithm's best block's time per allreduce is reported. The last result is checked on every
// device against the exact sum (inputs are small integers). `deterministic` is the automatic choice with
// allreduce.deterministic on (every element folded in device order; docs/deterministic.md). `wire_bfloat16`,
// `wire_fp8_e4m3` and `wire_fp8_e5m2` are the automatic choice with allreduce.wire set (chunks cross in the
// format, summed in float32; checked against the wire's bound, core/wire_format.hpp sum_error_bound, which
// the bfloat16 wire meets exactly on these inputs; busbw counts the bytes that cross: docs/compressed-wire.md).
// `in-place` is the automatic choice as DDP runs it: Tensor::allreduce_in_place on the input itself, realized (the
// values grow from call to call; one call on a fresh copy of the input is checked).
//
// Under mpirun (bench-peers.sh's ringrt-mpi rows): NDEV cpu devices on every rank, the devices of the whole job
// (global_devices) hold the input, every rank times its own calls with rank 0's iteration counts, the wrong
// elements are summed over the ranks and rank 0 prints the rows (ndev: the job's devices).
//
// Usage: ringrt_peers SYSTEM NDEV WARMUP BLOCKS ALGOS SIZE...
//   SYSTEM: the label of the CSV's system column; ALGOS: comma list of naive, ring, all2all, oneshot, twoshot,
//   ring_fused, mpi (across ranks), auto, deterministic, wire_bfloat16, wire_fp8_e4m3, wire_fp8_e5m2, in-place; sizes
//   in bytes per device. Iterations per block adapt to the size (a block lasts >= ~20 ms).
// Output: CSV rows "<system>,<algo>,<ndev>,<bytes>,<time_s>,<algbw>,<busbw>" (auto: "auto:<chosen>",
// deterministic: "deterministic:<chosen>", wire_W: "wire_W:<chosen>", in-place: "in-place:<chosen>");
// exit status 1 when any result is wrong, 2 on bad arguments.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <optional>
#include <ringrt/ringrt.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/wire_format.hpp"

using namespace ringrt;

namespace {

using Clock = std::chrono::steady_clock;

AllreduceSettings settings_for(const std::string& algo) {
  AllreduceSettings s = current_settings();
  if (algo == "naive") s.ring = 0, s.all2all = 0;
  if (algo == "ring") s.ring = 2, s.all2all = 0;
  if (algo == "all2all") s.all2all = 2;
  if (algo == "oneshot" || algo == "twoshot" || algo == "ring_fused" || algo == "mpi")
    s.algorithm = algo;                                    // fused (rewrite/collective.hpp)
  if (algo == "deterministic") s.deterministic = true;     // the automatic choice, deterministic
  if (algo.starts_with("wire_")) s.wire = algo.substr(5);  // the automatic choice over a wire
  return s;
}

bool known_algo(const std::string& a) {
  for (const char* k : {"naive", "ring", "all2all", "oneshot", "twoshot", "ring_fused", "mpi", "auto", "in-place",
                        "deterministic", "wire_bfloat16", "wire_fp8_e4m3", "wire_fp8_e5m2"})
    if (a == k) return true;
  return false;
}

// argv[i] as an integer in [lo, hi], or nothing (not a whole number, out of range).
std::optional<int64_t> integer_arg(const char* text, int64_t lo, int64_t hi) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) return std::nullopt;
  return v;
}

// Seconds per allreduce of x (N, count) sharded on axis 0: the lazy sum over axis 0 realized into fresh
// buffers, or (in_place) x's own shards allreduced in place.
double seconds_of(Tensor& x, int iters, bool in_place = false) {
  auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) {
    if (in_place) {
      x.allreduce_in_place().realize();
      continue;
    }
    Tensor y = x.sum({0});
    y.realize();
  }
  return std::chrono::duration<double>(Clock::now() - t0).count() / iters;
}

// Times every algorithm of `algos` on ndev devices at `bytes` per device and prints its CSV rows (see the
// top); returns 1 when a result is wrong, else 0. Throws what ringrt throws (std::bad_alloc included).
int run_size(const std::string& system, const std::vector<std::string>& devs, int warmup, int blocks,
             const std::vector<std::string>& algos, int64_t bytes) {
  int ndev = static_cast<int>(devs.size()), status = 0;  // every rank's devices
  int64_t count = bytes / 4;
  std::vector<float> data(static_cast<size_t>(ndev * count));
  for (int64_t d = 0; d < ndev; ++d)
    for (int64_t i = 0; i < count; ++i) data[static_cast<size_t>(d * count + i)] = static_cast<float>((i + d) % 7);
  auto input = [&] {  // one row per device (under mpirun each rank's own rows are its devices')
    std::vector<HostBuffer> rows;
    for (int64_t d = 0; d < ndev; ++d)
      rows.push_back(HostBuffer::from_vector(
          std::vector<float>(data.begin() + d * count, data.begin() + (d + 1) * count), DType::float32, {1, count}));
    return Tensor::from_shards(std::move(rows), devs, 0);
  };
  Tensor x = input(), grads = input();  // grads: in-place's, whose values grow
  x.realize();
  grads.realize();
  auto timed = [&](size_t k, int n) { return algos[k] == "in-place" ? seconds_of(grads, n, true) : seconds_of(x, n); };
  // every algorithm warmed and calibrated, then timed in turns: block b runs each algorithm once, starting
  // from a different one each block, so a drift of the machine's speed falls on all of them alike
  std::vector<int> iters(algos.size());
  std::vector<double> best(algos.size(), 1e30);
  for (size_t k = 0; k < algos.size(); ++k) {
    ScopedSettings scope(settings_for(algos[k]));
    timed(k, std::max(warmup, 1));  // builds and compiles the program
    double one = timed(k, 3);       // calibration, warm
    iters[k] = static_cast<int>(std::clamp(0.02 / std::max(one, 1e-7), 1.0, 2000.0));
    iters[k] = static_cast<int>(sum_over_ranks(rank_info().rank == 0 ? iters[k] : 0));  // rank 0's, on every rank
  }
  for (int b = 0; b < blocks; ++b)
    for (size_t j = 0; j < algos.size(); ++j) {
      size_t k = (j + static_cast<size_t>(b)) % algos.size();
      ScopedSettings scope(settings_for(algos[k]));
      best[k] = std::min(best[k], timed(k, iters[k]));
    }
  for (size_t k = 0; k < algos.size(); ++k) {
    const std::string& algo = algos[k];
    ScopedSettings scope(settings_for(algo));
    Tensor y = x.sum({0});
    if (algo == "in-place") y = input().allreduce_in_place();
    std::vector<std::string> chosen = y.schedule().algorithms;  // none on one device: nothing to reduce
    std::string name = algo == "auto" || algo == "in-place" || algo == "deterministic" || algo.starts_with("wire_")
                           ? algo + ":" + (chosen.empty() ? "none" : chosen[0])
                           : algo;
    WireFormat wire = parse_wire_format(settings_for(algo).wire);
    y.realize();
    int64_t wrong = 0;
    for (const auto& [dev, shard] : y.local_host_shards()) {  // this rank's devices
      std::vector<float> got = shard.to_vector<float>();
      for (int64_t i = 0; i < count; ++i) {
        float want = 0;
        for (int64_t d = 0; d < ndev; ++d) want += static_cast<float>((i + d) % 7);
        // the wire's bound: sum |x| = want, the largest partial sum 6 ndev (its block scale below 2 x that / max)
        double bound = wire == WireFormat::native || wire == WireFormat::bfloat16
                           ? 0.0
                           : sum_error_bound(wire, ndev, want, 2.0 * 6 * ndev / element_format(wire).max);
        wrong += std::fabs(static_cast<double>(got.at(static_cast<size_t>(i))) - want) > bound;
      }
    }
    wrong = sum_over_ranks(wrong);
    if (wrong) {
      std::fprintf(stderr, "ringrt_peers: %s %d devices %lld bytes: %lld wrong elements\n", algo.c_str(), ndev,
                   static_cast<long long>(bytes), static_cast<long long>(wrong));
      status = 1;
    }
    double algbw = static_cast<double>(bytes) / best[k] / 1e9;
    // the bytes that cross per byte of the buffer
    double crossing = static_cast<double>(wire_bytes(wire, count, 4)) / static_cast<double>(count * 4);
    if (rank_info().rank != 0) continue;  // under mpirun rank 0 prints for the job
    std::printf("%s,%s,%d,%lld,%.9f,%.3f,%.3f\n", system.c_str(), name.c_str(), ndev, static_cast<long long>(bytes),
                best[k], algbw, algbw * crossing * 2.0 * (ndev - 1) / ndev);
    std::fflush(stdout);
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 7) {
    std::fprintf(stderr, "usage: ringrt_peers SYSTEM NDEV WARMUP BLOCKS ALGOS SIZE...\n");
    return 2;
  }
  std::string system = argv[1];
  auto bad = [](const std::string& what) {
    std::fprintf(stderr, "ringrt_peers: %s\nusage: ringrt_peers SYSTEM NDEV WARMUP BLOCKS ALGOS SIZE...\n",
                 what.c_str());
    return 2;
  };
  std::optional<int64_t> ndev_arg = integer_arg(argv[2], 1, 1024), warmup_arg = integer_arg(argv[3], 0, 1 << 20),
                         blocks_arg = integer_arg(argv[4], 1, 1 << 20);
  if (!ndev_arg) return bad(std::string("NDEV must be a device count from 1 to 1024, got '") + argv[2] + "'");
  if (!warmup_arg) return bad(std::string("WARMUP must be a count >= 0, got '") + argv[3] + "'");
  if (!blocks_arg) return bad(std::string("BLOCKS must be a count >= 1, got '") + argv[4] + "'");
  int ndev = static_cast<int>(*ndev_arg), warmup = static_cast<int>(*warmup_arg),
      blocks = static_cast<int>(*blocks_arg);
  std::vector<std::string> algos;
  std::stringstream list(argv[5]);
  for (std::string a; std::getline(list, a, ',');) {
    if (!known_algo(a))
      return bad(
          "ALGOS is a comma list of naive, ring, all2all, oneshot, twoshot, ring_fused, mpi, auto, deterministic, "
          "wire_bfloat16, wire_fp8_e4m3, wire_fp8_e5m2, in-place; got '" +
          a + "'");
    algos.push_back(a);
  }
  if (algos.empty()) return bad("ALGOS names no algorithm");
  std::vector<int64_t> sizes;
  for (int a = 6; a < argc; ++a) {
    std::optional<int64_t> bytes = integer_arg(argv[a], 4, int64_t{1} << 40);
    if (!bytes || *bytes % 4 != 0)
      return bad(std::string("SIZE must be bytes per device, a multiple of 4 (float32), got '") + argv[a] + "'");
    sizes.push_back(*bytes);
  }
  std::vector<std::string> devs;
  try {
    devs = global_devices(cpu_devices(ndev));  // under mpirun: NDEV on every rank
  } catch (const std::exception& e) {
    return bad(e.what());
  }
  int status = 0;
  for (int64_t bytes : sizes) {
    try {
      status = std::max(status, run_size(system, devs, warmup, blocks, algos, bytes));
    } catch (const std::bad_alloc&) {
      return bad("out of memory for " + std::to_string(ndev) + " devices x " + std::to_string(bytes) + " bytes");
    }
  }
  return status;
}
