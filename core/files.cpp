#include "core/files.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <set>
#include <utility>

#include "core/errors.hpp"
#include "core/params_internal.hpp"

namespace ringrt {
namespace {

// Whether path is a file of a kernel interface (procfs, sysfs, ...): it passes as a regular file, but
// truncating or writing it fails (or worse, changes a kernel setting) only when the output is written.
// Checked on the path before opening: opening one for writing may already be refused (EACCES) or
// have effects.
bool kernel_interface(const std::string& path) {
  struct statfs fs {};
  if (::statfs(path.c_str(), &fs) != 0) return false;  // a new file, or a reason open() reports
  switch (static_cast<unsigned long>(fs.f_type)) {
    case PROC_SUPER_MAGIC:
    case SYSFS_MAGIC:
    case DEBUGFS_MAGIC:
    case TRACEFS_MAGIC:
    case SECURITYFS_MAGIC:
    case CGROUP_SUPER_MAGIC:
    case CGROUP2_SUPER_MAGIC:
      return true;
    default:
      return false;
  }
}

// Closes the descriptor when it goes out of scope.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw IOError(fmt::format("{}: {}", path, what));
}

}  // namespace

std::string read_file(const std::string& path, size_t max_bytes, FileTrust trust) {
  bool own = trust == FileTrust::own;  // a FIFO opens without a writer (O_NONBLOCK)
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (own ? O_NOFOLLOW : 0))};
  if (f.fd < 0 && errno == ELOOP && own) fail(path, "is a symbolic link; ringrt does not read it through a link");
  if (f.fd < 0) fail(path, fmt::format("cannot open the file: {}", std::strerror(errno)));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) fail(path, fmt::format("cannot read the file: {}", std::strerror(errno)));
  if (S_ISDIR(st.st_mode)) fail(path, "is a directory, not a file");
  if (!S_ISREG(st.st_mode)) fail(path, "is not a regular file (a FIFO, a socket or a device)");
  if (own && st.st_uid != ::geteuid()) fail(path, fmt::format("belongs to another user (uid {})", st.st_uid));
  if (own && (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) fail(path, "can be written by other users");
  if (static_cast<size_t>(st.st_size) > max_bytes)
    fail(path, fmt::format("is {} bytes long; at most {} are read", st.st_size, max_bytes));
  std::string text;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(f.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(path, fmt::format("reading the file failed: {}", std::strerror(errno)));
    if (n == 0) return text;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > max_bytes) fail(path, fmt::format("grew past {} bytes while being read", max_bytes));
  }
}

OutputFile::OutputFile(std::string path) : path_(std::move(path)) {
  if (kernel_interface(path_))
    fail(path_, "is a kernel interface file (procfs, sysfs), not a regular file; not written");
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0644);
  if (fd_ < 0 && errno == ELOOP) fail(path_, "is a symbolic link; ringrt does not write through links");
  if (fd_ < 0 && errno == ENXIO) fail(path_, "is a FIFO or socket, not a regular file; not written");
  if (fd_ < 0) fail(path_, fmt::format("cannot write the file: {}", std::strerror(errno)));
  struct stat st {};
  std::string problem = ::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode) ? "is not a regular file; not written"
                        : st.st_nlink > 1 ? "has other hard links; ringrt does not write through links"
                                          : "";
  if (!problem.empty()) {
    ::close(fd_);
    fd_ = -1;
    fail(path_, problem);
  }
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void OutputFile::write(const std::string& text) {
  if (fd_ < 0) fail(path_, "written twice (internal)");
  rewrite(text);  // on an error the destructor closes the file
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail(path_, fmt::format("writing the file failed: {}", std::strerror(errno)));
}

void OutputFile::rewrite(const std::string& text) {
  if (fd_ < 0) fail(path_, "written after its last write (internal)");
  if (::ftruncate(fd_, 0) != 0) fail(path_, fmt::format("cannot truncate the file: {}", std::strerror(errno)));
  if (::lseek(fd_, 0, SEEK_SET) != 0) fail(path_, fmt::format("cannot seek in the file: {}", std::strerror(errno)));
  if (int err = write_bytes(fd_, text)) fail(path_, fmt::format("writing the file failed: {}", std::strerror(err)));
}

int write_bytes(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return 0;
}

void write_file(const std::string& path, const std::string& text) { OutputFile(path).write(text); }

void replace_file(const std::string& path, const std::string& text) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
    fail(path, "is a symbolic link; ringrt does not write through links");
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    fail(path, "is not a regular file (a folder, a FIFO or a device); not written");
  std::filesystem::path target(path);
  std::filesystem::path dir = target.parent_path().empty() ? std::filesystem::path(".") : target.parent_path();
  static std::atomic<uint64_t> serial{0};
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 100; ++attempt) {  // an unpredictable name; O_EXCL refuses a planted one
    // the name's first 100 bytes: a name near NAME_MAX (255) must leave room for the suffix
    tmp = (dir / fmt::format(".{}.{}-{}-{:x}.tmp", target.filename().string().substr(0, 100), ::getpid(), serial++,
                             std::random_device{}()))
              .string();
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) fail(path, fmt::format("cannot write the file: {}", std::strerror(errno)));
  int err = write_bytes(fd, text);
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    fail(path, fmt::format("writing the file failed: {}; the file is left as it was", std::strerror(err)));
  }
  if (int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {  // the rename survives a crash
    ::fsync(dfd);
    ::close(dfd);
  }
}

size_t utf8_length(std::string_view text, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char b = byte(i);
  if (b < 0x80) return 1;
  size_t n = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 0;
  if (n == 0 || b > 0xf4 || i + n > text.size()) return 0;
  uint32_t cp = b & (0x7f >> n);
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3f);
  }
  static const uint32_t kLeast[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kLeast[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff) return 0;
  return n;
}

std::string printable_name(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    auto b = static_cast<unsigned char>(text[i]);
    size_t n = utf8_length(text, i);
    if (n == 0 || (n == 1 && (b < 0x20 || b == 0x7f))) {
      out += fmt::format("\\x{:02X}", b);
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::filesystem::path user_cache_dir() {
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v ? v : "");
  };
  if (std::string d = current_runtime_params().cache_dir; !d.empty()) return d;
  if (std::string d = env("XDG_CACHE_HOME"); !d.empty() && d.front() == '/') return std::filesystem::path(d) / "ringrt";
  if (std::string d = env("HOME"); !d.empty()) return std::filesystem::path(d) / ".cache" / "ringrt";
  return {};
}

std::string private_dir_problem(const std::filesystem::path& dir) {
  // "d/", "d/." and "d/./" name d itself, but lstat of them follows a symbolic link d: look at d
  std::string_view named = dir.native();
  while (named.size() > 1) {
    if (named.ends_with("/."))
      named.remove_suffix(2);
    else if (named.ends_with('/'))
      named.remove_suffix(1);
    else
      break;
  }
  const std::string folder(named.empty() ? std::string_view("/") : named);
  struct stat st {};
  if (::lstat(folder.c_str(), &st) != 0) return std::strerror(errno);
  if (S_ISLNK(st.st_mode)) return "a symbolic link";
  if (!S_ISDIR(st.st_mode)) return "not a directory";
  if (st.st_uid != ::getuid()) return fmt::format("owned by uid {}, not {}", st.st_uid, ::getuid());
  if ((st.st_mode & 022) != 0) return fmt::format("writable by group or others (mode {:04o})", st.st_mode & 07777);
  return "";
}

void warn_once(const std::string& once_key, const std::string& message) {
  static std::mutex mu;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mu);
  if (warned.insert(once_key).second) std::fprintf(stderr, "ringrt: warning: %s\n", message.c_str());
}

}  // namespace ringrt
