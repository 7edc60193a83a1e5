// Helpers of the integration tests: run the `ringrt` program as a subprocess (its path comes from
// the RINGRT_CLI_PATH compile definition, see cmake/RingrtTests.cmake) and scratch files.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/settings.hpp"
#include "runtime/cli/config.hpp"
#include "test/support/temp_dir.hpp"

namespace ringrt::test {

namespace fs = std::filesystem;

// True in a sanitizer build (the asan and tsan presets): the sanitizers reserve terabytes of address
// space for their shadow memory at start, so a program run under `ulimit -v` dies before main. Tests
// that limit the address space skip those runs there.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizedBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitizedBuild = true;
#else
constexpr bool kSanitizedBuild = false;
#endif
#else
constexpr bool kSanitizedBuild = false;
#endif

inline std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

struct CliResult {
  int status = -1;  // the exit status; 128 + signal when killed
  std::string out, err;
};

// Runs `ringrt args...` in the source directory (so "configs/x.yaml" works) with stdin from
// /dev/null and stdout/stderr captured (not a TTY). Every tunable's environment variable and
// RINGRT_TEST_CORRUPT are removed first; `env` entries ("RING=2") are then set.
// `limits`, when given, is shell text run before the program in the same shell (e.g. "ulimit -v 50000").
inline CliResult run_cli(const std::vector<std::string>& args, const std::vector<std::string>& env = {},
                         const std::string& limits = "") {
  TempDir dir;
  std::string cmd = "cd " + shell_quote(RINGRT_SOURCE_DIR) + (limits.empty() ? "" : " && " + limits) +
                    " && env -u RINGRT_TEST_CORRUPT";
  for (const Tunable& t : tunables())
    if (!t.env.empty()) cmd += " -u " + std::string(t.env);
  for (const std::string& e : env) cmd += " " + shell_quote(e);
  cmd += " " + shell_quote(RINGRT_CLI_PATH);
  for (const std::string& a : args) cmd += " " + shell_quote(a);
  cmd +=
      " </dev/null >" + shell_quote((dir.path() / "out").string()) + " 2>" + shell_quote((dir.path() / "err").string());
  int raw = std::system(cmd.c_str());
  CliResult r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + (WIFSIGNALED(raw) ? WTERMSIG(raw) : 0);
  r.out = read_file(dir.path() / "out");
  r.err = read_file(dir.path() / "err");
  return r;
}

// The table rows of `ringrt run` output: every line that does not start with '#', split on blanks.
inline std::vector<std::vector<std::string>> table_rows(const std::string& out) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::vector<std::string> row;
    for (std::string w; words >> w;) row.push_back(w);
    rows.push_back(row);
  }
  return rows;
}

// The YAML files of configs/ as "configs/<name>.yaml", sorted.
inline std::vector<std::string> config_files() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(fs::path(RINGRT_SOURCE_DIR) / "configs"))
    if (e.path().extension() == ".yaml") out.push_back("configs/" + e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Small, fast overrides that keep a config's form: sizes up to 16 KiB, or three small buckets.
inline std::vector<std::string> small_run(const std::string& config) {
  ExperimentConfig cfg = load_config(std::string(RINGRT_SOURCE_DIR) + "/" + config);
  std::vector<std::string> args{"run", config, "--set", "experiment.warmup=1", "--set", "experiment.iters=1"};
  if (cfg.form == SweepForm::buckets) {
    args.insert(args.end(), {"--set", "experiment.buckets=[4096, 1000, 64]"});
  } else if (cfg.form == SweepForm::sizes) {
    args.insert(args.end(), {"--set", "experiment.sizes.min=1KiB", "--set", "experiment.sizes.max=16KiB"});
  } else {
    args.insert(args.end(), {"--set", "experiment.counts=[256, 1000]"});
  }
  return args;
}

}  // namespace ringrt::test
