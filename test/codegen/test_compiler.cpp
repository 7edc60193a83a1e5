// codegen/compiler + compile_cache: the host compiler's errors carry the kernel name and the log, the
// second compile of a kernel is a cache hit (counted, not timed), concurrent compiles of one kernel
// are safe, a damaged cache entry is rebuilt, the cache directory follows the environment, and a stop
// request kills a compile in progress.
#define BOOST_TEST_MODULE codegen_compiler
#include <signal.h>
#include <stdlib.h>

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <thread>

#include "codegen/compiler.hpp"
#include "codegen/render.hpp"
#include "rewrite/errors.hpp"
#include "rewrite/interrupt.hpp"

using namespace ringrt;
using namespace ringrt::codegen;

namespace {

// Sets an environment variable for one scope (restoring the old value) and makes a fresh directory.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::filesystem::path fresh_dir() {
  std::string templ = (std::filesystem::temp_directory_path() / "ringrt-test-cache-XXXXXX").string();
  BOOST_REQUIRE(::mkdtemp(templ.data()) != nullptr);
  return templ;
}

// A small kernel: out[i] = in[i] * 2 + c, with c making the source unique per call site.
std::string doubling_source(int c) {
  UOpGraph g;
  UOp b = new_buffer(DeviceSpec("CPU:0"), 8, DType::int32, &g);
  return render_cpp(lower_kernel(b * b.const_like(2) + b.const_like(c), "doubling"));
}

void check_doubling(CpuKernelFn fn, int c) {
  int32_t in[8] = {0, 1, 2, 3, -4, 5, 6, 100}, out[8] = {};
  void* bufs[2] = {out, in};
  fn(bufs, 0, 0, 8);
  for (int i = 0; i < 8; ++i) BOOST_TEST(out[i] == in[i] * 2 + c);
}

}  // namespace

BOOST_AUTO_TEST_CASE(second_compile_is_a_cache_hit) {
  std::filesystem::path dir = fresh_dir();
  ScopedEnv env("RINGRT_CACHE_DIR", dir.string());
  BOOST_TEST(cache_dir() == dir);
  std::string src = doubling_source(7);
  CompileStats before = compile_stats();
  check_doubling(HostCompiler().load(src, "doubling")->function("doubling"), 7);
  CompileStats mid = compile_stats();
  BOOST_TEST(mid.compiles == before.compiles + 1);
  BOOST_TEST(mid.cache_hits == before.cache_hits);
  check_doubling(HostCompiler().load(src, "doubling")->function("doubling"), 7);  // a new compiler object
  CompileStats after = compile_stats();
  BOOST_TEST(after.compiles == mid.compiles);
  BOOST_TEST(after.cache_hits == mid.cache_hits + 1);
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    BOOST_TEST(e.path().extension() == ".so", e.path());  // no temporary file left behind
    ++files;
  }
  BOOST_TEST(files == 1);
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(concurrent_compiles_of_one_kernel_are_safe) {
  std::filesystem::path dir = fresh_dir();
  ScopedEnv env("RINGRT_CACHE_DIR", dir.string());
  std::string src = doubling_source(11);
  std::vector<std::shared_ptr<HostLibrary>> libs(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < libs.size(); ++t)
    threads.emplace_back([&, t] { libs[t] = HostCompiler().load(src, "doubling"); });
  for (auto& t : threads) t.join();
  for (const auto& lib : libs) check_doubling(lib->function("doubling"), 11);
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(damaged_cache_entry_is_rebuilt) {
  std::filesystem::path dir = fresh_dir();
  ScopedEnv env("RINGRT_CACHE_DIR", dir.string());
  std::string src = doubling_source(5);
  HostCompiler cc;
  std::filesystem::path p = cc.compile_to_path(src, "doubling");
  std::filesystem::resize_file(p, 100);  // truncated: dlopen fails
  CompileStats before = compile_stats();
  check_doubling(cc.load(src, "doubling")->function("doubling"), 5);
  BOOST_TEST(compile_stats().compiles == before.compiles + 1);
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(compile_errors_carry_the_name_and_the_log) {
  std::filesystem::path dir = fresh_dir();
  ScopedEnv env("RINGRT_CACHE_DIR", dir.string());
  try {
    HostCompiler().load("extern \"C\" void broken( { undeclared_thing; }", "broken_kernel");
    BOOST_FAIL("no CompileError");
  } catch (const CompileError& e) {
    std::string what = e.what();
    BOOST_TEST(what.find("broken_kernel") != std::string::npos, what);
    BOOST_TEST(what.find("error") != std::string::npos, what);  // the compiler's log
  }
  BOOST_CHECK_THROW(HostCompiler().load(doubling_source(1), "doubling")->function("no_such_kernel"), CompileError);
  BOOST_CHECK_THROW(HostCompiler("/nonexistent/c++", HostCompiler::default_flags()).load(doubling_source(2), "k"),
                    CompileError);
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(identity_and_keys) {
  HostCompiler a, b("g++", {"-O2", "-fPIC", "-shared", "-std=c++17"});
  BOOST_TEST(a.identity() != b.identity());
  BOOST_TEST(a.identity().find("-march=native") != std::string::npos);
  BOOST_TEST(cache_key("src", a.identity()) != cache_key("src", b.identity()));
  BOOST_TEST(cache_key("src", a.identity()) == cache_key("src", a.identity()));
  BOOST_TEST(cache_key("src1", "id").size() == 32u);
}

BOOST_AUTO_TEST_CASE(cache_dir_follows_the_environment) {
  ScopedEnv xdg("XDG_CACHE_HOME", "/xdg"), home("HOME", "/home/someone");
  {
    ScopedEnv dir("RINGRT_CACHE_DIR", "/explicit");
    BOOST_TEST(cache_dir() == std::filesystem::path("/explicit"));
  }
  ScopedEnv none("RINGRT_CACHE_DIR", "");
  BOOST_TEST(cache_dir() == std::filesystem::path("/xdg/ringrt"));
  ScopedEnv no_xdg("XDG_CACHE_HOME", "");
  BOOST_TEST(cache_dir() == std::filesystem::path("/home/someone/.cache/ringrt"));
}

// ringrt dlopens what the cache holds: a folder others may write, a link, or (as root) a folder of
// another user is never used; the kernels go to a private folder instead and still load.
BOOST_AUTO_TEST_CASE(cache_folder_others_can_write_is_not_used) {
  std::filesystem::path base = fresh_dir();
  std::filesystem::create_directories(base);
  std::filesystem::path open_dir = base / "open", own = base / "own", link = base / "link", fresh = base / "new";
  std::filesystem::create_directories(open_dir);
  std::filesystem::permissions(open_dir, std::filesystem::perms::all);  // 0777, like a shared /tmp folder
  std::filesystem::create_directories(own);
  std::filesystem::permissions(own, std::filesystem::perms::owner_all);
  std::filesystem::create_directory_symlink(own, link);
  for (const auto& refused : {open_dir, link}) {
    ScopedEnv env("RINGRT_CACHE_DIR", refused.string());
    BOOST_TEST(cache_dir() == refused);
    BOOST_TEST(trusted_cache_dir() == private_cache_dir());
    BOOST_TEST(trusted_cache_dir() != refused);
    check_doubling(HostCompiler().load(doubling_source(3), "doubling")->function("doubling"), 3);
  }
  BOOST_TEST(std::filesystem::is_empty(open_dir));
  BOOST_TEST(std::filesystem::is_empty(own));  // nothing went through the link
  ScopedEnv env("RINGRT_CACHE_DIR", fresh.string());
  BOOST_TEST(trusted_cache_dir() == fresh);  // created, private
  BOOST_TEST(static_cast<int>(std::filesystem::status(fresh).permissions() & std::filesystem::perms::mask) == 0700);
  std::filesystem::remove_all(base);
}

BOOST_AUTO_TEST_CASE(clang_compiles_the_same_source) {
  if (std::system("clang++ --version > /dev/null 2>&1") != 0) return;  // optional: only where installed
  std::filesystem::path dir = fresh_dir();
  ScopedEnv env("RINGRT_CACHE_DIR", dir.string());
  check_doubling(
      HostCompiler("clang++", HostCompiler::default_flags()).load(doubling_source(3), "doubling")->function("doubling"),
      3);
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(the_compiler_command_reaches_no_shell) {
  std::filesystem::path dir = fresh_dir();
  ScopedEnv env("RINGRT_CACHE_DIR", dir.string());
  // each word would make a shell create a file; run without one, they are g++'s (bad) arguments
  std::vector<std::filesystem::path> marks;
  for (const char* m : {"semicolon", "dollar", "backtick", "pipe", "and"}) marks.push_back(dir / m);
  std::string cxx = "g++ ;touch " + marks[0].string() + " $(touch " + marks[1].string() + ") `touch " +
                    marks[2].string() + "` |touch " + marks[3].string() + " &&touch " + marks[4].string();
  try {
    HostCompiler(cxx, HostCompiler::default_flags()).load(doubling_source(4), "shell_kernel");
    BOOST_FAIL("no CompileError");
  } catch (const CompileError& e) {
    std::string what = e.what();
    BOOST_TEST(what.find("shell_kernel") != std::string::npos, what);
    BOOST_TEST(what.find("exit status") != std::string::npos, what);
    BOOST_TEST(what.find(";touch") != std::string::npos, what);  // the command as it ran
  }
  for (const auto& m : marks) BOOST_TEST(!std::filesystem::exists(m), m);
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(failures_name_the_exit_status_or_the_signal) {
  std::filesystem::path dir = fresh_dir();
  ScopedEnv env("RINGRT_CACHE_DIR", dir.string());
  auto message = [](const std::string& cxx) {
    try {
      HostCompiler(cxx, {}).load(doubling_source(6), "k");
    } catch (const CompileError& e) {
      return std::string(e.what());
    }
    return std::string("no CompileError");
  };
  std::string exit_1 = message("false"), killed = message("sh -c kill${IFS}-9${IFS}$$"), absent = message("/no/cxx");
  BOOST_TEST(exit_1.find("exit status 1") != std::string::npos, exit_1);
  BOOST_TEST(killed.find("killed by signal 9") != std::string::npos, killed);
  BOOST_TEST(absent.find("cannot run") != std::string::npos, absent);
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(a_launcher_runs_the_compiler) {
  if (std::system("ccache --version > /dev/null 2>&1") != 0) return;  // optional: only where installed
  std::filesystem::path dir = fresh_dir();
  ScopedEnv env("RINGRT_CACHE_DIR", dir.string()), ccache_dir("CCACHE_DIR", (dir / "ccache").string());
  HostCompiler cc("ccache g++", HostCompiler::default_flags());
  BOOST_TEST(cc.identity().find("ccache g++ | g++") != std::string::npos, cc.identity());  // g++'s version
  check_doubling(cc.load(doubling_source(8), "doubling")->function("doubling"), 8);
  std::filesystem::remove_all(dir);
}

// A stop request (rewrite/interrupt.hpp; the `ringrt` program's SIGINT/SIGTERM) kills a compile in
// progress, the compiler's whole process group (here sh and its sleep, which holds the output pipe
// open: the compile returns only once both are gone), and removes its folder; a compile asked for
// while the request is pending runs nothing.
BOOST_AUTO_TEST_CASE(a_stop_request_kills_the_compiler_and_removes_its_folder) {
  std::filesystem::path dir = fresh_dir(), tmp = dir / "tmp";
  std::filesystem::create_directories(tmp);
  ScopedEnv env("RINGRT_CACHE_DIR", (dir / "cache").string()), tmpdir("TMPDIR", tmp.string());
  std::filesystem::path started = dir / "started";
  // answers --version at once; as the compiler: marks that it started, then waits in a child for 30 s
  HostCompiler slow(
      "sh -c [${IFS}\"$0\"${IFS}=${IFS}--version${IFS}]&&exit;touch${IFS}" + started.string() + ";sleep${IFS}30&wait",
      {});
  std::thread stopper([&] {
    while (!std::filesystem::exists(started)) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    request_interrupt(SIGTERM);
  });
  BOOST_CHECK_EXCEPTION(slow.load(doubling_source(9), "slow_kernel"), Interrupted, [](const Interrupted& e) {
    std::string what = e.what();
    return what.find("slow_kernel") != std::string::npos && what.find("signal 15") != std::string::npos;
  });
  stopper.join();
  std::filesystem::remove(started);
  BOOST_CHECK_THROW(slow.load(doubling_source(10), "slow_kernel"), Interrupted);  // still pending
  BOOST_TEST(!std::filesystem::exists(started));
  clear_interrupt();
  BOOST_TEST(std::filesystem::is_empty(tmp));  // no ringrt-cc-* folder left
  std::filesystem::remove_all(dir);
}
