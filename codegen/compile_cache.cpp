// The on-disk compile cache and the process-wide compile counters (see compile_cache.hpp).
#include "codegen/compile_cache.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>

#include "rewrite/hash.hpp"
#include "rewrite/params.hpp"

namespace ringrt::codegen {

namespace {

std::atomic<uint64_t> g_compiles{0}, g_hits{0}, g_runs{0};

uint64_t mix64(std::string_view s) {  // a second 64-bit hash, independent of FNV-1a: splitmix64 per byte
  uint64_t h = 0x9e3779b97f4a7c15ull ^ s.size();
  for (unsigned char c : s) h = splitmix64(h ^ c);
  return h;
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

CompileStats compile_stats() { return {g_compiles.load(), g_hits.load(), g_runs.load()}; }
void count_compile() { ++g_compiles; }
void count_cache_hit() { ++g_hits; }
void count_compiler_run() { ++g_runs; }

// The tunable runtime.cache_dir (rewrite/params.hpp), else the XDG fallbacks.
std::filesystem::path cache_dir() {
  if (std::string d = current_runtime_params().cache_dir; !d.empty()) return d;
  if (std::string d = env("XDG_CACHE_HOME"); !d.empty()) return std::filesystem::path(d) / "ringrt";
  if (std::string d = env("HOME"); !d.empty()) return std::filesystem::path(d) / ".cache" / "ringrt";
  return std::filesystem::temp_directory_path() / "ringrt-cache";
}

namespace {

// A directory (not a link) owned by this user that no one else may write.
bool is_private_dir(const std::filesystem::path& dir) {
  struct stat st {};
  return ::lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::getuid() && (st.st_mode & 022) == 0;
}

// dir, its last component created 0700 when absent (its parents as the umask says); true when private.
bool make_private_dir(const std::filesystem::path& dir) {
  std::error_code ignored;
  std::filesystem::create_directories(dir.parent_path(), ignored);
  ::mkdir(dir.c_str(), 0700);  // EEXIST is fine: is_private_dir decides
  return is_private_dir(dir);
}

}  // namespace

std::filesystem::path private_cache_dir() {
  std::filesystem::path tmp = std::filesystem::temp_directory_path();
  std::filesystem::path dir = tmp / fmt::format("ringrt-cache-{}", ::getuid());
  if (make_private_dir(dir)) return dir;
  static std::mutex mu;  // someone else holds that name: one fresh folder for this process
  static std::filesystem::path fresh;
  std::lock_guard<std::mutex> lock(mu);
  if (fresh.empty()) {
    std::string templ = (tmp / fmt::format("ringrt-cache-{}-XXXXXX", ::getuid())).string();
    if (!::mkdtemp(templ.data()))
      throw std::filesystem::filesystem_error("cannot create a private kernel cache folder", templ,
                                              std::error_code(errno, std::generic_category()));
    fresh = templ;
  }
  return fresh;
}

std::filesystem::path trusted_cache_dir() {
  std::filesystem::path dir = cache_dir();
  if (make_private_dir(dir)) return dir;
  std::filesystem::path fallback = private_cache_dir();
  static std::once_flag warned;
  std::call_once(warned, [&] {
    std::fprintf(stderr,
                 "ringrt: the kernel cache folder %s is not a private folder of this user (a link, another "
                 "owner, or writable by others); using %s\n",
                 dir.c_str(), fallback.c_str());
  });
  return fallback;
}

std::string cache_key(std::string_view source, std::string_view identity) {
  std::string all = fmt::format("{}\n{}\n", identity.size(), identity);
  all += source;
  return fmt::format("{:016x}{:016x}", fnv1a(all), mix64(all));
}

std::filesystem::path CompileCache::path(const std::string& key, std::string_view suffix) const {
  return dir_ / (key + std::string(suffix));
}

std::optional<std::string> CompileCache::load(const std::string& key, std::string_view suffix) const {
  std::ifstream in(path(key, suffix), std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in.good() && !in.eof()) return std::nullopt;
  return std::move(bytes).str();
}

std::filesystem::path CompileCache::store(const std::string& key, std::string_view suffix,
                                          std::string_view bytes) const {
  std::filesystem::create_directories(dir_);
  std::filesystem::path final_path = path(key, suffix);
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::filesystem::path tmp = dir_ / fmt::format(".{}{}.{}.{:x}.tmp", key, suffix, ::getpid(), rng());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      throw std::filesystem::filesystem_error("cannot write compile cache file", tmp,
                                              std::make_error_code(std::errc::io_error));
    }
  }
  std::filesystem::rename(tmp, final_path);  // atomic on POSIX: readers see all or nothing
  return final_path;
}

}  // namespace ringrt::codegen
