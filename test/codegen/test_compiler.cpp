// codegen/compiler + compile_cache: the host compiler's errors carry the kernel name and the log, the
// second compile of a kernel is a cache hit (counted, not timed), concurrent compiles of one kernel
// are safe, a damaged cache entry is rebuilt, the cache directory follows the environment, and a stop
// request kills a compile in progress. The cache trusts nothing it finds: planted, damaged, swapped
// entries are refused (one warning) and rebuilt, an unwritable cache falls back to this process's
// private folder, a compiler that cannot run is a ConfigError naming it.
#include <fmt/format.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "codegen/compiler.hpp"
#include "codegen/render.hpp"
#include "core/errors.hpp"
#include "core/interrupt.hpp"

BOOST_AUTO_TEST_SUITE(test_compiler)

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

// Everything written to stderr (fd 2) while it lives.
class CaptureStderr {
 public:
  CaptureStderr() : file_(std::tmpfile()), saved_(::dup(2)) {
    std::fflush(stderr);
    ::dup2(::fileno(file_), 2);
  }
  ~CaptureStderr() { text(); }
  std::string text() {
    if (saved_ >= 0) {
      std::fflush(stderr);
      ::dup2(saved_, 2);
      ::close(saved_);
      saved_ = -1;
      std::rewind(file_);
      char buf[4096];
      for (size_t n; (n = std::fread(buf, 1, sizeof buf, file_)) > 0;) text_.append(buf, n);
      std::fclose(file_);
    }
    return text_;
  }

 private:
  FILE* file_;
  int saved_;
  std::string text_;
};

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
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
                    ConfigError);
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
  ScopedEnv no_home("HOME", "");  // no shared fallback under /tmp: this process's private folder
  BOOST_TEST(cache_dir().empty());
  BOOST_TEST(trusted_cache_dir() == private_cache_dir());
  BOOST_TEST(static_cast<int>(std::filesystem::status(private_cache_dir()).permissions() &
                              std::filesystem::perms::mask) == 0700);
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

namespace {
// A precondition: `tool --version` runs (an optional tool; the case reports a skip without it).
struct HasTool {
  const char* tool;
  boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const {
    boost::test_tools::assertion_result r(std::system(fmt::format("{} --version > /dev/null 2>&1", tool).c_str()) == 0);
    r.message() << tool << " is not installed (optional)";
    return r;
  }
};
}  // namespace

BOOST_AUTO_TEST_CASE(clang_compiles_the_same_source, *boost::unit_test::precondition(HasTool{"clang++"})) {
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
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no Error");
  };
  std::string exit_1 = message("false"), killed = message("sh -c kill${IFS}-9${IFS}$$"), absent = message("/no/cxx");
  BOOST_TEST(exit_1.find("exit status 1") != std::string::npos, exit_1);
  BOOST_TEST(killed.find("killed by signal 9") != std::string::npos, killed);
  BOOST_TEST(absent.find("cannot be run") != std::string::npos, absent);
  std::string too_big;
  {
    ScopedEnv huge("RINGRT_TEST_HUGE", std::string(256 * 1024, 'x'));  // over Linux's 128 KiB a string
    too_big = message("g++");
  }
  BOOST_TEST(too_big.find("Argument list too long") != std::string::npos, too_big);
  BOOST_TEST(too_big.find("the process environment") != std::string::npos, too_big);  // not blamed on CXX
  BOOST_TEST(too_big.find("CXX") == std::string::npos, too_big);
  std::filesystem::remove_all(dir);
}

// A compiler named without a folder is found on $PATH, or on the system's default path where PATH is
// unset (`env -i`), and run by its full path: g++ finds cc1plus from it.
BOOST_AUTO_TEST_CASE(the_compiler_is_found_without_path) {
  std::filesystem::path dir = fresh_dir();
  ScopedEnv env("RINGRT_CACHE_DIR", dir.string());
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::unsetenv("PATH");
  std::string error;
  try {
    check_doubling(
        HostCompiler("g++", HostCompiler::default_flags()).load(doubling_source(5), "no_path")->function("doubling"),
        5);
  } catch (const Error& e) {
    error = e.what();
  }
  ::setenv("PATH", path.c_str(), 1);
  BOOST_TEST(error.empty(), error);
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(a_launcher_runs_the_compiler, *boost::unit_test::precondition(HasTool{"ccache"})) {
  std::filesystem::path dir = fresh_dir();
  ScopedEnv env("RINGRT_CACHE_DIR", dir.string()), ccache_dir("CCACHE_DIR", (dir / "ccache").string());
  HostCompiler cc("ccache g++", HostCompiler::default_flags());
  BOOST_TEST(cc.identity().find("ccache g++ | g++") != std::string::npos, cc.identity());  // g++'s version
  check_doubling(cc.load(doubling_source(8), "doubling")->function("doubling"), 8);
  std::filesystem::remove_all(dir);
}

namespace {

// A valid library whose constructor creates `marker` when it is loaded, and that has a `doubling`.
std::string planted_library(const std::filesystem::path& marker) {
  return HostCompiler().compile(fmt::format(R"(#include <fcntl.h>
#include <unistd.h>
__attribute__((constructor)) static void planted() {{ ::close(::open("{}", O_CREAT | O_WRONLY, 0600)); }}
extern "C" void doubling(void**, int, long, long) {{}}
)",
                                            marker.string()),
                                "planted");
}

// The entry, loaded as a run would: right values, one warning naming it and `reason`, one compile, and
// the entry rebuilt in place (a regular file of this user, 0600).
void check_refused_and_rebuilt(const std::filesystem::path& entry, int c, const std::string& reason) {
  CompileStats before = compile_stats();
  CaptureStderr err;
  check_doubling(HostCompiler().load(doubling_source(c), "doubling")->function("doubling"), c);
  std::string text = err.text();
  BOOST_TEST(compile_stats().compiles == before.compiles + 1);
  BOOST_TEST(count_of(text, "ringrt: warning:") == 1u, text);
  BOOST_TEST(text.find(entry.string()) != std::string::npos, text);
  BOOST_TEST(text.find(reason) != std::string::npos, text);
  struct stat st {};
  BOOST_REQUIRE(::lstat(entry.c_str(), &st) == 0);
  BOOST_TEST(S_ISREG(st.st_mode));
  BOOST_TEST(st.st_uid == ::getuid());
  BOOST_TEST((st.st_mode & 0777) == 0600u);
  before = compile_stats();  // and the next run finds it
  check_doubling(HostCompiler().load(doubling_source(c), "doubling")->function("doubling"), c);
  BOOST_TEST(compile_stats().cache_hits == before.cache_hits + 1);
}

}  // namespace

// A library planted under the right name is never loaded unless it is this user's own, private file:
// another owner (root can chown), group- or world-writable, a link: refused, rebuilt, its constructor
// never runs. Valid records, so only the owner and mode checks stand in the way.
BOOST_AUTO_TEST_CASE(planted_entries_are_refused_and_rebuilt) {
  std::filesystem::path base = fresh_dir(), marker = base / "planted-ran";
  std::string planted;
  {
    ScopedEnv env("RINGRT_CACHE_DIR", (base / "scratch").string());
    planted = planted_library(marker);
  }
  BOOST_TEST(!std::filesystem::exists(marker));
  std::vector<std::string> kinds{"group-writable", "world-writable", "link"};
  if (::getuid() == 0) kinds.push_back("other-owner");
  int c = 30;
  for (const auto& kind : kinds) {
    BOOST_TEST_CONTEXT(kind) {
      std::filesystem::path dir = base / kind, stage = base / ("stage-" + kind);
      std::filesystem::create_directories(stage);
      ScopedEnv env("RINGRT_CACHE_DIR", dir.string());
      BOOST_REQUIRE(trusted_cache_dir() == dir);
      std::string key = cache_key(doubling_source(++c), HostCompiler().identity());
      std::filesystem::path staged = CompileCache(stage).store(key, ".so", planted), entry = dir / (key + ".so");
      std::string reason;
      if (kind == "link") {
        std::filesystem::create_symlink(staged, entry);
        reason = "symbolic link";
      } else {
        std::filesystem::copy_file(staged, entry);
        if (kind == "group-writable") BOOST_REQUIRE(::chmod(entry.c_str(), 0620) == 0);
        if (kind == "world-writable") BOOST_REQUIRE(::chmod(entry.c_str(), 0602) == 0);
        if (kind == "other-owner") BOOST_REQUIRE(::chown(entry.c_str(), 65534, 65534) == 0);
        reason = kind == "other-owner" ? "owned by uid 65534" : "writable by group or others";
      }
      check_refused_and_rebuilt(entry, c, reason);
      BOOST_TEST(!std::filesystem::exists(marker));
    }
  }
  std::filesystem::remove_all(base);
}

// A library truncated to 4096 bytes (dlopen of it would SIGBUS), another kernel's valid entry, a bare
// library without a record, a flipped byte: each detected before loading, and rebuilt.
BOOST_AUTO_TEST_CASE(damaged_and_swapped_entries_are_rebuilt) {
  std::filesystem::path dir = fresh_dir();
  ScopedEnv env("RINGRT_CACHE_DIR", dir.string());
  HostCompiler cc;
  std::filesystem::path other = cc.compile_to_path(doubling_source(40), "doubling");
  std::string bare = cc.compile(doubling_source(40), "doubling");
  auto entry_of = [&](int c) { return cc.compile_to_path(doubling_source(c), "doubling"); };

  std::filesystem::path truncated = entry_of(41);
  BOOST_REQUIRE(std::filesystem::file_size(truncated) > 4096u);
  std::filesystem::resize_file(truncated, 4096);
  check_refused_and_rebuilt(truncated, 41, "no valid ringrt record");

  std::filesystem::path swapped = entry_of(42);
  std::filesystem::copy_file(other, swapped, std::filesystem::copy_options::overwrite_existing);
  check_refused_and_rebuilt(swapped, 42, "another kernel");

  std::filesystem::path no_record = entry_of(43);
  std::ofstream(no_record, std::ios::binary | std::ios::trunc) << bare;
  check_refused_and_rebuilt(no_record, 43, "no valid ringrt record");

  std::filesystem::path flipped = entry_of(44);
  {
    std::fstream f(flipped, std::ios::binary | std::ios::in | std::ios::out);
    f.seekg(200);
    char byte = static_cast<char>(f.get());
    f.seekp(200);
    f.put(static_cast<char>(~byte));
  }
  check_refused_and_rebuilt(flipped, 44, "checksum mismatch");
  std::filesystem::remove_all(dir);
}

// HostCompiler::load_kernels: a kernel an earlier batch compiled comes from that batch through its
// index entry; only the others are compiled, together, in one compiler run. A damaged index entry, or
// one that names a library without the kernel, is a miss: one warning, compiled again, right values.
BOOST_AUTO_TEST_CASE(the_kernel_index_shares_kernels_between_batches) {
  std::filesystem::path dir = fresh_dir();
  ScopedEnv env("RINGRT_CACHE_DIR", dir.string());
  auto kernel = [](int c) {
    UOpGraph g;
    UOp b = new_buffer(DeviceSpec("CPU:0"), 8, DType::int32, &g);
    return lower_kernel(b * b.const_like(2) + b.const_like(c), fmt::format("doubling_{}", c));
  };
  std::vector<Kernel> k{kernel(61), kernel(62), kernel(63)};
  HostCompiler cc;
  auto load = [&](std::vector<size_t> which, uint64_t compiles, uint64_t hits) {
    std::vector<Kernel> ks;
    for (size_t i : which) ks.push_back(k[i]);
    CompileStats before = compile_stats();
    std::vector<HostKernel> got = cc.load_kernels(ks);
    BOOST_TEST(compile_stats().compiles - before.compiles == compiles);
    BOOST_TEST(compile_stats().cache_hits - before.cache_hits == hits);
    for (size_t j = 0; j < which.size(); ++j) check_doubling(got[j].fn, 61 + static_cast<int>(which[j]));
    return got;
  };
  auto first = load({0, 1}, 1, 0);
  auto second = load({1, 2}, 1, 1);  // kernel 1 from the first batch, kernel 2 compiled alone
  BOOST_TEST(second[0].library->path() == first[1].library->path());
  load({0, 1, 2}, 0, 2);  // two batches, nothing compiled

  auto index_entry = [&](size_t i) { return dir / (cache_key(render_cpp(k[i]), cc.identity()) + ".idx"); };
  std::filesystem::resize_file(index_entry(2), 10);
  {
    CaptureStderr err;
    load({2}, 0, 1);  // a miss; its batch of one, compiled above, is still cached
    std::string text = err.text();
    BOOST_TEST(text.find(index_entry(2).string() + " is refused") != std::string::npos, text);
  }
  // kernel 0's index entry, well formed, names kernel 2's batch (which lacks kernel 0)
  CompileCache(dir).store(index_entry(0).stem().string(), ".idx", cache_key(render_cpp(k[2]), cc.identity()));
  CaptureStderr err;
  load({0}, 1, 1);
  std::string text = err.text();
  BOOST_TEST(text.find("names a library without doubling_61") != std::string::npos, text);
  load({0}, 0, 1);  // indexed again
  // an index entry whose content is no key (here a path out of the folder) names nothing
  CompileCache(dir).store(index_entry(1).stem().string(), ".idx", "../planted-aaaaaaaaaaaaaaaaaaaaa");
  CaptureStderr planted;
  load({1}, 1, 0);
  text = planted.text();
  BOOST_TEST(text.find("names no cache entry; compiling doubling_62 again") != std::string::npos, text);
  std::filesystem::remove_all(dir);
}

// A whole entry (its record right) whose bytes the loader refuses, as a compiler that exits 0 with a
// broken output leaves: one warning, compiled again, and the next load finds the good entry.
BOOST_AUTO_TEST_CASE(an_entry_that_cannot_be_loaded_is_compiled_again) {
  std::filesystem::path dir = fresh_dir();
  ScopedEnv env("RINGRT_CACHE_DIR", dir.string());
  std::string src = doubling_source(71);
  HostCompiler cc;
  CompileCache(dir).store(cache_key(src, cc.identity()), ".so", "this is not a shared object");
  CompileStats before = compile_stats();
  CaptureStderr err;
  check_doubling(cc.load(src, "doubling")->function("doubling"), 71);
  std::string text = err.text();
  BOOST_TEST(compile_stats().compiles == before.compiles + 1);
  BOOST_TEST(text.find("cannot be loaded") != std::string::npos, text);
  before = compile_stats();
  check_doubling(cc.load(src, "doubling")->function("doubling"), 71);
  BOOST_TEST(compile_stats().cache_hits == before.cache_hits + 1);
  BOOST_TEST(compile_stats().compiles == before.compiles);
  std::filesystem::remove_all(dir);
}

// A cache that cannot be written: a path that is a regular file, a folder under a file, an entry name
// taken by a folder. One warning, a working run, and the next load in the process finds the kernel in
// the private fallback folder.
BOOST_AUTO_TEST_CASE(unwritable_cache_falls_back_to_the_private_folder) {
  std::filesystem::path base = fresh_dir(), file = base / "a-file";
  std::ofstream(file) << "not a folder";
  int c = 50;
  for (const auto& dir : {file, file / "sub"}) {
    BOOST_TEST_CONTEXT(dir) {
      ScopedEnv env("RINGRT_CACHE_DIR", dir.string());
      CaptureStderr err;
      CompileStats before = compile_stats();
      ++c;
      check_doubling(HostCompiler().load(doubling_source(c), "doubling")->function("doubling"), c);
      check_doubling(HostCompiler().load(doubling_source(c), "doubling")->function("doubling"), c);
      CompileStats after = compile_stats();
      std::string text = err.text();
      BOOST_TEST(after.compiles == before.compiles + 1);
      BOOST_TEST(after.cache_hits == before.cache_hits + 1);
      BOOST_TEST(count_of(text, "ringrt: warning:") == 1u, text);
      BOOST_TEST(text.find(dir.string()) != std::string::npos, text);
      BOOST_TEST(text.find(private_cache_dir().string()) != std::string::npos, text);
    }
  }
  std::filesystem::path dir = base / "cache";  // private and writable, but the entry's name is taken
  ScopedEnv env("RINGRT_CACHE_DIR", dir.string());
  BOOST_REQUIRE(trusted_cache_dir() == dir);
  std::filesystem::path entry = dir / (cache_key(doubling_source(60), HostCompiler().identity()) + ".so");
  std::filesystem::create_directories(entry / "inside");
  CaptureStderr err;
  CompileStats before = compile_stats();
  check_doubling(HostCompiler().load(doubling_source(60), "doubling")->function("doubling"), 60);
  check_doubling(HostCompiler().load(doubling_source(60), "doubling")->function("doubling"), 60);
  CompileStats after = compile_stats();
  std::string text = err.text();
  BOOST_TEST(after.compiles == before.compiles + 1);
  BOOST_TEST(after.cache_hits == before.cache_hits + 1);
  BOOST_TEST(count_of(text, "ringrt: warning:") == 2u, text);  // the entry refused, the cache unwritable
  BOOST_TEST(text.find("not a regular file") != std::string::npos, text);
  BOOST_TEST(text.find("cannot write the kernel cache entry") != std::string::npos, text);
  std::filesystem::remove_all(base);
}

// The user can fix these, so they are UserErrors (the ringrt program exits 2) naming the culprit.
BOOST_AUTO_TEST_CASE(a_compiler_that_cannot_run_or_no_temporary_folder_is_a_user_error) {
  std::filesystem::path dir = fresh_dir();
  ScopedEnv env("RINGRT_CACHE_DIR", dir.string());
  for (const std::string cxx : {"/nonexistent/cc", "/etc/passwd", " "}) {
    try {
      HostCompiler(cxx, HostCompiler::default_flags()).load(doubling_source(70), "doubling");
      BOOST_FAIL("no ConfigError for " + cxx);
    } catch (const ConfigError& e) {
      std::string what = e.what();
      BOOST_TEST(what.find("'" + cxx + "'") != std::string::npos, what);
      BOOST_TEST(what.find("CXX") != std::string::npos, what);
    }
  }
  std::ofstream(dir / "file") << "x";
  ScopedEnv tmp("TMPDIR", (dir / "file").string());
  try {
    HostCompiler().load(doubling_source(71), "doubling");
    BOOST_FAIL("no IOError");
  } catch (const IOError& e) {
    std::string what = e.what();
    BOOST_TEST(what.find((dir / "file").string()) != std::string::npos, what);
  }
  std::filesystem::remove_all(dir);
}

// A stop request (core/interrupt.hpp; the `ringrt` program's SIGINT/SIGTERM) kills a compile in
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

BOOST_AUTO_TEST_SUITE_END()
