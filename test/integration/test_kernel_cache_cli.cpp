// The `ringrt` program against a kernel cache it must not trust (codegen/compile_cache.cpp): damaged entries and an
// unusable cache folder cost one warning each and a correct run; a compiler that cannot be started is
// exit 2 naming it. Sizes are small: the point is the cache, not the collective.
#include <boost/test/unit_test.hpp>

#include "test/integration/cli_run.hpp"

BOOST_AUTO_TEST_SUITE(test_kernel_cache_cli)

using namespace ringrt::test;

namespace {

// The algorithm forced: the automatic choice would measure the cpu cost figures into the cache folder, and
// a second measurement on a loaded machine may choose another algorithm, whose kernels are other entries.
std::vector<std::string> small_run() {
  return {"run",   "configs/default.yaml", "--set", "experiment.counts=[64]",
          "--set", "experiment.iters=1",   "--set", "allreduce.algorithm=naive"};
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

BOOST_AUTO_TEST_CASE(damaged_entries_are_rebuilt_by_the_next_run) {
  TempDir dir;
  std::string cache = "RINGRT_CACHE_DIR=" + (dir.path() / "cache").string();
  CliResult first = run_cli(small_run(), {cache});
  BOOST_TEST_REQUIRE(first.status == 0, first.err);
  BOOST_TEST(first.err.find("warning") == std::string::npos, first.err);
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(dir.path() / "cache")) {
    fs::resize_file(e.path(), 4096);  // dlopen of this would die of SIGBUS
    ++entries;
  }
  BOOST_TEST_REQUIRE(entries > 0u);
  CliResult second = run_cli(small_run(), {cache});
  BOOST_TEST(second.status == 0, second.err);
  BOOST_TEST(count_of(second.err, "ringrt: warning:") == entries, second.err);
  CliResult third = run_cli(small_run(), {cache});  // healed
  BOOST_TEST(third.status == 0, third.err);
  BOOST_TEST(third.err.find("warning") == std::string::npos, third.err);
}

BOOST_AUTO_TEST_CASE(an_unusable_cache_folder_is_one_warning_and_a_working_run) {
  TempDir dir;
  std::string file = dir.write("file", "not a folder");
  fs::path tmp = dir.path() / "tmp";  // the private folder goes here, and must be gone after the run
  fs::create_directory(tmp);
  for (const std::string& env :
       {"RINGRT_CACHE_DIR=" + file, "RINGRT_CACHE_DIR=" + file + "/sub", std::string("HOME=")}) {
    CliResult r = run_cli(small_run(), {env, "XDG_CACHE_HOME=", "TMPDIR=" + tmp.string()});
    BOOST_TEST(r.status == 0, env << ": " << r.err);
    BOOST_TEST(count_of(r.err, "ringrt: warning:") == 1u, env << ": " << r.err);
    BOOST_TEST(r.err.find("removed at exit") != std::string::npos, r.err);
    BOOST_TEST(r.err.find(tmp.string()) != std::string::npos, r.err);
    BOOST_TEST(fs::is_empty(tmp), env << ": the private folder was left in " << tmp);
  }
}

BOOST_AUTO_TEST_CASE(a_compiler_that_cannot_run_is_exit_2_naming_it) {
  TempDir dir;
  for (const std::string cxx : {"/nonexistent/cc", "/etc/passwd"}) {
    CliResult r = run_cli(small_run(), {"RINGRT_CACHE_DIR=" + (dir.path() / "cache").string(), "CXX=" + cxx});
    BOOST_TEST(r.status == 2, cxx << ": " << r.err);
    BOOST_TEST(r.err.find("'" + cxx + "'") != std::string::npos, r.err);
    BOOST_TEST(r.err.find("internal error") == std::string::npos, r.err);
  }
}

BOOST_AUTO_TEST_SUITE_END()
