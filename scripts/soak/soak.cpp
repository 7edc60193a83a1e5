// The soak: a training loop run for a long time, to show that the engine stays flat (README.md, docs/performance.md).
//
// Loops, each `--steps` steps on `--devices` cpu devices (public API only):
//   fresh: every step makes fresh host data (devices x count float32), shards it over the devices,
//          sums over the sharded axis (an allreduce) and reads the result back (new buffers every step);
//   ddp:   persistent gradient buckets (`--buckets` of count elements per device): every step writes
//          fresh gradients into them from the host (write_shards) and allreduces them in place;
//   fsdp:  FSDP units (`--buckets` of them, count elements each, padded to the devices): parameters
//          stay sharded; every step allgathers each unit's parameters, writes its gradients from the
//          host and reduce-scatters them (new gathered and gradient-shard tensors every step).
// Every `--report-every` steps it prints one line per loop: resident memory (MiB, /proc/self/statm),
// programs built, graph nodes, storages and tensor states alive, steps per second. At the end: the
// per-step host overhead, fresh data against re-running the same tensors (time per step at `--count`
// elements per device, best of 5 blocks), and the verdict.
//
// Checks (exit status 1 when one fails, with a line saying which): every checked step's values
// against host arithmetic (every 1000th step and the last); the counts flat after warm-up (programs
// built at most 2 per loop, graph nodes, storages and tensors no higher at the end than after
// warm-up); with --max-rss-growth-mib M, resident memory after warm-up grows at most M MiB. Times are
// printed, never checked. Exit status 2 for bad arguments. SIGINT or SIGTERM stops the soak after the
// step under way, with a line saying so, and exit status 128 + the signal (130, 143).
//
// Usage: ringrt_soak [--steps N] [--report-every K] [--warmup W] [--devices D] [--count C]
//                    [--buckets B] [--max-rss-growth-mib M] [--loops fresh,ddp,fsdp]
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <optional>
#include <ringrt/ringrt.hpp>
#include <string>
#include <vector>

using namespace ringrt;

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  int64_t steps = 1000000, report_every = 100000, warmup = 1000, devices = 4, count = 256, buckets = 4;
  double max_rss_growth_mib = -1;
  std::vector<std::string> loops{"fresh", "ddp", "fsdp"};
};

double rss_mib() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

// Small integers: every sum is exact in float32, so results compare bit for bit.
float value_of(uint64_t step, int64_t device, int64_t i) {
  uint64_t h = (step * 0x9e3779b97f4a7c15ull) ^ (static_cast<uint64_t>(device) << 32) ^ static_cast<uint64_t>(i);
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 32;
  return static_cast<float>(h % 17) - 8.0f;
}

// Device d's data of one step: count elements.
HostBuffer shard_data(uint64_t step, int64_t d, int64_t count) {
  HostBuffer b(DType::float32, {1, count});
  for (int64_t i = 0; i < count; ++i) b.set(i, value_of(step, d, i));
  return b;
}

HostBuffer whole_data(uint64_t step, int64_t ndev, int64_t count) {
  HostBuffer b(DType::float32, {ndev, count});
  for (int64_t d = 0; d < ndev; ++d)
    for (int64_t i = 0; i < count; ++i) b.set(d * count + i, value_of(step, d, i));
  return b;
}

bool sums_match(const std::vector<float>& got, uint64_t step, int64_t ndev, int64_t count) {
  if (static_cast<int64_t>(got.size()) != count) return false;
  for (int64_t i = 0; i < count; ++i) {
    float want = 0;
    for (int64_t d = 0; d < ndev; ++d) want += value_of(step, d, i);
    if (got[static_cast<size_t>(i)] != want) return false;
  }
  return true;
}

// One loop of the soak: step(s) runs step s and, when check is set, returns whether its values are right.
struct Loop {
  std::string name;
  std::function<bool(uint64_t step, bool check)> step;
};

Loop fresh_loop(const std::vector<std::string>& devs, int64_t count) {
  auto ndev = static_cast<int64_t>(devs.size());
  return {"fresh", [devs, ndev, count](uint64_t s, bool check) {
            Tensor y = Tensor::from_host(whole_data(s, ndev, count)).shard(devs, 0).sum({0});
            std::vector<float> got = y.to_vector<float>();  // read back every step, as a loss would be
            return !check || sums_match(got, s, ndev, count);
          }};
}

Loop ddp_loop(const std::vector<std::string>& devs, int64_t count, int64_t nbuckets) {
  auto ndev = static_cast<int64_t>(devs.size());
  auto buckets = std::make_shared<std::vector<Tensor>>();
  for (int64_t b = 0; b < nbuckets; ++b) {
    buckets->push_back(Tensor::empty({ndev, count + b}, DType::float32).shard(devs, 0));
    buckets->back().realize();
  }
  return {"ddp", [devs, ndev, count, buckets](uint64_t s, bool check) {
            bool ok = true;
            for (size_t b = 0; b < buckets->size(); ++b) {
              int64_t n = count + static_cast<int64_t>(b);
              std::vector<HostBuffer> grads;
              for (int64_t d = 0; d < ndev; ++d) grads.push_back(shard_data(s + b, d, n));
              Tensor& g = (*buckets)[b];
              g.write_shards(grads);
              g.allreduce_in_place(ReduceOp::sum).realize();
              if (check) {
                std::vector<Tensor> shards = g.shards();
                for (const Tensor& t : shards) ok = ok && sums_match(t.to_vector<float>(), s + b, ndev, n);
              }
            }
            return ok;
          }};
}

// FSDP: unit b's parameters are value_of(b, d, i) on device d (sharded once, never changed); every
// step gathers them (checked: device d's part at d * part), writes the step's gradients and
// reduce-scatters them (checked: device d holds the sums of its part).
Loop fsdp_loop(const std::vector<std::string>& devs, int64_t count, int64_t nunits) {
  auto ndev = static_cast<int64_t>(devs.size());
  int64_t part = (count + ndev - 1) / ndev;  // padded: every device holds part elements of each unit
  auto params = std::make_shared<std::vector<Tensor>>(), grads = std::make_shared<std::vector<Tensor>>();
  for (int64_t b = 0; b < nunits; ++b) {
    std::vector<HostBuffer> shards;
    for (int64_t d = 0; d < ndev; ++d) shards.push_back(shard_data(static_cast<uint64_t>(b), d, part));
    for (HostBuffer& h : shards) h.shape = {part};
    params->push_back(Tensor::from_shards(std::move(shards), devs, 0));
    grads->push_back(Tensor::empty({ndev * ndev * part}, DType::float32).shard(devs, 0));
    params->back().realize();
    grads->back().realize();
  }
  return {"fsdp", [devs, ndev, part, params, grads](uint64_t s, bool check) {
            bool ok = true;
            for (size_t b = 0; b < params->size(); ++b) {
              Tensor gathered = (*params)[b].allgather();
              gathered.realize();
              std::vector<HostBuffer> g;
              for (int64_t d = 0; d < ndev; ++d) g.push_back(shard_data(s + b, d, ndev * part));
              for (HostBuffer& h : g) h.shape = {ndev * part};
              Tensor grad_shard = (*grads)[b].write_shards(g).reduce_scatter(ReduceOp::sum, 0);
              grad_shard.realize();
              if (!check) continue;
              std::vector<float> all = gathered.shards().back().to_vector<float>();  // the last device's copy
              for (int64_t e = 0; e < ndev * part; ++e)
                ok = ok && all[static_cast<size_t>(e)] == value_of(b, e / part, e % part);
              std::vector<Tensor> shards = grad_shard.shards();
              for (int64_t d = 0; d < ndev; ++d) {
                std::vector<float> got = shards[static_cast<size_t>(d)].to_vector<float>();
                for (int64_t i = 0; i < part; ++i) {
                  float want = 0;
                  for (int64_t r = 0; r < ndev; ++r) want += value_of(s + b, r, d * part + i);
                  ok = ok && got[static_cast<size_t>(i)] == want;
                }
              }
            }
            return ok;
          }};
}

void report(const Loop& loop, int64_t step, double seconds, int64_t steps_in_block) {
  EngineStats e = Tensor::engine_stats();
  std::printf("%-6s step %9lld  rss %8.1f MiB  programs %4zu  nodes %6zu  storages %5zu  tensors %5zu  %9.0f steps/s\n",
              loop.name.c_str(), static_cast<long long>(step), rss_mib(), e.programs_built, e.graph_nodes, e.storages,
              e.tensors, seconds > 0 ? static_cast<double>(steps_in_block) / seconds : 0.0);
  std::fflush(stdout);
}

// Runs one loop; returns the failures.
// SIGINT or SIGTERM (its number; 0: none): the soak stops after the step under way, says where, and
// exits 128 + the signal, as the `ringrt` program does.
volatile std::sig_atomic_t g_stop_signal = 0;
void on_stop_signal(int sig) { g_stop_signal = sig; }

int soak(const Loop& loop, const Options& o) {
  int failures = 0;
  std::optional<EngineStats> warm;
  double warm_rss = 0;
  auto block_start = Clock::now();
  int64_t block_first = 0;
  for (int64_t s = 0; s < o.steps; ++s) {
    if (g_stop_signal != 0) {
      std::printf("%s: interrupted by %s after %lld steps\n", loop.name.c_str(),
                  g_stop_signal == SIGINT ? "SIGINT" : "SIGTERM", static_cast<long long>(s));
      return failures;
    }
    bool check = s % 1000 == 0 || s + 1 == o.steps;
    if (!loop.step(static_cast<uint64_t>(s), check)) {
      std::printf("FAIL %s: wrong values at step %lld\n", loop.name.c_str(), static_cast<long long>(s));
      return failures + 1;
    }
    if (s + 1 == o.warmup) {
      warm = Tensor::engine_stats();
      warm_rss = rss_mib();
    }
    if ((s + 1) % o.report_every == 0 || s + 1 == o.steps) {
      double secs = std::chrono::duration<double>(Clock::now() - block_start).count();
      report(loop, s + 1, secs, s + 1 - block_first);
      block_start = Clock::now();
      block_first = s + 1;
    }
  }
  if (!warm) return failures;
  EngineStats end = Tensor::engine_stats();
  auto flat = [&](const char* what, size_t at_warm, size_t now) {
    if (now > at_warm) {
      std::printf("FAIL %s: %s grew from %zu after warm-up to %zu\n", loop.name.c_str(), what, at_warm, now);
      ++failures;
    }
  };
  flat("graph nodes", warm->graph_nodes, end.graph_nodes);
  flat("storages", warm->storages, end.storages);
  flat("tensors", warm->tensors, end.tensors);
  flat("programs built", warm->programs_built, end.programs_built);
  double growth = rss_mib() - warm_rss;
  std::printf("%-6s resident memory after warm-up: %+.1f MiB over %lld steps\n", loop.name.c_str(), growth,
              static_cast<long long>(o.steps - o.warmup));
  if (o.max_rss_growth_mib >= 0 && growth > o.max_rss_growth_mib) {
    std::printf("FAIL %s: resident memory grew %.1f MiB (limit %.1f)\n", loop.name.c_str(), growth,
                o.max_rss_growth_mib);
    ++failures;
  }
  return failures;
}

// Seconds per step, best of 5 blocks; a block runs at most n steps and stops after 0.25 s once it has
// run 3, so that the measurement takes seconds at any --count (2000 steps of 1 MiB per device took
// minutes, after the loops had reported, as if the soak hung).
double best_per_step(const std::function<void(uint64_t)>& step, int64_t n) {
  double best = 1e30;
  for (int block = 0; block < 5; ++block) {
    auto t0 = Clock::now();
    int64_t done = 0;
    double secs = 0;
    while (done < n && (done < 3 || secs < 0.25)) {
      step(static_cast<uint64_t>(done++));
      secs = std::chrono::duration<double>(Clock::now() - t0).count();
    }
    best = std::min(best, secs / static_cast<double>(done));
  }
  return best;
}

// Host overhead of fresh data: the fresh loop's step (upload new host data, shard, sum, read back)
// against the same step re-run on the same tensor (one input uploaded once: the same graph, no new
// buffer, no upload), and against the allreduce alone on an input sharded once. The host data of
// the fresh steps is made before timing (8 buffers in turn): what is timed is ringrt's work, not the
// data generator's.
void overhead(const std::vector<std::string>& devs, int64_t count) {
  auto ndev = static_cast<int64_t>(devs.size());
  std::vector<HostBuffer> pool;
  for (uint64_t k = 0; k < 8; ++k) pool.push_back(whole_data(k, ndev, count));
  Tensor same = Tensor::from_host(pool[0]), sharded = same.shard(devs, 0);
  same.realize();
  sharded.realize();
  double fresh_s = best_per_step(
      [&](uint64_t s) { Tensor::from_host(pool[s % 8]).shard(devs, 0).sum({0}).to_vector<float>(); }, 2000);
  double same_s = best_per_step([&](uint64_t) { same.shard(devs, 0).sum({0}).to_vector<float>(); }, 2000);
  double sum_s = best_per_step([&](uint64_t) { sharded.sum({0}).to_vector<float>(); }, 2000);
  std::printf("allreduce alone (input sharded once) %.1f us per step\n", sum_s * 1e6);
  std::printf("per-step host overhead at %lld B per device: fresh data %.1f us, same tensors %.1f us: %.2fx\n",
              static_cast<long long>(count * 4), fresh_s * 1e6, same_s * 1e6, fresh_s / same_s);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"ringrt_soak: a long training loop; the engine's memory and counts stay flat"};
  app.add_option("--steps", o.steps, "steps per loop")->check(CLI::PositiveNumber);
  app.add_option("--report-every", o.report_every, "steps between report lines")->check(CLI::PositiveNumber);
  app.add_option("--warmup", o.warmup, "steps before the flat checks' baseline")->check(CLI::PositiveNumber);
  app.add_option("--devices", o.devices, "cpu devices")->check(CLI::Range(1, 64));
  app.add_option("--count", o.count, "elements per device per step (float32)")->check(CLI::Range(1, 1 << 24));
  app.add_option("--buckets", o.buckets, "gradient buckets of the ddp loop, units of the fsdp loop")
      ->check(CLI::Range(1, 64));
  app.add_option("--max-rss-growth-mib", o.max_rss_growth_mib, "fail when resident memory grows more after warm-up");
  app.add_option("--loops", o.loops, "loops to run: fresh, ddp, fsdp")
      ->delimiter(',')
      ->check(CLI::IsMember({"fresh", "ddp", "fsdp"}));
  for (CLI::Option* opt : app.get_options())  // a later value wins: scripts/soak.sh passes defaults first
    if (opt->get_name() != "--help" && opt->get_name() != "--loops")
      opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (o.warmup >= o.steps) {  // the flat checks compare the end with the state after warm-up
    std::fprintf(stderr, "--warmup (%lld) must be below --steps (%lld): the flat checks need steps after warm-up\n",
                 static_cast<long long>(o.warmup), static_cast<long long>(o.steps));
    return 2;
  }
  // one line at a time even into a file or pipe: a soak is watched through its log, and a run stopped
  // by a timeout keeps every line it printed
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  struct sigaction stop {};
  stop.sa_handler = on_stop_signal;
  sigemptyset(&stop.sa_mask);
  for (int sig : {SIGINT, SIGTERM}) sigaction(sig, &stop, nullptr);
  std::vector<std::string> devs = cpu_devices(static_cast<int>(o.devices));
  std::printf("# ringrt soak: %lld steps per loop, %lld cpu devices, %lld float32 per device, warm-up %lld steps\n",
              static_cast<long long>(o.steps), static_cast<long long>(o.devices), static_cast<long long>(o.count),
              static_cast<long long>(o.warmup));
  int failures = 0;
  try {
    for (const std::string& name : o.loops) {
      Loop loop = name == "fresh" ? fresh_loop(devs, o.count)
                  : name == "ddp" ? ddp_loop(devs, o.count, o.buckets)
                                  : fsdp_loop(devs, o.count, o.buckets);
      failures += soak(loop, o);
      if (g_stop_signal != 0) break;
    }
    if (g_stop_signal == 0) overhead(devs, o.count);
  } catch (const Error& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
  if (g_stop_signal != 0) {  // what ran was checked; the flat checks need the whole run
    std::printf("soak: stopped by %s (%s so far)\n", g_stop_signal == SIGINT ? "SIGINT" : "SIGTERM",
                failures == 0 ? "no failure" : "FAILED");
    return 128 + g_stop_signal;
  }
  std::printf("%s\n", failures == 0 ? "soak: ok" : "soak: FAILED");
  return failures == 0 ? 0 : 1;
}
