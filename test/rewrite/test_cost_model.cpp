// The allreduce's cost model (rewrite/cost_model.hpp): its arithmetic, the figures measured once and
// cached in the cost file, a bad file measured again, and the choice it makes in the lowering
// (rewrite/rules/allreduce.cpp collective_algorithm), which a forced algorithm, set levels, a tuned
// choice and allreduce.tuning: off override. No timing: measurements are counted, figures are given.
#include <sys/stat.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "core/files.hpp"
#include "rewrite/cost_model.hpp"
#include "rewrite/rules/multi.hpp"
#include "rewrite/tuning.hpp"
#include "test/support/temp_dir.hpp"

BOOST_AUTO_TEST_SUITE(test_cost_model)

using namespace ringrt;
namespace fs = std::filesystem;

namespace {

// cpu-like figures: a step costs 10 launches, 200 GB/s shared by the devices
constexpr CostFigures kCpu{0.05, 0.5, 200.0, true, true};

// RINGRT_CACHE_DIR set to a private folder for one test, the figures of earlier tests forgotten.
struct CacheDir {
  test::TempDir tmp;
  fs::path dir = tmp.path() / "cache";
  CacheDir() {
    fs::create_directories(dir);
    fs::permissions(dir, fs::perms(0700));
    ::setenv("RINGRT_CACHE_DIR", dir.c_str(), 1);
    forget_cost_models();
  }
  ~CacheDir() {
    ::unsetenv("RINGRT_CACHE_DIR");
    forget_cost_models();
  }
};

// A measurement of kind FAKE that counts its runs and gives `f`.
int g_runs = 0;
void register_fake(CostFigures f) {
  register_cost_measure("FAKE", [f] {
    ++g_runs;
    return f;
  });
}

}  // namespace

BOOST_AUTO_TEST_CASE(arithmetic_of_the_table) {
  // 4 devices of 4096 bytes, peer access: naive 1 launch, (n+1) S; all2all 1 step, 2 S; ring 6 launches, 5 steps
  AlgorithmCost naive = algorithm_cost(Algorithm::naive, 4, 4096, true);
  BOOST_TEST(naive.launches == 1);
  BOOST_TEST(naive.steps == 0);
  BOOST_TEST(naive.moved == 5 * 4096);
  AlgorithmCost ring = algorithm_cost(Algorithm::ring, 4, 4096, true);
  BOOST_TEST(ring.launches == 6);
  BOOST_TEST(ring.steps == 5);
  BOOST_TEST(ring.moved == 3 * 5 * 1024);
  BOOST_TEST(algorithm_cost(Algorithm::all2all, 4, 4096, true).moved == 2 * 4096);
  BOOST_TEST(algorithm_cost(Algorithm::twoshot, 4, 4096, false).steps == 2);   // no push: a second barrier
  BOOST_TEST(algorithm_cost(Algorithm::naive, 4, 4096, false).launches == 4);  // three copies launched
  // T = launches * launch + steps * step + moved * n / B (shared): all2all at 4 KiB
  CostFigures f{1.0, 10.0, 1.0, true, true};  // 1 GB/s = 1000 bytes per microsecond
  BOOST_TEST(modelled_us(f, Algorithm::all2all, 4, 4000) == 1 + 10 + 2 * 4000 * 4 / 1000.0);
  f.shared = false;
  BOOST_TEST(modelled_us(f, Algorithm::all2all, 4, 4000) == 1 + 10 + 2 * 4000 / 1000.0);
  BOOST_CHECK_THROW(algorithm_cost(Algorithm::hierarchical, 4, 4096, true), InternalError);
}

// Given figures, the choice: naive while a step costs more than the bytes it saves, then all2all (ties
// with twoshot go to the unfused form); one device: naive.
BOOST_AUTO_TEST_CASE(choice_from_given_figures) {
  // naive - all2all = 3 S n / B - step: the crossover at S = step B / (3 n) = 0.5 * 200e3 / 12 = 8333 B
  BOOST_TEST((modelled_choice(kCpu, 4, 1024) == Algorithm::naive));
  BOOST_TEST((modelled_choice(kCpu, 4, 8192) == Algorithm::naive));
  BOOST_TEST((modelled_choice(kCpu, 4, 8500) == Algorithm::all2all));
  BOOST_TEST((modelled_choice(kCpu, 4, int64_t{64} << 20) == Algorithm::all2all));
  BOOST_TEST((modelled_choice(kCpu, 1, 1 << 20) == Algorithm::naive));
  // without peer access the copies count: all2all's 2(n-1) copy launches, twoshot's gathers
  CostFigures gpu{5.0, 10.0, 1500.0, false, false};
  BOOST_TEST((modelled_choice(gpu, 8, 1024) == Algorithm::oneshot));  // one launch against naive's 8
  BOOST_TEST((modelled_choice(gpu, 8, int64_t{256} << 20) == Algorithm::twoshot));
}

// Once an algorithm wins at a size it wins above it until another takes over for good: the choices
// along growing sizes never come back to an algorithm left behind.
BOOST_AUTO_TEST_CASE(choice_is_monotone_in_size) {
  for (const CostFigures& f :
       {kCpu, CostFigures{5.0, 10.0, 1500.0, false, true}, CostFigures{5, 10, 1500, false, false}})
    for (int64_t n : {2, 3, 4, 8}) {
      std::vector<Algorithm> seen;
      for (int64_t bytes = 4; bytes <= (int64_t{1} << 32); bytes *= 2) {
        Algorithm c = modelled_choice(f, n, bytes);
        if (seen.empty() || seen.back() != c) {
          bool fresh = std::find(seen.begin(), seen.end(), c) == seen.end();
          BOOST_TEST(fresh, n << " devices, " << bytes << " B: " << c);
          seen.push_back(c);
        }
      }
    }
}

// Measured once per cache folder: a second process (forget_cost_models) reads the file; the file's text
// round-trips.
BOOST_AUTO_TEST_CASE(measured_figures_are_cached_and_reused) {
  CacheDir cache;
  register_fake(kCpu);
  int runs = g_runs;
  int64_t counted = cost_measurements();
  CostModel first = cost_model_for("FAKE");
  BOOST_TEST_REQUIRE(first.figures.has_value());
  BOOST_TEST((*first.figures == kCpu));
  BOOST_TEST(first.origin.find("measured ") == 0u, first.origin);
  BOOST_TEST(g_runs == runs + 1);
  BOOST_TEST(cost_measurements() == counted + 1);
  BOOST_TEST(cost_model_for("FAKE").origin == first.origin);  // in this process: once
  forget_cost_models();                                       // as another process would
  CostModel again = cost_model_for("FAKE");
  BOOST_TEST(g_runs == runs + 1);  // not measured again: read from the file
  BOOST_TEST(again.origin.find("cached (" + cost_figures_path("FAKE")) == 0u, again.origin);
  BOOST_TEST_REQUIRE(again.figures.has_value());
  BOOST_TEST(again.figures->step_us == kCpu.step_us);
  CostFile f{"FAKE", machine_identity(), "now", kCpu};
  CostFile back = parse_cost_figures(cost_figures_yaml(f), "x");
  BOOST_TEST((back.figures == kCpu));
  BOOST_TEST(back.machine == f.machine);
  // kinds without a measurement: none (placeholders: tinygrad's rule); HIP: its unmeasured defaults
  BOOST_TEST(!cost_model_for("NULL").figures.has_value());
  BOOST_TEST(cost_model_for("HIP").origin == "unmeasured defaults for HIP");
}

// A bad file (garbage, a wrong key, a figure out of range, another machine, a link) is never trusted: the
// figures are measured again and the file replaced where it can be; nothing throws.
BOOST_AUTO_TEST_CASE(a_bad_cost_file_is_measured_again) {
  CacheDir cache;
  register_fake(kCpu);
  std::string path = cost_figures_path("FAKE");
  std::string good = cost_figures_yaml({"FAKE", machine_identity(), "now", kCpu});
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  for (const std::string& bad :
       {std::string("{{{ not yaml"), std::string("format: ringrt-cost-1\n"), replace("gbps:", "gbps: -1\nx:"),
        replace("step_us: 0.5000", "step_us: nan"), replace("launch_us", "launch_ms"), replace("peer: true", "peer: 2"),
        replace(machine_identity(), "another machine"), replace("kind: \"FAKE\"", "kind: \"CPU\""),
        std::string(kMaxCostBytes + 1, '#')}) {
    BOOST_TEST_CONTEXT(bad.substr(0, 60)) {
      std::ofstream(path, std::ios::trunc) << bad;
      ::chmod(path.c_str(), 0600);
      forget_cost_models();
      int runs = g_runs;
      CostModel m = cost_model_for("FAKE");
      BOOST_TEST(g_runs == runs + 1);
      BOOST_TEST_REQUIRE(m.figures.has_value());
      BOOST_TEST((*m.figures == kCpu));
      BOOST_TEST(m.origin.find("measured ") == 0u, m.origin);
      BOOST_CHECK_NO_THROW(parse_cost_figures(read_file(path, kMaxCostBytes), path));  // replaced
    }
  }
  // a link in its place: refused, measured, and not followed when written (the model stays in memory)
  fs::path target = cache.tmp.path() / "elsewhere.yaml";
  std::ofstream(target) << good;
  fs::remove(path);
  fs::create_symlink(target, path);
  forget_cost_models();
  int runs = g_runs;
  CostModel m = cost_model_for("FAKE");
  BOOST_TEST(g_runs == runs + 1);
  BOOST_TEST(m.figures.has_value());
  BOOST_TEST(fs::is_symlink(path) == false);  // renamed over the link, the target untouched
  std::ifstream in(target);
  std::string kept((std::istreambuf_iterator<char>(in)), {});
  BOOST_TEST(kept == good);
  // a measurement that fails: no figures, the rule chooses
  register_cost_measure("FAKE", []() -> CostFigures { throw std::runtime_error("no clock"); });
  fs::remove(path);
  forget_cost_models();
  CostModel failed = cost_model_for("FAKE");
  BOOST_TEST(!failed.figures.has_value());
  BOOST_TEST(failed.origin.find("no clock") != std::string::npos, failed.origin);
}

// In the lowering: the model chooses with every level at its default; a forced algorithm, a level or
// threshold set, allreduce.tuning off (tinygrad's rule) and a tuned choice win over it.
BOOST_AUTO_TEST_CASE(forcing_wins_over_the_model) {
  CacheDir cache;
  register_fake(kCpu);
  auto algo = [](int64_t numel, AllreduceSettings s) {
    CollectiveSize c{Collective::allreduce, "FAKE", 4, numel, DType::float32, 0};
    return collective_algorithm(c, s);
  };
  AllreduceSettings s;
  s.tuning = "auto";                                     // the cache folder has no tuning.yaml
  BOOST_TEST((algo(256, s) == Algorithm::naive));        // 1 KiB
  BOOST_TEST((algo(16384, s) == Algorithm::all2all));    // 64 KiB: tinygrad's rule says naive here
  BOOST_TEST((algo(1 << 20, s) == Algorithm::all2all));  // 4 MiB: tinygrad's rule says ring
  AllreduceSettings forced = s;
  forced.algorithm = "twoshot";
  BOOST_TEST((algo(16384, forced) == Algorithm::twoshot));
  AllreduceSettings level = s;
  level.ring = 2;
  BOOST_TEST((algo(16384, level) == Algorithm::ring));
  AllreduceSettings threshold = s;
  threshold.ring_threshold = 100;  // set: tinygrad's rule with it
  BOOST_TEST((algo(256, threshold) == Algorithm::ring));
  AllreduceSettings off = s;
  off.tuning = "off";
  BOOST_TEST((algo(16384, off) == Algorithm::naive));
  BOOST_TEST((algo(1 << 20, off) == Algorithm::ring));
  // a tuned choice for the point wins
  TuningTable t{ringrt_version(), machine_identity(), "now", {}};
  t.choices.push_back({Collective::allreduce, "FAKE", 4, DType::float32, 65536, 0, 0, Algorithm::ring, {}});
  set_bands(t.choices);
  test::TempDir files;
  AllreduceSettings tuned = s;
  tuned.tuning = files.write("t.yaml", tuning_yaml(t));
  BOOST_TEST((algo(16384, tuned) == Algorithm::ring));
  // other collectives keep tinygrad's rule; so does a collective across ranks
  CollectiveSize rs{Collective::reduce_scatter, "FAKE", 4, 16384, DType::float32, 0};
  BOOST_TEST((collective_algorithm(rs, s) == Algorithm::naive));
  CollectiveSize ranks{Collective::allreduce, "FAKE", 4, 16384, DType::float32, 2};
  BOOST_TEST((collective_algorithm(ranks, s) == Algorithm::naive));
}

BOOST_AUTO_TEST_SUITE_END()
