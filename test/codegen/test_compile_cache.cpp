// The kernel cache's bound (runtime.cache_max_bytes; codegen/compile_cache.hpp enforce_cache_bound): past it the
// entries used least recently are removed, down to 90%, the one just stored never; a load renews an entry; files
// that are not entries stay, temporary files of a writer that died go; threads storing and loading at once
// under a tight bound see whole entries or none.
#include <fcntl.h>
#include <sys/stat.h>

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <atomic>
#include <thread>
#include <vector>

#include "codegen/compile_cache.hpp"
#include "core/params_internal.hpp"

BOOST_AUTO_TEST_SUITE(test_compile_cache)

using namespace ringrt;
using namespace ringrt::codegen;
namespace fs = std::filesystem;

namespace {

struct TempCache {
  fs::path dir;
  TempCache() {
    std::string t = (temp_root() / "ringrt-cache-test-XXXXXX").string();
    BOOST_TEST_REQUIRE(::mkdtemp(t.data()) != nullptr);
    dir = t;
  }
  ~TempCache() {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
    reset_runtime_params();
  }
};

void set_bound(int64_t bytes) {
  RuntimeParams p = current_runtime_params();
  p.cache_max_bytes = bytes;
  set_runtime_params(p, {"runtime.cache_max_bytes"});
}

std::string key_of(int i) { return cache_key("source " + std::to_string(i), "identity"); }

void set_used(const fs::path& file, time_t seconds) {  // atime and mtime
  struct timespec t[2] = {{seconds, 0}, {seconds, 0}};
  BOOST_TEST_REQUIRE(::utimensat(AT_FDCWD, file.c_str(), t, AT_SYMLINK_NOFOLLOW) == 0);
}

constexpr int64_t kEntry = 100 * 1024;  // + the 64-byte record

}  // namespace

// 12 entries of 100 KiB under a bound of 1 MiB, used one second apart, the first loaded again (renewed): the
// three next oldest go (9 entries fit 90% of the bound), the renewed one stays.
BOOST_AUTO_TEST_CASE(the_least_recently_used_entries_go_first) {
  TempCache t;
  set_bound(int64_t{1} << 20);
  CompileCache cache(t.dir);
  time_t base = ::time(nullptr) - 1000;
  for (int i = 0; i < 12; ++i)
    set_used(cache.store(key_of(i), ".so", std::string(kEntry, static_cast<char>('a' + i))), base + i);
  BOOST_TEST_REQUIRE(cache_usage(t.dir).entries == 12);
  BOOST_TEST(cache.load(key_of(0), ".so").has_value());  // used now
  BOOST_TEST(enforce_cache_bound(t.dir) == 3);
  CacheUsage u = cache_usage(t.dir);
  BOOST_TEST(u.entries == 9);
  BOOST_TEST(u.bytes <= (int64_t{1} << 20) / 10 * 9);
  for (int i = 0; i < 12; ++i) BOOST_TEST(fs::exists(cache.path(key_of(i), ".so")) == (i == 0 || i > 3), "entry " << i);
  BOOST_TEST(*cache.load(key_of(5), ".so") == std::string(kEntry, 'f'));  // the others whole
  BOOST_TEST(enforce_cache_bound(t.dir) == 0);                            // within the bound: nothing more
}

// `keep` (the entry just stored) is never removed, even the oldest; files that are not entries are neither
// counted nor removed; a writer's temporary file older than an hour goes, a fresh one stays.
BOOST_AUTO_TEST_CASE(the_entry_just_stored_and_other_files_stay) {
  TempCache t;
  set_bound(int64_t{1} << 20);
  CompileCache cache(t.dir);
  time_t base = ::time(nullptr) - 1000;
  for (int i = 0; i < 12; ++i) set_used(cache.store(key_of(i), ".so", std::string(kEntry, 'x')), base + i);
  std::ofstream(t.dir / "notes.txt") << std::string(3 << 20, 'n');  // 3 MiB, not an entry
  fs::path stale = t.dir / ("." + key_of(99) + ".so.1234.abc.tmp"), fresh = t.dir / ("." + key_of(98) + ".so.1.f.tmp");
  std::ofstream(stale) << "half";
  std::ofstream(fresh) << "half";
  set_used(stale, ::time(nullptr) - 7200);
  BOOST_TEST(enforce_cache_bound(t.dir, cache.path(key_of(0), ".so").filename().string()) == 3);
  BOOST_TEST(fs::exists(cache.path(key_of(0), ".so")));  // kept, though the oldest
  for (int i = 1; i <= 3; ++i) BOOST_TEST(!fs::exists(cache.path(key_of(i), ".so")), "entry " << i);
  BOOST_TEST(fs::exists(t.dir / "notes.txt"));
  BOOST_TEST(!fs::exists(stale));
  BOOST_TEST(fs::exists(fresh));
  BOOST_TEST(cache_usage(t.dir).entries == 9);
}

// Four threads storing (publish_artifact: store, then the bound) and loading 40 entries each of 50 KiB under a
// bound of 1 MiB in one folder: every load is the whole entry or a miss, and the folder ends within the bound.
BOOST_AUTO_TEST_CASE(concurrent_stores_and_loads_stay_whole_and_bounded) {
  TempCache t;
  set_bound(int64_t{1} << 20);
  std::vector<std::thread> threads;
  std::atomic<int> torn{0}, hits{0};
  for (int w = 0; w < 4; ++w)
    threads.emplace_back([&, w] {
      CompileCache cache(t.dir);
      for (int i = 0; i < 40; ++i) {
        int k = w * 100 + i;
        std::string bytes(50 * 1024, static_cast<char>('a' + k % 26));
        cache.store(key_of(k), ".so", bytes);
        enforce_cache_bound(t.dir, cache.path(key_of(k), ".so").filename().string());
        for (int j : {k, w * 100 + i / 2, ((w + 1) % 4) * 100 + i})  // its own, an older one, another thread's
          if (auto got = cache.load(key_of(j), ".so")) {
            ++hits;
            if (*got != std::string(50 * 1024, static_cast<char>('a' + j % 26))) ++torn;
          }
      }
    });
  for (auto& th : threads) th.join();
  BOOST_TEST(torn.load() == 0);
  BOOST_TEST(hits.load() > 0);
  BOOST_TEST(cache_usage(t.dir).bytes <= int64_t{1} << 20);
}

BOOST_AUTO_TEST_SUITE_END()
