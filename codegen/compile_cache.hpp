// A content-addressed on-disk cache of compiled kernels (reference: tinygrad's compile cache, keyed by
// the source and the compiler). The key is a hash of the source and the compiler's identity (its
// path, version, flags and target), so a new compiler, flag or target never reuses a stale artifact.
//
// Concurrency. A write goes to a unique temporary file in the cache directory and is renamed onto the
// final name; rename is atomic, so a reader sees a whole artifact or none. Two processes (or threads)
// compiling the same kernel at once both compile and both publish identical bytes; whichever rename
// lands last wins, and either is correct.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

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

// The cache directory, read from the environment at every call: $RINGRT_CACHE_DIR, else
// $XDG_CACHE_HOME/ringrt, else $HOME/.cache/ringrt.
std::filesystem::path cache_dir();
// cache_dir() if it is a private folder of this user (created 0700 when absent; a directory, not a
// link, owned by this user, writable by no one else), else — with one warning on stderr naming it —
// private_cache_dir(). ringrt dlopens what the cache holds, so a folder others can write (a shared
// /tmp folder, a planted link) is never used.
std::filesystem::path trusted_cache_dir();
// $TMPDIR/ringrt-cache-<uid> when it is private to this user (created 0700), else a fresh folder made
// by mkdtemp for this process. Throws std::filesystem::filesystem_error when neither can be made.
std::filesystem::path private_cache_dir();
// 32 hex digits: two independent 64-bit hashes of (identity, source).
std::string cache_key(std::string_view source, std::string_view identity);

class CompileCache {
 public:
  explicit CompileCache(std::filesystem::path dir = trusted_cache_dir()) : dir_(std::move(dir)) {}
  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path path(const std::string& key, std::string_view suffix) const;
  // The artifact's bytes, or nullopt when absent or unreadable.
  std::optional<std::string> load(const std::string& key, std::string_view suffix) const;
  // Publishes bytes atomically (temporary file + rename) and returns the final path. Creates the
  // directory. Throws std::filesystem::filesystem_error when it cannot write.
  std::filesystem::path store(const std::string& key, std::string_view suffix, std::string_view bytes) const;

 private:
  std::filesystem::path dir_;
};

}  // namespace ringrt::codegen
