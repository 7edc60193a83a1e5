// `ringrt run` stopped part way: SIGTERM stops it at a safe point with the rows finished written and
// exit status 143; a run killed outright leaves in --csv/--json every row it printed. Reference: README
// "SIGINT and SIGTERM".
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/files.hpp"
#include "test/integration/cli_run.hpp"

BOOST_AUTO_TEST_SUITE(test_cli)

using namespace ringrt;
using namespace ringrt::test;
using nlohmann::json;

namespace {

// `ringrt run` on configs/default.yaml with `extra` arguments, spawned with stdout on a pipe, stderr
// into err, TMPDIR tmp and no RINGRT_ variables; after every read of its stdout, watch(pid, text so
// far). Returns the wait status and the whole stdout.
struct Watched {
  int raw = 0;
  std::string out;
};
// `ringrt` with `command_args` (the subcommand first), as run_watched below.
Watched command_watched(const std::vector<std::string>& command_args, const fs::path& tmp, const std::string& err,
                        const std::function<void(pid_t, const std::string&)>& watch) {
  std::vector<std::string> args{RINGRT_CLI_PATH};
  args.insert(args.end(), command_args.begin(), command_args.end());
  std::vector<std::string> env{"TMPDIR=" + tmp.string()};
  for (char** e = environ; *e; ++e)
    if (std::string_view(*e).rfind("RINGRT_", 0) != 0 && std::string_view(*e).rfind("TMPDIR=", 0) != 0)
      env.push_back(*e);
  std::vector<char*> argv, envp;
  for (std::string& a : args) argv.push_back(a.data());
  for (std::string& e : env) envp.push_back(e.data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  int out[2];
  BOOST_TEST_REQUIRE(::pipe(out) == 0);
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  ::posix_spawn_file_actions_addclose(&actions, out[0]);
  ::posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  BOOST_TEST_REQUIRE(::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data()) == 0);
  ::posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  Watched w;
  char buf[4096];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) {
    w.out.append(buf, static_cast<size_t>(n));
    watch(pid, w.out);
  }
  ::close(out[0]);
  BOOST_TEST_REQUIRE(::waitpid(pid, &w.raw, 0) == pid);
  return w;
}

Watched run_watched(const std::vector<std::string>& extra, const fs::path& tmp, const std::string& err,
                    const std::function<void(pid_t, const std::string&)>& watch) {
  std::vector<std::string> args{"run", std::string(RINGRT_SOURCE_DIR) + "/configs/default.yaml"};
  args.insert(args.end(), extra.begin(), extra.end());
  return command_watched(args, tmp, err, watch);
}

// The later counts of these runs are large, so a signal sent once the first row is out comes long
// before the run could end.
const std::vector<std::string> kLongRun{"--set", "experiment.counts=[64, 1048576, 1048576, 1048576, 1048576, 1048576]",
                                        "--set", "experiment.iters=20"};

}  // namespace

// SIGTERM once the first row is out: the run stops at its next safe point (between two
// allreduces, or a compile killed), says so, writes the rows finished to --csv and exits 128 + 15,
// with no compile folder (ringrt-cc-*) left in its TMPDIR.
BOOST_AUTO_TEST_CASE(sigterm_stops_a_run_and_keeps_the_rows_finished) {
  TempDir dir;
  fs::create_directories(dir.path() / "tmp");
  std::string csv = (dir.path() / "out.csv").string(), err = (dir.path() / "err").string();
  std::string junit = (dir.path() / "out.xml").string();
  std::vector<std::string> extra = kLongRun;
  extra.insert(extra.end(), {"--csv", csv, "--junit", junit});
  bool signalled = false;
  Watched w = run_watched(extra, dir.path() / "tmp", err, [&](pid_t pid, const std::string& text) {
    // twice at once, as coreutils `timeout` does (the command, then its process group): one orderly stop
    if (!signalled && !table_rows(text).empty() && text.back() == '\n')
      signalled = ::kill(pid, SIGTERM) == 0 && ::kill(pid, SIGTERM) == 0;
  });
  BOOST_TEST_REQUIRE(signalled);
  BOOST_TEST(WIFEXITED(w.raw));
  BOOST_TEST(WEXITSTATUS(w.raw) == 143, read_file(err));
  size_t rows = table_rows(w.out).size();
  BOOST_TEST(rows >= 1u);
  BOOST_TEST(rows < 6u);
  BOOST_TEST(
      read_file(err).find(fmt::format("ringrt: interrupted by SIGTERM after {} of 6 rows", rows)) != std::string::npos,
      read_file(err));
  BOOST_TEST(w.out.find(fmt::format("# #wrong in all: 0 stopped after {} of 6 rows\n", rows)) != std::string::npos,
             w.out);
  BOOST_TEST(w.out.find(" OK\n") == std::string::npos, w.out);  // a stopped run never says OK
  std::string written = read_file(csv);
  BOOST_TEST(static_cast<size_t>(std::count(written.begin(), written.end(), '\n')) == rows + 1, written);
  BOOST_TEST(written.find("\n256,64,float32,sum,") != std::string::npos,
             written);                           // (the algorithm: the machine's choice)
  BOOST_TEST(fs::is_empty(dir.path() / "tmp"));  // no ringrt-cc-* folder, no compiler temporaries
  // the JUnit file of a stopped run is not green: an error case says it was stopped
  std::string xml = read_file(junit);
  BOOST_TEST(xml.find("<testcase name=\"(the run)\"") != std::string::npos, xml);
  BOOST_TEST(xml.find("message=\"stopped by SIGTERM\"") != std::string::npos, xml);
  BOOST_TEST(
      xml.find(fmt::format("<testsuites tests=\"{}\" failures=\"0\" errors=\"1\"", rows + 1)) != std::string::npos,
      xml);
}

// SIGINT (Ctrl-C) stops a run as SIGTERM does, with exit status 128 + 2.
BOOST_AUTO_TEST_CASE(sigint_stops_a_run_with_status_130) {
  TempDir dir;
  fs::create_directories(dir.path() / "tmp");
  std::string err = (dir.path() / "err").string();
  bool signalled = false;
  Watched w = run_watched(kLongRun, dir.path() / "tmp", err, [&](pid_t pid, const std::string& text) {
    if (!signalled && !table_rows(text).empty() && text.back() == '\n') signalled = ::kill(pid, SIGINT) == 0;
  });
  BOOST_TEST_REQUIRE(signalled);
  BOOST_TEST(WIFEXITED(w.raw));
  BOOST_TEST(WEXITSTATUS(w.raw) == 130, read_file(err));
  BOOST_TEST(read_file(err).find("ringrt: interrupted by SIGINT after ") != std::string::npos, read_file(err));
}

namespace {
// Whether SIGTERM is still pending for process pid, to it or to one of its threads (/proc/PID/status ShdPnd and
// SigPnd, hexadecimal masks: bit n-1 for signal n); false once delivered, or when the file cannot be read.
bool sigterm_pending(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("ShdPnd:", 0) == 0 || line.rfind("SigPnd:", 0) == 0)
      if (std::stoull(line.substr(7), nullptr, 16) & (1ull << (SIGTERM - 1))) return true;
  return false;
}
}  // namespace

// The second-signal rule (runtime/cli/main.cpp on_stop_signal): another signal while the stop is under way
// ends the process at once, by that signal; the same signal again within a second does not (one sender
// delivering twice: the SIGTERM case above).
BOOST_AUTO_TEST_CASE(a_second_different_signal_ends_the_run_at_once) {
  TempDir dir;
  fs::create_directories(dir.path() / "tmp");
  std::string err = (dir.path() / "err").string();
  bool signalled = false;
  // rows of 64 MiB per device after the first: the stop the first signal asks for waits for the allreduce under
  // way, tens of milliseconds, so the second arrives before the run could end by itself on a loaded machine
  const std::vector<std::string> big{"--set", "experiment.counts=[64, 16777216, 16777216]", "--set",
                                     "experiment.iters=3"};
  Watched w = run_watched(big, dir.path() / "tmp", err, [&](pid_t pid, const std::string& text) {
    if (signalled || table_rows(text).empty() || text.back() != '\n') return;
    // SIGINT once SIGTERM is delivered: two standard signals pending at once are delivered lowest number first
    // (Linux), which would make SIGINT the first and SIGTERM the second
    signalled = ::kill(pid, SIGTERM) == 0;
    for (int i = 0; signalled && i < 20000 && sigterm_pending(pid); ++i) ::usleep(50);
    signalled = signalled && ::kill(pid, SIGINT) == 0;
  });
  BOOST_TEST_REQUIRE(signalled);
  BOOST_TEST(WIFSIGNALED(w.raw), "wait status " << w.raw << "; stderr: " << read_file(err));
  if (WIFSIGNALED(w.raw)) BOOST_TEST(WTERMSIG(w.raw) == SIGINT);
}

// A `ringrt tune` stopped by SIGTERM after its first point writes nothing: the file at --out keeps its old bytes,
// no temporary file is left beside it, and the status is 143.
BOOST_AUTO_TEST_CASE(a_stopped_tune_writes_nothing) {
  TempDir dir;
  fs::create_directories(dir.path() / "tmp");
  std::string out = (dir.path() / "tuning.yaml").string(), err = (dir.path() / "err").string();
  write_file(out, "the tuning file before\n");
  std::vector<std::string> args{"tune",          std::string(RINGRT_SOURCE_DIR) + "/configs/default.yaml",
                                "--out",         out,
                                "--collectives", "allreduce",
                                "--rounds",      "1",
                                "--set",         "experiment.sizes={min: 4KiB, max: 64MiB, factor: 4}"};
  bool signalled = false;
  Watched w = command_watched(args, dir.path() / "tmp", err, [&](pid_t pid, const std::string& text) {
    // the header, the table's header, then a point's line: stop during the next point
    if (!signalled && std::count(text.begin(), text.end(), '\n') >= 3) signalled = ::kill(pid, SIGTERM) == 0;
  });
  BOOST_TEST_REQUIRE(signalled, w.out);
  BOOST_TEST(WIFEXITED(w.raw));
  BOOST_TEST(WEXITSTATUS(w.raw) == 143, read_file(err));
  BOOST_TEST(read_file(err).find("nothing written to " + out) != std::string::npos, read_file(err));
  BOOST_TEST(read_file(out) == "the tuning file before\n");
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir.path())) files += e.is_regular_file() ? 1 : 0;
  BOOST_TEST(files == 2u);  // tuning.yaml and err: no .ringrt-tuning-* left
}

// Exit status 3 from a one-process run: a kernel that cannot be compiled (the compiler, a script that answers
// --version and fails every compile, set through runtime.cxx's environment variable CXX) is a compile error.
BOOST_AUTO_TEST_CASE(a_compile_error_is_status_3) {
  TempDir dir;
  fs::path cxx = dir.path() / "broken-cxx";
  write_file(cxx.string(),
             "#!/bin/sh\n[ \"$1\" = --version ] && { echo broken 1.0; exit 0; }\necho 'error: broken' >&2\nexit 1\n");
  fs::permissions(cxx, fs::perms::owner_all);
  CliResult r =
      run_cli({"run", "configs/default.yaml", "--set", "experiment.sizes.max=1KiB", "--set", "experiment.iters=1"},
              {"CXX=" + cxx.string(), "RINGRT_CACHE_DIR=" + (dir.path() / "cache").string()});
  BOOST_TEST(r.status == 3, r.err);
  BOOST_TEST(r.err.find("error: broken") != std::string::npos, r.err);
}

// A run killed outright (SIGKILL: as by a second signal, another rank's MPI_Abort or the OOM killer)
// leaves in --csv and --json every row it printed, each row written before it is shown, and never
// the previous run's content (the files held another run's text before).
BOOST_AUTO_TEST_CASE(a_killed_run_leaves_the_rows_it_printed) {
  TempDir dir;
  fs::create_directories(dir.path() / "tmp");
  std::string csv = (dir.path() / "out.csv").string(), js = (dir.path() / "out.json").string();
  write_file(csv, "a previous run's rows\n");
  write_file(js, "{\"rows\": [\"a previous run's\"]}\n");
  std::vector<std::string> extra = kLongRun;
  extra.insert(extra.end(), {"--csv", csv, "--json", js});
  bool killed = false;
  Watched w =
      run_watched(extra, dir.path() / "tmp", (dir.path() / "err").string(), [&](pid_t pid, const std::string& text) {
        if (!killed && !table_rows(text).empty() && text.back() == '\n') killed = ::kill(pid, SIGKILL) == 0;
      });
  BOOST_TEST_REQUIRE(killed);
  BOOST_TEST_REQUIRE(WIFSIGNALED(w.raw));
  std::vector<std::vector<std::string>> shown = table_rows(w.out);
  BOOST_TEST_REQUIRE(shown.size() >= 1u);
  std::string written = read_file(csv);
  size_t lines = static_cast<size_t>(std::count(written.begin(), written.end(), '\n'));
  BOOST_TEST(lines >= shown.size() + 1, written);  // the header, then at least the rows shown
  BOOST_TEST(written.rfind("size_bytes,count,", 0) == 0, written);
  BOOST_TEST(written.find("\n256,64,float32,sum,") != std::string::npos,
             written);  // (the algorithm: the machine's choice)
  json j = json::parse(read_file(js));
  BOOST_TEST(j["rows"].size() == lines - 1);
  BOOST_TEST(j["rows"][0]["count"] == 64);
  BOOST_TEST(j["rows"][0]["wrong"] == 0);
}

BOOST_AUTO_TEST_SUITE_END()
