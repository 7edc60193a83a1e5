// Small helpers shared by the Boost.Test suites (header only; include after <boost/test/unit_test.hpp>).
//
// - same_element(got, want, i) and message_has(...): the testing library's (testing/checks.hpp): an element
//   compared bit for bit, any NaN matching any NaN; a BOOST_CHECK_EXCEPTION predicate that checks what() names
//   every given part (the op, the shapes, the axis, ...).
// - RINGRT_RUN_IN_CHILD(): runs the rest of the current test case in a child process (this executable
//   again, with --run_test=<this case>), so that a crash such as a stack overflow fails this one case
//   with a clear message instead of ending the whole run. Use it for tests of bounds and limits, and
//   for fuzz tests (mark each input with BOOST_TEST_CHECKPOINT so that a crash names it).
#pragma once

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <string>
#include <vector>

#include "testing/checks.hpp"

extern char** environ;

namespace ringrt::test {

// The comparisons of the testing library (testing/checks.hpp), under their old names here.
using testing::message_has;
using testing::same_element;

constexpr const char* kChildEnv = "RINGRT_TEST_CHILD";

inline bool in_child() {
  const char* v = std::getenv(kChildEnv);
  return v != nullptr && std::strcmp(v, "1") == 0;
}

// A test case run in a child process (this executable again, --run_test=<case>, RINGRT_TEST_CHILD=1): its wait
// status and its Boost.Test short report (written to a file of its own, read back).
struct ChildRun {
  int status = 0;
  std::string report;
};
inline ChildRun run_case_in_child(const std::string& name) {
  std::string exe = "/proc/self/exe", run = "--run_test=" + name;
  char report_path[] = "/tmp/ringrt-child-report-XXXXXX";
  int report_fd = ::mkstemp(report_path);
  BOOST_REQUIRE_MESSAGE(report_fd >= 0, "mkstemp failed: " << std::strerror(errno));
  ::close(report_fd);
  // The child keeps Boost.Test's signal handling, so a crash there still names the last checkpoint.
  std::vector<std::string> args{exe, run, "--report_level=short", "--color_output=no",
                                std::string("--report_sink=") + report_path};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::string flag = std::string(kChildEnv) + "=1";
  std::vector<char*> envp;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, kChildEnv, std::strlen(kChildEnv)) != 0) envp.push_back(*e);
  envp.push_back(flag.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv.data(), envp.data());
  BOOST_REQUIRE_MESSAGE(rc == 0, "posix_spawn failed: " << std::strerror(rc));
  ChildRun out;
  BOOST_REQUIRE(waitpid(pid, &out.status, 0) == pid);
  if (FILE* f = std::fopen(report_path, "r")) {
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.report.append(buf, n);
    std::fclose(f);
  }
  ::unlink(report_path);
  return out;
}

// Whether the child ran its one case and it passed: exit status 0 and "1 test case out of N passed" (the
// module's other cases count as skipped, not selected); a child whose case was skipped (a precondition false
// there) exits 0 too, and did not run it.
inline bool child_ran_the_case(const ChildRun& r) {
  return WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0 &&
         std::regex_search(r.report, std::regex(R"((^|\s)1 test case out of [0-9]+ passed)"));
}

// Runs the current test case in a child process and checks that it exits with status 0 and ran the case: a
// child that skipped it (a precondition false there, such as devices that vanished, while it held in this
// process) is an error, not a pass.
inline void check_current_case_in_child() {
  std::string name = boost::unit_test::framework::current_test_case().full_name();
  ChildRun r = run_case_in_child(name);
  if (WIFSIGNALED(r.status)) {
    BOOST_ERROR("test case " << name << " crashed in its child process with signal " << WTERMSIG(r.status) << " ("
                             << strsignal(WTERMSIG(r.status)) << ")");
  } else if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0) {
    BOOST_ERROR("test case " << name << " failed in its child process (exit status "
                             << (WIFEXITED(r.status) ? WEXITSTATUS(r.status) : -1) << ")");
  } else {
    // the report quoted on one line: as Boost prints it, CTest's skip pattern would match it and hide this
    // failure as a skip
    std::string quoted = std::regex_replace(r.report, std::regex("\\s*\n\\s*"), " | ");
    BOOST_CHECK_MESSAGE(child_ran_the_case(r),
                        "test case " << name << " did not run in its child process (skipped there): " << quoted);
  }
}

}  // namespace ringrt::test

// Place first in a test case: the parent spawns the child and returns; the child runs the body.
#define RINGRT_RUN_IN_CHILD()                        \
  do {                                               \
    if (!::ringrt::test::in_child()) {               \
      ::ringrt::test::check_current_case_in_child(); \
      return;                                        \
    }                                                \
  } while (0)
