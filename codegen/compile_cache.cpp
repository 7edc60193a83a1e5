// The on-disk compile cache and the process-wide compile counters (see compile_cache.hpp).
#include "codegen/compile_cache.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <set>
#include <vector>

#include "core/errors.hpp"
#include "core/files.hpp"
#include "core/hash.hpp"
#include "core/params_internal.hpp"

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

std::string sys_error(int err) { return std::strerror(err); }

// ---- the entry record: the last 64 bytes of every entry
// magic (8) | key (32 ASCII hex digits) | artifact size (8, little-endian) | FNV-1a of the artifact (8) |
// FNV-1a of the 56 bytes before (8)
constexpr std::string_view kMagic{"RINGRTK\x01", 8};
constexpr size_t kKeySize = 32, kRecordSize = 64;
constexpr uint64_t kMaxEntry = uint64_t{1} << 30;  // 1 GiB: far beyond any kernel

void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t get_u64(std::string_view in) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(in[static_cast<size_t>(i)]);
  return v;
}

std::string record(const std::string& key, std::string_view bytes) {
  std::string r(kMagic);
  std::string k = key;
  k.resize(kKeySize, '\0');
  r += k;
  put_u64(r, bytes.size());
  put_u64(r, fnv1a(bytes));
  put_u64(r, fnv1a(r));
  return r;
}

// "" when `entry` is a whole entry of `key`, else why not. `entry` is the file's content.
std::string check_record(std::string_view entry, const std::string& key) {
  if (entry.size() < kRecordSize) return fmt::format("truncated ({} bytes, no record)", entry.size());
  std::string_view r = entry.substr(entry.size() - kRecordSize);
  if (r.substr(0, kMagic.size()) != kMagic || get_u64(r.substr(56)) != fnv1a(r.substr(0, 56)))
    return "no valid ringrt record at its end (damaged, truncated, or not written by ringrt)";
  std::string_view k = r.substr(8, kKeySize);
  if (k != key)
    return is_cache_key(k) ? fmt::format("holds the entry of another kernel (key {})", k)
                           : std::string("holds the entry of another kernel (its key is not a cache key)");
  uint64_t size = get_u64(r.substr(40));
  if (size != entry.size() - kRecordSize)
    return fmt::format("size {} where its record says {}", entry.size() - kRecordSize, size);
  if (get_u64(r.substr(48)) != fnv1a(entry.substr(0, size))) return "checksum mismatch (damaged)";
  return "";
}

// ---- folders

// dir, its last component created 0700 when absent (its parents as the umask says); "" when private,
// else why not.
std::string make_private_dir(const std::filesystem::path& dir) {
  std::error_code ignored;
  std::filesystem::create_directories(dir.parent_path(), ignored);
  ::mkdir(dir.c_str(), 0700);  // EEXIST is fine: private_dir_problem decides
  return private_dir_problem(dir);
}

std::mutex g_private_mu;
std::string* g_private_dir = nullptr;  // leaked on purpose: removed by an atexit handler
pid_t g_private_owner = 0;

void remove_private_dir() {
  std::lock_guard<std::mutex> lock(g_private_mu);
  if (!g_private_dir || ::getpid() != g_private_owner) return;  // a forked child leaves its parent's
  std::error_code ignored;
  std::filesystem::remove_all(*g_private_dir, ignored);
}

std::optional<std::filesystem::path> existing_private_dir() {
  std::lock_guard<std::mutex> lock(g_private_mu);
  if (g_private_dir && ::getpid() == g_private_owner) return std::filesystem::path(*g_private_dir);
  return std::nullopt;
}

int open_dir(const std::filesystem::path& dir) { return ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); }

}  // namespace

CompileStats compile_stats() { return {g_compiles.load(), g_hits.load(), g_runs.load()}; }
void count_compile() { ++g_compiles; }
void count_cache_hit() { ++g_hits; }
void count_compiler_run() { ++g_runs; }

std::filesystem::path cache_dir() { return user_cache_dir(); }

// $TMPDIR, or /tmp when it is unset or empty (an empty value counts as unset, as for every variable
// ringrt reads).
std::filesystem::path temp_root() {
  std::string dir = env("TMPDIR");
  std::filesystem::path tmp = dir.empty() ? std::filesystem::path("/tmp") : std::filesystem::path(dir);
  std::error_code ec;
  if (!std::filesystem::is_directory(tmp, ec))
    throw IOError(fmt::format("the temporary folder {} ($TMPDIR{}) is not usable: {}", tmp.string(),
                              dir.empty() ? " unset" : "", ec ? ec.message() : "not a directory"));
  return tmp;
}

std::filesystem::path private_cache_dir() {
  if (auto dir = existing_private_dir()) return *dir;
  std::filesystem::path tmp = temp_root();
  std::lock_guard<std::mutex> lock(g_private_mu);
  if (g_private_dir && ::getpid() == g_private_owner) return *g_private_dir;  // another thread made it
  std::string templ = (tmp / fmt::format("ringrt-kernels-{}-XXXXXX", ::getuid())).string();
  if (!::mkdtemp(templ.data()))  // mkdtemp makes it 0700
    throw IOError(fmt::format("cannot create a private kernel folder {} under the temporary folder: {}", templ,
                              sys_error(errno)));
  bool first = g_private_dir == nullptr;
  if (first) g_private_dir = new std::string;
  *g_private_dir = templ;
  g_private_owner = ::getpid();
  if (first) std::atexit(remove_private_dir);
  return templ;
}

std::filesystem::path trusted_cache_dir() {
  std::filesystem::path dir = cache_dir();
  if (dir.empty()) {
    std::filesystem::path fallback = private_cache_dir();
    warn_once("no cache dir", fmt::format("no kernel cache folder (runtime.cache_dir / $RINGRT_CACHE_DIR, "
                                          "$XDG_CACHE_HOME and $HOME are all unset); this process keeps "
                                          "its kernels in {} (removed at exit)",
                                          fallback.string()));
    return fallback;
  }
  std::string problem = make_private_dir(dir);
  if (problem.empty()) return dir;
  std::filesystem::path fallback = private_cache_dir();
  warn_once("dir " + dir.string(),
            fmt::format("the kernel cache folder {} is refused ({}; it must be a directory of this user "
                        "that no one else can write); this process keeps its kernels in {} (removed at exit)",
                        dir.string(), problem, fallback.string()));
  return fallback;
}

std::string cache_key(std::string_view source, std::string_view identity) {
  // "entry v2": the entry format (an artifact and its record); entries of older formats are never read
  std::string all = fmt::format("entry v2\n{}\n{}\n", identity.size(), identity);
  all += source;
  return fmt::format("{:016x}{:016x}", fnv1a(all), mix64(all));
}

bool is_cache_key(std::string_view key) {
  return key.size() == kKeySize &&
         std::all_of(key.begin(), key.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::filesystem::path CompileCache::path(const std::string& key, std::string_view suffix) const {
  return dir_ / (key + std::string(suffix));
}

std::optional<std::string> CompileCache::load(const std::string& key, std::string_view suffix,
                                              std::string* refused) const {
  auto refuse = [&](std::string why) -> std::optional<std::string> {
    if (refused) *refused = std::move(why);
    return std::nullopt;
  };
  if (!is_cache_key(key)) return refuse("not a cache key");
  std::filesystem::path p = path(key, suffix);
  // O_NOFOLLOW: a link is refused, not followed; O_NONBLOCK: a planted FIFO cannot block the open
  int fd = ::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    return refuse(errno == ELOOP ? "a symbolic link" : sys_error(errno));
  }
  struct Close {
    int fd;
    ~Close() { ::close(fd); }
  } close_fd{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return refuse(sys_error(errno));
  if (!S_ISREG(st.st_mode)) return refuse("not a regular file");
  if (st.st_uid != ::getuid()) return refuse(fmt::format("owned by uid {}, not {}", st.st_uid, ::getuid()));
  if ((st.st_mode & 022) != 0)
    return refuse(fmt::format("writable by group or others (mode {:04o})", st.st_mode & 07777));
  if (static_cast<uint64_t>(st.st_size) > kMaxEntry) return refuse(fmt::format("too large ({} bytes)", st.st_size));
  std::string entry(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < entry.size()) {
    ssize_t n = ::read(fd, entry.data() + got, entry.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return refuse(sys_error(errno));
    if (n == 0) return refuse("changed while it was read");
    got += static_cast<size_t>(n);
  }
  if (std::string problem = check_record(entry, key); !problem.empty()) return refuse(problem);
  entry.resize(entry.size() - kRecordSize);
  ::futimens(fd, nullptr);  // used now: the bound removes the entries used least recently (best effort)
  return entry;
}

std::filesystem::path CompileCache::store(const std::string& key, std::string_view suffix,
                                          std::string_view bytes) const {
  if (!is_cache_key(key)) throw InternalError(fmt::format("not a kernel cache key: '{}'", key));
  std::filesystem::path final_path = path(key, suffix);
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::filesystem::path tmp = dir_ / fmt::format(".{}{}.{}.{:x}.tmp", key, suffix, ::getpid(), rng());
  auto fail = [&](const std::filesystem::path& what, int err) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    return IOError(fmt::format("cannot write the kernel cache entry {}: {}", what.string(), sys_error(err)));
  };
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) throw IOError(fmt::format("cannot write the kernel cache entry {}: {}", tmp.string(), sys_error(errno)));
  bool ok = write_bytes(fd, bytes) == 0 && write_bytes(fd, record(key, bytes)) == 0 && ::fsync(fd) == 0;
  int err = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok) throw fail(tmp, err);
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) throw fail(final_path, errno);  // atomic
  if (int dfd = open_dir(dir_); dfd >= 0) {  // the rename itself survives a crash; best effort
    ::fsync(dfd);
    ::close(dfd);
  }
  return final_path;
}

namespace {
struct DirEntry {
  std::string name;
  int64_t bytes;
  struct timespec used;
};
// The folder's regular files of this user: the entries (named by a cache key) and, apart, the temporary files
// of writers (".KEY....tmp").
void scan(const std::filesystem::path& dir, std::vector<DirEntry>& entries, std::vector<DirEntry>* temporaries) {
  int dfd = open_dir(dir);
  if (dfd < 0) return;
  DIR* d = ::fdopendir(dfd);
  if (!d) {
    ::close(dfd);
    return;
  }
  while (struct dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    bool temporary = name.size() > 5 && name[0] == '.' && name.ends_with(".tmp");
    if (!temporary && (name.size() < kKeySize || !is_cache_key(std::string_view(name).substr(0, kKeySize)))) continue;
    struct stat st {};
    if (::fstatat(dfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::getuid())
      continue;
    DirEntry de{name, static_cast<int64_t>(st.st_size), st.st_mtim};
    if (!temporary)
      entries.push_back(std::move(de));
    else if (temporaries)
      temporaries->push_back(std::move(de));
  }
  ::closedir(d);  // closes dfd
}
}  // namespace

CacheUsage cache_usage(const std::filesystem::path& dir) {
  std::vector<DirEntry> entries;
  scan(dir, entries, nullptr);
  CacheUsage u;
  for (const DirEntry& e : entries) ++u.entries, u.bytes += e.bytes;
  return u;
}

int64_t enforce_cache_bound(const std::filesystem::path& dir, const std::string& keep) {
  std::vector<DirEntry> entries, temporaries;
  scan(dir, entries, &temporaries);
  int64_t removed = 0;
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  for (const DirEntry& t : temporaries)  // a writer that died left it: an hour is far beyond any write
    if (now.tv_sec - t.used.tv_sec > 3600) ::unlink((dir / t.name).c_str());
  int64_t max = current_runtime_params().cache_max_bytes, total = 0;
  for (const DirEntry& e : entries) total += e.bytes;
  if (total <= max) return 0;
  std::sort(entries.begin(), entries.end(), [](const DirEntry& a, const DirEntry& b) {
    return a.used.tv_sec != b.used.tv_sec ? a.used.tv_sec < b.used.tv_sec : a.used.tv_nsec < b.used.tv_nsec;
  });
  int64_t target = max / 10 * 9;
  for (const DirEntry& e : entries) {
    if (total <= target) break;
    if (e.name == keep) continue;
    // another process may have removed it already (ENOENT) or renewed it just now: either is fine
    if (::unlink((dir / e.name).c_str()) == 0 || errno == ENOENT) {
      total -= e.bytes;
      ++removed;
    }
  }
  return removed;
}

std::optional<CachedArtifact> find_cached(const std::string& key, std::string_view suffix) {
  if (!is_cache_key(key)) return std::nullopt;  // the caller names what gave it (an index entry)
  std::filesystem::path primary = trusted_cache_dir();
  std::vector<std::filesystem::path> dirs{primary};
  if (auto own = existing_private_dir(); own && *own != primary) dirs.push_back(*own);
  for (const auto& dir : dirs) {
    CompileCache cache(dir);
    std::string refused;
    if (auto bytes = cache.load(key, suffix, &refused))
      return CachedArtifact{std::move(*bytes), cache.path(key, suffix), true};
    if (!refused.empty()) {
      std::string p = cache.path(key, suffix).string();
      warn_once("entry " + p, fmt::format("the kernel cache entry {} is refused ({}); compiling it again", p, refused));
    }
  }
  return std::nullopt;
}

std::filesystem::path publish_artifact(const std::string& key, std::string_view suffix, std::string_view bytes) {
  std::filesystem::path primary = trusted_cache_dir();
  try {
    std::filesystem::path stored = CompileCache(primary).store(key, suffix, bytes);
    enforce_cache_bound(primary, stored.filename().string());
    return stored;
  } catch (const IOError& first) {
    try {
      std::filesystem::path own = private_cache_dir();
      if (own != primary) {
        std::filesystem::path stored = CompileCache(own).store(key, suffix, bytes);
        warn_once("store " + primary.string(), fmt::format("{}; this process keeps its kernels in {} (removed at exit)",
                                                           first.what(), own.string()));
        return stored;
      }
    } catch (const IOError& second) {
      warn_once("store " + primary.string(),
                fmt::format("{}; and {}; kernels are kept in memory only", first.what(), second.what()));
      return {};
    }
    warn_once("store " + primary.string(), fmt::format("{}; kernels are kept in memory only", first.what()));
    return {};
  }
}

CachedArtifact cached_artifact(const std::string& key, std::string_view suffix,
                               const std::function<std::string()>& compile) {
  if (auto found = find_cached(key, suffix)) {
    count_cache_hit();
    return std::move(*found);
  }
  CachedArtifact a{compile(), {}};
  count_compile();
  a.path = publish_artifact(key, suffix, a.bytes);
  return a;
}

}  // namespace ringrt::codegen
