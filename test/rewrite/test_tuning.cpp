// The tuning file (rewrite/tuning.hpp): its text, its bands, the files refused, and the lowering that
// follows a tuned choice while ring and all2all are automatic (rewrite/rules/allreduce.cpp
// collective_algorithm).
#include <sys/stat.h>

#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "core/errors.hpp"
#include "core/files.hpp"
#include "core/settings.hpp"
#include "rewrite/tuning.hpp"
#include "runtime/api/devices.hpp"
#include "runtime/api/tensor.hpp"
#include "test/support/null_device.hpp"
#include "testing/checks.hpp"

BOOST_AUTO_TEST_SUITE(test_tuning)

using namespace ringrt;
namespace fs = std::filesystem;

namespace {

// A folder of its own under the temporary folder, removed at the end.
struct Scratch {
  fs::path dir = fs::temp_directory_path() / ("ringrt-tuning-" + std::to_string(::getpid()) + "-" +
                                              std::to_string(reinterpret_cast<uintptr_t>(this)));
  Scratch() { fs::create_directories(dir); }
  ~Scratch() { fs::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text, fs::perms mode = fs::perms(0600)) const {
    fs::path p = dir / name;
    std::ofstream(p) << text;
    fs::permissions(p, mode);
    return p.string();
  }
};

TunedChoice choice(Collective collective, std::string kind, int64_t ndev, int64_t bytes, Algorithm algo) {
  return {collective,
          std::move(kind),
          ndev,
          DType::float32,
          bytes,
          0,
          0,
          algo,
          {{Algorithm::naive, 3.5}, {Algorithm::ring, 2.5}, {Algorithm::all2all, 1.0}}};
}

// A table of this build and machine, bands set.
TuningTable table_of(std::vector<TunedChoice> choices) {
  TuningTable t{ringrt_version(), machine_identity(), "2026-12-02 12:00 UTC", std::move(choices)};
  set_bands(t.choices);
  return t;
}

std::string algorithm_of(Tensor t, const std::string& tuning, int ring = 1) {
  AllreduceSettings s;
  s.tuning = tuning;
  s.ring = ring;
  ScopedSettings scope(s);
  return t.schedule().algorithms.at(0);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(tuning)

BOOST_AUTO_TEST_CASE(text_round_trips) {
  TuningTable t = table_of({choice(Collective::allreduce, "CPU", 4, 4096, Algorithm::naive),
                            choice(Collective::allgather, "HIP", 8, 1 << 20, Algorithm::ring),
                            choice(Collective::allreduce, "CPU", 4, 1 << 20, Algorithm::all2all)});
  TuningTable back = parse_tuning(tuning_yaml(t), "t.yaml");
  BOOST_TEST(back.version == t.version);
  BOOST_TEST(back.machine == t.machine);
  BOOST_TEST(back.made == t.made);
  BOOST_TEST((back.choices == t.choices));
}

// Bands: sorted by size within each (collective, kind, devices, dtype); edges at the geometric middles.
BOOST_AUTO_TEST_CASE(bands_cut_at_geometric_middles) {
  TuningTable t = table_of({choice(Collective::allreduce, "CPU", 4, 1 << 20, Algorithm::all2all),
                            choice(Collective::allreduce, "CPU", 4, 4096, Algorithm::naive),
                            choice(Collective::allreduce, "CPU", 2, 4096, Algorithm::ring)});
  // 4096 and 1 MiB: sqrt(2^12 * 2^20) = 2^16
  BOOST_TEST((t.find(Collective::allreduce, "CPU", 4, DType::float32, 1)->algorithm == Algorithm::naive));
  BOOST_TEST((t.find(Collective::allreduce, "CPU", 4, DType::float32, 65535)->algorithm == Algorithm::naive));
  BOOST_TEST((t.find(Collective::allreduce, "CPU", 4, DType::float32, 65536)->algorithm == Algorithm::all2all));
  BOOST_TEST(
      (t.find(Collective::allreduce, "CPU", 4, DType::float32, int64_t{1} << 40)->algorithm == Algorithm::all2all));
  BOOST_TEST((t.find(Collective::allreduce, "CPU", 2, DType::float32, int64_t{1} << 40)->algorithm ==
              Algorithm::ring));  // alone: all sizes
  BOOST_TEST(t.find(Collective::allreduce, "CPU", 3, DType::float32, 4096) == nullptr);
  BOOST_TEST(t.find(Collective::allreduce, "HIP", 4, DType::float32, 4096) == nullptr);
  BOOST_TEST(t.find(Collective::allreduce, "CPU", 4, DType::float16, 4096) == nullptr);
  BOOST_TEST(t.find(Collective::reduce_scatter, "CPU", 4, DType::float32, 4096) == nullptr);
}

// Every error names the file, line, column and key.
BOOST_AUTO_TEST_CASE(bad_files_name_line_and_key) {
  std::string good = tuning_yaml(table_of({choice(Collective::allreduce, "CPU", 4, 4096, Algorithm::naive)}));
  auto error_of = [](const std::string& text) {
    try {
      parse_tuning(text, "t.yaml");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  BOOST_TEST(error_of(replace("algorithm: naive", "algorithm: fastest")).find("t.yaml:9:") == 0);
  BOOST_TEST(error_of(replace("algorithm: naive", "algorithm: fastest")).find("choices[0].algorithm") !=
             std::string::npos);
  BOOST_TEST(error_of(replace("bytes: 4096", "bytes: -1")).find("choices[0].bytes") != std::string::npos);
  BOOST_TEST(error_of(replace("kind: \"CPU\"", "kind: ../x")).find("device kind") != std::string::npos);
  BOOST_TEST(error_of(replace("devices: 4", "devices: 4, extra: 1")).find("choices[0].extra': unknown") !=
             std::string::npos);
  BOOST_TEST(error_of(replace("ringrt-tuning-1", "ringrt-tuning-9")).find("key 'format'") != std::string::npos);
  BOOST_TEST(error_of(replace("min_bytes: 0", "min_bytes: 9223372036854775807")).find("empty band") !=
             std::string::npos);
  BOOST_TEST(error_of("format: ringrt-tuning-1\n").find("'ringrt': missing") != std::string::npos);
  BOOST_TEST(error_of(replace("devices: 4", "devices: 4, devices: 3")).find("given twice") != std::string::npos);
  BOOST_TEST(error_of(replace("min_bytes: 0", "min_bytes: 5000")).find("outside its band") != std::string::npos);
  BOOST_TEST(error_of(replace("collective: allreduce", "collective: broadcast")).find("not naive") !=
             std::string::npos);
  BOOST_TEST(error_of(replace("made: \"", "made: \"\\e[31m")).find("control characters") != std::string::npos);
  // two choices whose bands overlap: the second is refused
  std::string two = tuning_yaml(table_of({choice(Collective::allreduce, "CPU", 4, 4096, Algorithm::naive),
                                          choice(Collective::allreduce, "CPU", 4, 1 << 20, Algorithm::ring)}));
  two.replace(two.find("min_bytes: 65536"), 16, "min_bytes: 100");
  BOOST_TEST(error_of(two).find("overlaps choices[0]") != std::string::npos);
  // not a tuning file at all: said so, with the file's name
  BOOST_TEST(error_of("").find("t.yaml: empty, not a tuning file") == 0);
  BOOST_TEST(error_of("root:x:0:0:root:/root:/bin/bash\n").find("t.yaml: not a map, not a tuning file") == 0);
}

// Choices across ranks (`ringrt tune` under mpirun): the key ranks round-trips, its bands are its own (the same
// collective, kind and device count in one process is another choice), mpi only with it and no fused form with it.
BOOST_AUTO_TEST_CASE(choices_across_ranks) {
  TunedChoice across = choice(Collective::allreduce, "CPU", 4, 4096, Algorithm::mpi);
  across.ranks = 4;
  across.us[Algorithm::mpi] = 0.5;
  TuningTable t = table_of({across, choice(Collective::allreduce, "CPU", 4, 4096, Algorithm::naive)});
  std::string text = tuning_yaml(t);
  BOOST_TEST(text.find("ranks: 4, bytes: 4096") != std::string::npos, text);
  TuningTable back = parse_tuning(text, "t.yaml");
  BOOST_TEST((back.choices == t.choices));
  BOOST_TEST((back.find(Collective::allreduce, "CPU", 4, DType::float32, 4096)->algorithm == Algorithm::naive));
  BOOST_TEST(
      (back.find(Collective::allreduce, "CPU", 4, DType::float32, 4096, WireFormat::native, false, 4)->algorithm ==
       Algorithm::mpi));
  BOOST_TEST(back.find(Collective::allreduce, "CPU", 4, DType::float32, 4096, WireFormat::native, false, 2) == nullptr);
  auto error_of = [&](const std::string& from, const std::string& to) {
    std::string s = text;
    s.replace(s.find(from), from.size(), to);
    try {
      parse_tuning(s, "t.yaml");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  BOOST_TEST(error_of("ranks: 4, ", "").find("across ranks only") != std::string::npos);
  BOOST_TEST(error_of("algorithm: mpi", "algorithm: twoshot").find("not twoshot") != std::string::npos);
  BOOST_TEST(error_of("ranks: 4", "ranks: 1").find(".ranks': expected an integer in [2,") != std::string::npos);
  BOOST_TEST(error_of("ranks: 4", "ranks: 5").find("5 ranks of 4 devices") != std::string::npos);
}

// Files refused: another version or machine, a link or another's writable file in the cache folder; each
// leaves tinygrad's rule and says why.
BOOST_AUTO_TEST_CASE(files_from_elsewhere_are_ignored) {
  Scratch dir;
  TuningTable t = table_of({choice(Collective::allreduce, "CPU", 4, 4096, Algorithm::ring)});
  std::string ok = dir.write("ok.yaml", tuning_yaml(t));
  BOOST_TEST(tuning_for(ok).table != nullptr);
  BOOST_TEST(tuning_for(ok).origin.find("1 choices") != std::string::npos);
  TuningTable other = t;
  other.machine = "another machine | 1 cpus | 1 GiB";
  Tuning elsewhere = tuning_for(dir.write("other.yaml", tuning_yaml(other)));
  BOOST_TEST(elsewhere.table == nullptr);
  BOOST_TEST(elsewhere.origin.find("made on another machine") != std::string::npos);
  other = t;
  other.version = "0.0.1+old";
  BOOST_TEST(tuning_for(dir.write("old.yaml", tuning_yaml(other))).origin.find("made by ringrt 0.0.1+old") !=
             std::string::npos);
  BOOST_TEST(tuning_for("off").origin == "off: tinygrad's rule");
  BOOST_TEST(tuning_for((dir.dir / "missing.yaml").string()).origin.find("cannot open") != std::string::npos);
  // auto: the cache folder's tuning.yaml, only when the folder and the file are this user's own, no link
  // (each case in a folder of its own: a file is read once per process)
  auto auto_origin = [&](const std::string& sub, const std::function<void(const fs::path&)>& make) {
    fs::path cache = dir.dir / sub;
    fs::create_directories(cache);
    fs::permissions(cache, fs::perms(0700));
    make(cache);
    ::setenv("RINGRT_CACHE_DIR", cache.c_str(), 1);
    std::string origin = tuning_for("auto").origin;
    ::unsetenv("RINGRT_CACHE_DIR");
    return origin;
  };
  BOOST_TEST(auto_origin("none", [](const fs::path&) {}).find("no file") != std::string::npos);
  BOOST_TEST(auto_origin("link", [&](const fs::path& c) {
               fs::create_symlink(ok, c / "tuning.yaml");
             }).find("symbolic link") != std::string::npos);
  auto write_mode = [&](fs::perms mode) {
    return [&, mode](const fs::path& c) {
      std::ofstream(c / "tuning.yaml") << tuning_yaml(t);
      fs::permissions(c / "tuning.yaml", mode);
    };
  };
  BOOST_TEST(auto_origin("shared", write_mode(fs::perms(0622))).find("written by other users") != std::string::npos);
  BOOST_TEST(auto_origin("open", [&](const fs::path& c) {
               write_mode(fs::perms(0600))(c);
               fs::permissions(c, fs::perms(0777));
             }).find("its folder is refused (writable by group or others") != std::string::npos);
  BOOST_TEST(auto_origin("own", write_mode(fs::perms(0600))).find("(ringrt tune, ") != std::string::npos);
}

// The lowering follows the tuned choice while ring and all2all are automatic; a forced level wins.
BOOST_AUTO_TEST_CASE(lowering_follows_the_tuned_choice) {
  Scratch dir;
  // 4 NULL devices, 400 float32 each (1600 B): tinygrad's rule says naive (below 256000 elements)
  std::string file =
      dir.write("t.yaml", tuning_yaml(table_of({choice(Collective::allreduce, "NULL", 4, 1600, Algorithm::all2all)})));
  Tensor x = Tensor::full({4, 400}, 1.0).contiguous().shard(test::null_devices(4), 0);
  x.realize();
  BOOST_TEST(algorithm_of(x.sum({0}), file) == "all2all");
  BOOST_TEST(algorithm_of(x.sum({0}), "off") == "naive");
  BOOST_TEST(algorithm_of(x.sum({0}), file, /*ring=*/2) == "ring");  // forced
  AllreduceSettings threshold;  // a threshold the user set: tinygrad's rule with it (400 > 100: ring)
  threshold.tuning = file;
  threshold.ring_threshold = 100;
  {
    ScopedSettings scope(threshold);
    BOOST_TEST(x.sum({0}).schedule().algorithms.at(0) == "ring");
  }
  Tensor three = Tensor::full({3, 400}, 1.0).contiguous().shard(test::null_devices(3), 0);
  three.realize();
  BOOST_TEST(algorithm_of(three.sum({0}), file) == "naive");  // no choice for 3 devices: the rule
}

// A tuned reduce-scatter on cpu devices: the choice applies per collective, and the values stay right
// (the interpreter against host arithmetic).
BOOST_AUTO_TEST_CASE(tuned_reduce_scatter_keeps_its_values) {
  Scratch dir;
  for (Algorithm algo : {Algorithm::ring, Algorithm::all2all}) {
    std::string name(algorithm_name(algo));
    std::string file =
        dir.write(name + ".yaml", tuning_yaml(table_of({choice(Collective::reduce_scatter, "CPU", 3, 72, algo)})));
    AllreduceSettings s;
    s.tuning = file;
    ScopedSettings scope(s);
    std::vector<HostBuffer> in = testing::collective_locals(3, {3, 6}, DType::float32, 5);
    Tensor r = Tensor::from_shards(in, cpu_devices(3), 0).reduce_scatter(ReduceOp::sum, 0);
    BOOST_TEST(r.algorithms() == std::vector<std::string>{name});
    RINGRT_CHECK_RESULT(testing::check_values(testing::interpreter_values(r), r.devices(),
                                              testing::collective_expected("reduce_scatter", in, ReduceOp::sum, 0),
                                              testing::describe(r, "reduce_scatter")));
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
