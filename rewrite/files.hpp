// Files ringrt reads and writes on a user's behalf (configs, reports, kernel sources), opened so that
// a link or a special file planted in a shared folder cannot redirect them. POSIX.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ringrt {

// The bytes of the regular file at path (a link to one is followed: the user named it), at most
// max_bytes of them. Never blocks on a FIFO or a device. Throws IOError naming the path and the reason
// for a file that cannot be opened, is not a regular file (a folder, a FIFO, a device), is longer
// than max_bytes, or fails to read (e.g. EIO).
std::string read_file(const std::string& path, size_t max_bytes);

// Writes all of bytes to the open file descriptor fd, retrying short writes and EINTR. Returns 0, or the
// errno of the write that failed (EIO when a write wrote nothing without an error).
int write_bytes(int fd, std::string_view bytes);

// Writes text to path, creating it (mode 0644 before the umask) or truncating it. A symbolic link at
// path is refused, not followed (O_NOFOLLOW), so a link planted in a shared folder cannot make ringrt
// overwrite the file it points at; so is anything but a regular file. Throws IOError naming the path
// and the reason.
void write_file(const std::string& path, const std::string& text);

// A file opened for writing now and written later: a long run checks its output paths before it
// starts, so a path that cannot be written fails at once, not after hours of work. Opening creates the
// file (mode 0644 before the umask) and leaves what is in it; write() replaces it. The same refusals as
// write_file (a link, anything but a regular file: a folder, a FIFO, a device such as /dev/null, and a
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
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace ringrt
