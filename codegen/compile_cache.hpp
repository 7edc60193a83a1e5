// A content-addressed on-disk cache of compiled kernels (reference: tinygrad's compile cache, keyed by
// the source and the compiler; ccache's and the GPU drivers' compute caches for the trust model). The
// key is a hash of the source and the compiler's identity (its path, version, flags and target), so a
// new compiler, flag or target never reuses a stale artifact.
//
// Trust. ringrt loads what the cache holds, so it trusts nothing it finds there:
// - the cache folder is used only when it is a directory (not a link) of this user that no one else
//   may write (created 0700); otherwise, and when no folder is configured, this process keeps its
//   kernels in a private folder of its own (mkdtemp under $TMPDIR, removed at exit). There is no
//   folder shared between users.
// - every entry is `<key><suffix>`: the artifact's bytes followed by a 64-byte record (a magic, the
//   key, the artifact's size and its FNV-1a checksum). An entry is read through O_NOFOLLOW and checked
//   on the open file (a regular file of this user, writable by no one else, the size, the key and the
//   checksum in its record) before its bytes are used; the caller gets the verified bytes, never a
//   path to reopen, so nothing can swap the file between the check and the load.
// - an entry that fails a check is named in one warning on stderr (per file and process), compiled
//   again and published again; an entry that cannot be published goes to the private folder (one
//   warning), and a kernel that cannot be published anywhere still runs from memory.
//
// Bound. The folder holds at most runtime.cache_max_bytes of entries: each store removes the entries used
// least recently past it (enforce_cache_bound); a load renews its entry's time.
//
// Concurrency. A write goes to a unique temporary file in the cache directory (created O_EXCL, 0600),
// is fsynced and renamed onto the final name; rename is atomic, so a reader sees a whole entry or none.
// Two processes (or threads) compiling the same kernel at once both compile and both publish a whole
// entry; whichever rename lands last wins, and either is correct.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/files.hpp"

namespace ringrt::codegen {

// Process-wide counters, updated by Compiler (thread-safe): artifacts compiled, artifacts found in the
// cache, and compiler processes run (`--version` runs too).
struct CompileStats {
  uint64_t compiles = 0;
  uint64_t cache_hits = 0;
  uint64_t compiler_runs = 0;
};
CompileStats compile_stats();
void count_compile();       // for Compiler implementations
void count_cache_hit();     // for Compiler implementations
void count_compiler_run();  // for Compiler implementations

// The cache directory: user_cache_dir() (core/files.hpp: runtime.cache_dir, else
// $XDG_CACHE_HOME/ringrt, else $HOME/.cache/ringrt, else empty: no persistent cache, kernels are kept
// for the process only).
std::filesystem::path cache_dir();
// cache_dir() if it is a private folder of this user (created 0700 when absent; a directory, not a
// link, owned by this user, writable by no one else), else — with one warning on stderr naming it and
// the reason — private_cache_dir().
std::filesystem::path trusted_cache_dir();
// This process's private folder (made by mkdtemp, 0700, under $TMPDIR), created at the first call and
// removed when the process exits. Throws IOError (naming the folder and the system's reason) when it
// cannot be made.
std::filesystem::path private_cache_dir();
// The system's temporary folder ($TMPDIR, else /tmp). Throws IOError when it is not a usable folder.
std::filesystem::path temp_root();
// 32 hex digits: two independent 64-bit hashes of (entry format, identity, source).
std::string cache_key(std::string_view source, std::string_view identity);
// True when `key` has cache_key's form (32 lowercase hex digits): the only names CompileCache reads or
// writes, so a key read from an entry (the kernel index) cannot name a file outside the cache folder.
bool is_cache_key(std::string_view key);

class CompileCache {
 public:
  explicit CompileCache(std::filesystem::path dir = trusted_cache_dir()) : dir_(std::move(dir)) {}
  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path path(const std::string& key, std::string_view suffix) const;
  // The artifact's bytes when the entry exists and passes every check (see Trust above). nullopt when
  // it is absent, or when it is refused: then `*refused` (if given) says why ("a symbolic link",
  // "owned by uid 65534", "checksum mismatch", "not a cache key", ...).
  std::optional<std::string> load(const std::string& key, std::string_view suffix,
                                  std::string* refused = nullptr) const;
  // Publishes bytes and their record atomically (temporary file, fsync, rename) and returns the final
  // path. Throws IOError naming the path and the system's reason when it cannot write, InternalError
  // when !is_cache_key(key).
  std::filesystem::path store(const std::string& key, std::string_view suffix, std::string_view bytes) const;

 private:
  std::filesystem::path dir_;
};

// A verified artifact: its bytes and where it is cached (empty when it could not be published).
struct CachedArtifact {
  std::string bytes;
  std::filesystem::path path;
  bool from_cache = false;  // found in a cache folder (else compiled by this call)
};
// The one cache policy every compiler uses: the entry `key` from trusted_cache_dir() or, when this
// process made one, private_cache_dir(); on a miss or a refused entry, compile() (counted) and publish
// to the cache, else to private_cache_dir(), else nowhere, each fallback with one warning on stderr.
// Counts a cache hit or a compile. Exceptions from compile() propagate.
CachedArtifact cached_artifact(const std::string& key, std::string_view suffix,
                               const std::function<std::string()>& compile);
// The two halves of cached_artifact, for entries that are not compiled one by one (the kernel index,
// HostCompiler::load_kernels). find_cached: the verified entry from the same folders, nullopt when none
// holds a whole, trusted one (a refused entry is named in one warning); counts nothing.
// publish_artifact: stores it with the same fallbacks and returns where (empty when nowhere); never throws
// IOError.
std::optional<CachedArtifact> find_cached(const std::string& key, std::string_view suffix);
std::filesystem::path publish_artifact(const std::string& key, std::string_view suffix, std::string_view bytes);

// The cache folder's contents: its entries (files named by a cache key) and their bytes.
struct CacheUsage {
  int64_t entries = 0, bytes = 0;
};
CacheUsage cache_usage(const std::filesystem::path& dir);
// Keeps `dir` within runtime.cache_max_bytes: when its entries hold more, the ones used least recently (their
// modification time: a store sets it, a load renews it) are removed, down to 90% of the bound, `keep` (a
// file name) never; temporary files older than an hour (a writer that died) are removed too. Safe with other
// processes using the folder: a reader holds an entry it opened, and one removed before its open is a miss
// (compiled again). Returns the entries removed; never throws.
int64_t enforce_cache_bound(const std::filesystem::path& dir, const std::string& keep = "");

using ringrt::warn_once;  // core/files.hpp

}  // namespace ringrt::codegen
