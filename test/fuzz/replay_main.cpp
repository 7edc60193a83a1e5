// main() of a fuzz target built without libFuzzer (g++ builds: CTest's `fuzz` tests): runs every seed
// input, then deterministic random mutations of them, through LLVMFuzzerTestOneInput. Coverage-guided
// fuzzing is scripts/fuzz.sh (clang, libFuzzer); this replays its corpus and mutates blindly, in seconds.
//   fuzz_<x> [--mutations N] [--seed S] [--max-len BYTES] PATH...   (PATH: a file or a folder of files)
// A failing input is written to ./fuzz-failure-<seed>-<index> before the process aborts (SIGABRT).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

using Input = std::string;

struct Options {
  long mutations = 1000;
  unsigned long seed = 1;
  size_t max_len = 4096;
  std::vector<std::filesystem::path> paths;
};

// The input being run, for the SIGABRT handler (which may only use async-signal-safe calls).
const Input* g_current = nullptr;
char g_failure_path[256] = "fuzz-failure";

extern "C" void on_abort(int) {
  if (g_current) {
    int fd = ::open(g_failure_path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
    if (fd >= 0) {
      (void)!::write(fd, g_current->data(), g_current->size());
      ::close(fd);
      (void)!::write(2, "replay: failing input written to ", 34);
      (void)!::write(2, g_failure_path, std::char_traits<char>::length(g_failure_path));
      (void)!::write(2, "\n", 1);
    }
  }
  std::signal(SIGABRT, SIG_DFL);
  std::raise(SIGABRT);
}

void run(const Input& in, unsigned long seed, long index) {
  std::snprintf(g_failure_path, sizeof g_failure_path, "fuzz-failure-%lu-%ld", seed, index);
  g_current = &in;
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(in.data()), in.size());
  g_current = nullptr;
}

// Pieces of YAML and of ringrt's keys: mutations that insert them reach deeper than random bytes.
const std::vector<std::string> kTokens = {": ",
                                          "\n",
                                          "\n  ",
                                          "- ",
                                          "[",
                                          "]",
                                          "{",
                                          "}",
                                          ",",
                                          "'",
                                          "\"",
                                          "#",
                                          "&a ",
                                          "*a",
                                          "!!str ",
                                          "~",
                                          "null",
                                          "-1",
                                          "0",
                                          "1e400",
                                          "9223372036854775808",
                                          "99999999999999999999",
                                          ".nan",
                                          "true",
                                          "KiB",
                                          "GiB",
                                          "devices",
                                          "count",
                                          "groups",
                                          "backend",
                                          "experiment",
                                          "sizes",
                                          "counts",
                                          "buckets",
                                          "allreduce",
                                          "ring",
                                          "reduce_leaders",
                                          "runtime",
                                          "watchdog_s",
                                          "CPU:0",
                                          "HIP:0",
                                          "=",
                                          "min",
                                          "max",
                                          "factor"};

Input mutate(const std::vector<Input>& seeds, std::mt19937_64& rng, size_t max_len) {
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  Input in = seeds[pick(seeds.size())];
  for (size_t edits = 1 + pick(4); edits > 0; --edits) {
    size_t at = pick(in.size() + 1);
    switch (pick(6)) {
      case 0:
        if (!in.empty()) in[pick(in.size())] = static_cast<char>(rng());
        break;  // replace a byte
      case 1:
        in.insert(at, 1, static_cast<char>(rng()));
        break;  // insert a byte
      case 2:
        in.insert(at, kTokens[pick(kTokens.size())]);
        break;  // insert a token
      case 3:
        in.erase(at, pick(16));
        break;  // delete a run
      case 4:
        in.insert(at, in.substr(pick(in.size() + 1), pick(64)));
        break;    // duplicate a run
      default: {  // splice another seed
        const Input& other = seeds[pick(seeds.size())];
        in = in.substr(0, at) + other.substr(pick(other.size() + 1));
      }
    }
  }
  if (in.size() > max_len) in.resize(max_len);
  return in;
}

void read_seeds(const std::filesystem::path& p, std::vector<Input>& seeds) {
  if (std::filesystem::is_directory(p)) {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(p))
      if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());  // a fixed order: runs are reproducible from --seed
    for (const auto& f : files) read_seeds(f, seeds);
    return;
  }
  std::ifstream in(p, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "replay: cannot read %s\n", p.c_str());
    std::exit(2);
  }
  seeds.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    bool has_value = i + 1 < argc;
    if (a == "--mutations" && has_value)
      o.mutations = std::strtol(argv[++i], nullptr, 10);
    else if (a == "--seed" && has_value)
      o.seed = std::strtoul(argv[++i], nullptr, 10);
    else if (a == "--max-len" && has_value)
      o.max_len = std::strtoul(argv[++i], nullptr, 10);
    else if (!a.empty() && a[0] != '-')
      o.paths.emplace_back(a);
    else {
      std::fprintf(stderr, "usage: %s [--mutations N] [--seed S] [--max-len BYTES] PATH...\n", argv[0]);
      std::exit(2);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  std::vector<Input> seeds;
  for (const auto& p : o.paths) read_seeds(p, seeds);
  if (seeds.empty()) seeds.emplace_back();
  std::signal(SIGABRT, on_abort);
  for (size_t i = 0; i < seeds.size(); ++i) run(seeds[i], o.seed, -static_cast<long>(i) - 1);
  std::mt19937_64 rng(o.seed);
  for (long i = 0; i < o.mutations; ++i) run(mutate(seeds, rng, o.max_len), o.seed, i);
  std::printf("replay: %zu seed inputs and %ld mutations (seed %lu) passed\n", seeds.size(), o.mutations, o.seed);
  return 0;
}
