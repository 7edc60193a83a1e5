// Files ringrt reads and writes on a user's behalf (configs, reports, kernel sources), opened so that
// a link or a special file planted in a shared folder cannot redirect them. POSIX.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace ringrt {

// How read_file trusts a file. named: the user named it, so a link to it is followed. own: a file ringrt
// found by itself in a folder of this user's (the tuning file in the cache folder) must be this user's
// own: not a symbolic link (O_NOFOLLOW), owned by this user, writable by no one else, so nothing another
// user planted or changed is read.
enum class FileTrust { named, own };

// The bytes of the regular file at path, at most max_bytes of them. Never blocks on a FIFO or a device.
// Throws IOError naming the path and the reason for a file that cannot be opened, is not a regular file
// (a folder, a FIFO, a device), is longer than max_bytes, or fails to read (e.g. EIO); with FileTrust::own
// also for a link, another user's file, or one that others may write.
std::string read_file(const std::string& path, size_t max_bytes, FileTrust trust = FileTrust::named);

// Writes all of bytes to the open file descriptor fd, retrying short writes and EINTR. Returns 0, or the
// errno of the write that failed (EIO when a write wrote nothing without an error).
int write_bytes(int fd, std::string_view bytes);

// Writes text to path, creating it (mode 0644 before the umask) or truncating it. A symbolic link at
// path is refused, not followed (O_NOFOLLOW), and so is a file with other hard links, so a link planted
// in a shared folder cannot make ringrt overwrite the file it points at; so is anything but a regular
// file. Throws IOError naming the path
// and the reason.
void write_file(const std::string& path, const std::string& text);

// Replaces the file at path with text so that a reader, or a crash part way, sees the old file or the new
// one, whole: text goes to a temporary file beside path (an unpredictable name, created O_CREAT | O_EXCL |
// O_NOFOLLOW, mode 0644 before the umask), is fsync'ed, then renamed over path. On any failure the temporary
// file is removed and path is left as it was. A symbolic link at path is refused (not replaced, not
// followed), and so is anything but a regular file (a folder, a FIFO, a device). Throws IOError naming the
// path and the reason. runtime/cli/tune.hpp's TuningWriter does the same for a file opened long before it is
// written.
void replace_file(const std::string& path, const std::string& text);

// A file opened for writing now and written later: a long run checks its output paths before it
// starts, so a path that cannot be written fails at once, not after hours of work. Opening creates the
// file (mode 0644 before the umask) and leaves what is in it; write() replaces it. The same refusals as
// write_file (a symbolic or hard link, anything but a regular file: a folder, a FIFO, a device such as /dev/null, and a
// procfs or sysfs file, which looks regular but fails when written). Not copyable; closes the file when destroyed.
class OutputFile {
 public:
  // Throws IOError naming the path and the system's reason (a directory, a missing folder, EACCES, ...).
  explicit OutputFile(std::string path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  // Truncates the file and writes text to it, then closes it (once). Throws IOError naming the path and
  // the system's reason (ENOSPC, EIO, ...).
  void write(const std::string& text);
  // Truncates the file and writes text to it from the start, keeping it open for the next rewrite() and
  // the final write(): a file kept up to date as a run goes, so that a process killed part way leaves
  // its latest text (a kill during this call itself may leave it cut short). Throws IOError as write().
  void rewrite(const std::string& text);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

// The length of the UTF-8 sequence at text[i] that XML 1.0 and JSON may hold (1 to 4), or 0: a byte that
// starts no sequence, a cut or overlong one, a surrogate, past U+10FFFF, or U+FFFE / U+FFFF.
size_t utf8_length(std::string_view text, size_t i);

// text (a file name) as one printable line that JSON, XML, Markdown and a terminal all take: every byte
// that is not valid UTF-8, every control character (newline, ESC, ...) and DEL written as \xHH, so a name
// such as "b\xFF.yaml" or one with a newline or an escape sequence in it is shown, never obeyed.
std::string printable_name(std::string_view text);

// The folder of ringrt's per-user cache, read at every call: the tunable runtime.cache_dir
// ($RINGRT_CACHE_DIR), else $XDG_CACHE_HOME/ringrt (an absolute $XDG_CACHE_HOME only, as the XDG base
// directory specification says), else $HOME/.cache/ringrt, else empty (none). It holds the compiled
// kernels (codegen/compile_cache.hpp) and the tuning file (rewrite/tuning.hpp).
std::filesystem::path user_cache_dir();

// "" when dir is a directory (not a link) owned by this user that no one else may write, else why not
// ("a symbolic link", "owned by uid 0, not 1000", ...): the folders ringrt reads code or data from. A
// trailing / or /. names the folder itself, so a link named so is still a link.
std::string private_dir_problem(const std::filesystem::path& dir);

// Prints "ringrt: warning: <message>" on stderr once per `once_key` per process. Thread-safe.
void warn_once(const std::string& once_key, const std::string& message);

}  // namespace ringrt
