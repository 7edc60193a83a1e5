// Compiler's cached path and the host compiler (see compiler.hpp).
#include "codegen/compiler.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>

#include "codegen/render.hpp"
#include "core/errors.hpp"
#include "core/files.hpp"
#include "core/interrupt.hpp"
#include "core/params_internal.hpp"

namespace ringrt::codegen {

namespace {

// Keep at most this much of a command's output (a compiler's log): enough for any error report, and a
// runaway command cannot exhaust memory.
constexpr size_t kMaxLog = size_t{1} << 20;

// The words of a command line, split on whitespace: "ccache g++" -> {"ccache", "g++"}. No quoting and
// no shell expansion: a word is passed as it stands, so "$(...)", ";", "|" or "*" reach the program as
// literal arguments.
std::vector<std::string> split_command(const std::string& cmd) {
  std::vector<std::string> words;
  std::istringstream in(cmd);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// The system's default search path (confstr _CS_PATH: "/bin:/usr/bin" on glibc).
std::string default_path() {
  std::string path(::confstr(_CS_PATH, nullptr, 0), '\0');
  if (!path.empty()) ::confstr(_CS_PATH, path.data(), path.size());
  path.resize(std::strlen(path.c_str()));
  return path;
}

// The program a command's first word names: the word itself when it holds a '/', else the first
// executable regular file of that name in $PATH's folders, or in the system's default path (confstr
// _CS_PATH) when PATH is unset; "" when there is none. Run by its full path, g++ finds its own parts
// (cc1plus) from it: run as plain "g++" with PATH unset (`env -i`), it failed to. With PATH unset the
// command also gets PATH=default_path() in its environment, as a shell gives it (collect2 looks for ld
// on PATH).
std::string resolve_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* env_path = std::getenv("PATH");
  std::string path = env_path ? env_path : default_path();
  for (size_t start = 0; start <= path.size();) {
    size_t end = std::min(path.find(':', start), path.size());
    std::string dir = path.substr(start, end - start);
    start = end + 1;
    if (dir.empty()) continue;  // execvp's "current folder": never where ringrt looks for a compiler
    std::string candidate = dir + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return "";
}

// Runs argv[0] (looked up on $PATH: resolve_program) with argv, without a shell, in `cwd` (unless empty), stdin from
// /dev/null; appends its stdout and stderr (at most kMaxLog bytes) to `log`. Returns "" when it ran and
// exited 0, else what went wrong: "exit status 1", "killed by signal 11 (Segmentation fault)", "cannot
// run: No such file or directory" (then *start_error, if given, is the errno). Counts a compiler run.
// Thread-safe: the pipe is close-on-exec, so a command started by another thread at the same time never
// holds it open.
// Interruption (core/interrupt.hpp): the command runs in a process group of its own, and once a stop
// is requested (checked every kPoll) the whole group (a compiler driver and what it started) gets
// SIGTERM, then SIGKILL after kKillAfter; it is waited for, and the result is "interrupted by signal N".
// A stop requested before the start runs nothing.
std::string run_command(const std::vector<std::string>& argv, const std::filesystem::path& cwd, std::string& log,
                        int* start_error = nullptr) {
  if (argv.empty()) return "cannot run: the command is empty";
  if (int sig = interrupt_signal()) return fmt::format("interrupted by signal {}", sig);
  count_compiler_run();
  std::string program = resolve_program(argv[0]);
  if (program.empty()) {
    if (start_error) *start_error = ENOENT;
    return fmt::format("cannot run: {}", std::strerror(ENOENT));
  }
  std::vector<char*> args{program.data()};
  for (size_t i = 1; i < argv.size(); ++i) args.push_back(const_cast<char*>(argv[i].c_str()));
  args.push_back(nullptr);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return fmt::format("cannot run: pipe: {}", std::strerror(errno));
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  ::posix_spawn_file_actions_adddup2(&actions, fds[1], 1);  // dup2 clears close-on-exec on 1 and 2
  ::posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  if (!cwd.empty()) ::posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  posix_spawnattr_t attr;
  ::posix_spawnattr_init(&attr);
  ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);  // a group of its own (pgid = pid): killable whole
  ::posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = -1;
  std::vector<char*> env;  // environ, with PATH=default_path() where PATH is unset
  std::string default_path_entry;
  if (std::getenv("PATH") == nullptr) {
    default_path_entry = "PATH=" + default_path();
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.push_back(*e);
    env.push_back(default_path_entry.data());
    env.push_back(nullptr);
  }
  int err = ::posix_spawn(&pid, program.c_str(), &actions, &attr, args.data(), env.empty() ? environ : env.data());
  ::posix_spawnattr_destroy(&attr);
  ::posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (err != 0) {
    ::close(fds[0]);
    if (start_error) *start_error = err;
    return fmt::format("cannot run: {}", std::strerror(err));
  }
  constexpr int kPoll = 50;                                    // ms between checks for a stop request
  constexpr auto kKillAfter = std::chrono::milliseconds(500);  // SIGTERM, then SIGKILL after this
  char buf[65536];
  bool truncated = false;
  int stopped_by = 0;
  std::chrono::steady_clock::time_point terminated;
  for (bool killed = false;;) {
    pollfd ready{fds[0], POLLIN, 0};
    int polled = ::poll(&ready, 1, kPoll);
    if (!stopped_by && (stopped_by = interrupt_signal()) != 0) {
      ::kill(-pid, SIGTERM);
      terminated = std::chrono::steady_clock::now();
    } else if (stopped_by && !killed && std::chrono::steady_clock::now() - terminated > kKillAfter) {
      ::kill(-pid, SIGKILL);
      killed = true;
    }
    if (polled == 0 || (polled < 0 && errno == EINTR)) continue;
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    size_t keep = std::min(static_cast<size_t>(n), kMaxLog - std::min(kMaxLog, log.size()));
    log.append(buf, keep);
    truncated |= keep < static_cast<size_t>(n);
  }
  ::close(fds[0]);
  if (truncated) log += fmt::format("\n[output cut at {} bytes]\n", kMaxLog);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return fmt::format("cannot wait for it: {}", std::strerror(errno));
  if (stopped_by) return fmt::format("interrupted by signal {}", stopped_by);
  if (WIFEXITED(status)) return WEXITSTATUS(status) == 0 ? "" : fmt::format("exit status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return fmt::format("killed by signal {} ({})", WTERMSIG(status), ::strsignal(WTERMSIG(status)));
  return fmt::format("wait status {}", status);
}

// The bytes the process environment takes in an exec: each "NAME=value" with its NUL, and its pointer.
size_t environment_bytes() {
  size_t bytes = 0;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) bytes += std::strlen(*e) + 1 + sizeof(char*);
  return bytes;
}

void write_file(const std::filesystem::path& p, const std::string& text, const std::string& name) {
  std::ofstream out(p, std::ios::binary);
  out << text;
  if (!out) throw CompileError(fmt::format("{}: cannot write {}", name, p.string()));
}

std::string read_file(const std::filesystem::path& p, const std::string& name) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in) throw CompileError(fmt::format("{}: cannot read {}", name, p.string()));
  return std::move(bytes).str();
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

std::string version_of(const std::string& cxx) {
  static std::mutex m;
  static std::map<std::string, std::string> versions;
  std::lock_guard<std::mutex> lock(m);
  auto it = versions.find(cxx);
  if (it != versions.end()) return it->second;
  std::vector<std::string> argv = split_command(cxx);
  argv.push_back("--version");
  std::string out;
  return versions[cxx] = run_command(argv, {}, out).empty() ? first_line(out) : "unknown version";
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown cpu";
}

// A private scratch directory, removed on scope exit. An unusable $TMPDIR is an IOError (exit 2: the
// user can fix it) naming the folder and the system's reason.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string templ = (temp_root() / "ringrt-cc-XXXXXX").string();
    if (!::mkdtemp(templ.data()))
      throw IOError(fmt::format("cannot create a build folder {} under the temporary folder ($TMPDIR): {}", templ,
                                std::strerror(errno)));
    path = templ;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Compiler

CachedArtifact Compiler::artifact(const std::string& source, const std::string& name) const {
  return cached_artifact(cache_key(source, identity()), suffix(), [&] { return compile_uncached(source, name); });
}

std::filesystem::path Compiler::compile_to_path(const std::string& source, const std::string& name) const {
  CachedArtifact a = artifact(source, name);
  if (a.path.empty())
    throw IOError(fmt::format("{}: the compiled kernel could not be written to any kernel cache folder", name));
  return a.path;
}

std::string Compiler::compile(const std::string& source, const std::string& name) const {
  return artifact(source, name).bytes;
}

// ---------------------------------------------------------------------------------------------
// HostLibrary

namespace {

std::string dl_error() {
  const char* err = ::dlerror();
  return err ? err : "unknown error";
}

}  // namespace

HostLibrary::HostLibrary(std::string_view bytes, std::filesystem::path label) : path_(std::move(label)) {
  std::string memory_failure;
  bool no_memfd = true;  // no memory file could be made (else dlopen refused the library in one)
  // 1. an anonymous memory file: no path anyone could swap, no mount option in the way
  int fd = ::memfd_create(("ringrt-" + path_.filename().string()).c_str(), MFD_CLOEXEC);
  if (fd < 0) {
    memory_failure = fmt::format("memfd_create: {}", std::strerror(errno));
  } else if (write_bytes(fd, bytes) != 0) {
    memory_failure = fmt::format("write: {}", std::strerror(errno));
    ::close(fd);
  } else {
    // dlopen knows a library by its name: if a library once loaded as /proc/self/fd/N is still mapped
    // (dlclose may keep one), loading another under that name would return it; move to another N
    bool unique = false;
    for (int tries = 0; tries < 64 && fd >= 0 && !unique; ++tries) {
      void* stale = ::dlopen(fmt::format("/proc/self/fd/{}", fd).c_str(), RTLD_LAZY | RTLD_NOLOAD);
      unique = stale == nullptr;
      if (unique) break;
      ::dlclose(stale);
      int higher = ::fcntl(fd, F_DUPFD_CLOEXEC, fd + 1);
      ::close(fd);
      fd = higher;
    }
    if (unique) handle_ = ::dlopen(fmt::format("/proc/self/fd/{}", fd).c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_) {
      memfd_ = fd;
      return;
    }
    memory_failure = unique ? dl_error() : std::string("no descriptor free of a stale library");
    no_memfd = !unique;
    if (fd >= 0) ::close(fd);
  }
  // 2. a file in this process's private folder (0700), unlinked once loaded
  static std::atomic<uint64_t> serial{0};
  std::filesystem::path file;
  std::string file_failure;
  try {
    file = private_cache_dir() / fmt::format("load-{}-{}", serial++, path_.filename().string());
    int out = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0700);
    if (out < 0) {
      file_failure = fmt::format("{}: {}", file.string(), std::strerror(errno));
    } else {
      bool ok = write_bytes(out, bytes) == 0;
      int err = errno;
      ok = ::close(out) == 0 && ok;
      if (!ok) file_failure = fmt::format("{}: {}", file.string(), std::strerror(err));
    }
  } catch (const IOError& e) {
    file_failure = e.what();
  }
  if (file_failure.empty()) {
    handle_ = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) file_failure = dl_error();  // dlerror names the file
  }
  if (!file.empty()) {
    std::error_code ignored;
    std::filesystem::remove(file, ignored);
  }
  if (!handle_ && no_memfd)  // the environment: a noexec $TMPDIR where memory files are not allowed
    throw IOError(
        fmt::format("cannot load the kernel library {}: from memory: {}; from a private file: {}; set "
                    "TMPDIR to a folder on a mount that allows executables",
                    path_.string(), memory_failure, file_failure));
  if (!handle_)
    throw CompileError(fmt::format("cannot load the kernel library {}: from memory: {}; from a private file: {}",
                                   path_.string(), memory_failure, file_failure));
  warn_once("memfd", fmt::format("kernel libraries cannot be loaded from memory ({}); loading them from "
                                 "files in {}",
                                 memory_failure, file.parent_path().string()));
}

HostLibrary::~HostLibrary() {
  if (handle_ && ::dlclose(handle_) != 0) std::cerr << "ringrt: dlclose " << path_ << " failed\n";  // log, go on
  if (memfd_ >= 0) ::close(memfd_);
}

CpuKernelFn HostLibrary::find(const std::string& name) const {
  return reinterpret_cast<CpuKernelFn>(::dlsym(handle_, name.c_str()));
}

CpuKernelFn HostLibrary::function(const std::string& name) const {
  CpuKernelFn fn = find(name);
  if (!fn) throw CompileError(fmt::format("{}: no such kernel in {}", name, path_.string()));
  return fn;
}

// ---------------------------------------------------------------------------------------------
// HostCompiler

std::vector<std::string> HostCompiler::default_flags() {
  return {fmt::format("-O{}", current_runtime_params().kernel_opt),
          "-march=native",
          "-fPIC",
          "-shared",
          "-nostdlib",
          "-std=c++17",
          "-ffp-contract=off",
          "-fno-builtin-exp2",
          "-fno-builtin-log2",
          "-fno-builtin-sin",
          "-pipe"};
}

namespace {
std::string default_cxx() { return current_runtime_params().cxx; }  // the tunable runtime.cxx
}  // namespace

HostCompiler::HostCompiler() : HostCompiler(default_cxx(), default_flags()) {}

HostCompiler::HostCompiler(std::string cxx, std::vector<std::string> flags)
    : cxx_(std::move(cxx)), flags_(std::move(flags)) {
  identity_ = fmt::format("host | {} | {} | {} | {}", cxx_, version_of(cxx_), fmt::join(flags_, " "), cpu_model());
}

std::string HostCompiler::compile_uncached(const std::string& source, const std::string& name) const {
  TempDir dir;
  std::filesystem::path src = dir.path / "kernel.cpp", lib = dir.path / "kernel.so";
  write_file(src, source, name);
  std::vector<std::string> argv = command_line(flags_, {"-o", lib.string(), src.string(), "-lm"});
  run_compiler(argv, {}, name, lib);
  return read_file(lib, name);
}

std::vector<std::string> HostCompiler::command_line(const std::vector<std::string>& flags,
                                                    const std::vector<std::string>& args) const {
  std::vector<std::string> argv = split_command(cxx_);
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

void HostCompiler::run_compiler(const std::vector<std::string>& argv, const std::filesystem::path& cwd,
                                const std::string& name, const std::filesystem::path& product) const {
  std::string log;
  int start_error = 0;
  std::string failure = run_command(argv, cwd, log, &start_error);
  if (!failure.empty() && interrupt_signal())
    throw Interrupted(fmt::format("{}: host compile stopped ({})", name, failure));
  if (start_error == E2BIG)  // the compiler is fine: the command line with the environment is over ARG_MAX
    throw CompileError(
        fmt::format("{}: host compile cannot start: {} (the process environment, {} bytes, and the "
                    "{} arguments exceed the system's limit; unset large variables)",
                    name, std::strerror(start_error), environment_bytes(), argv.size()));
  if (start_error != 0 || argv.empty())
    throw ConfigError(
        fmt::format("the host C++ compiler '{}' (runtime.cxx, $CXX) cannot be run: {}; set CXX "
                    "to a C++ compiler such as g++ or clang++",
                    cxx_, start_error != 0 ? std::strerror(start_error) : "the command is empty"));
  if (failure.empty() && !std::filesystem::exists(product)) failure = "no " + product.filename().string();
  if (!failure.empty())
    throw CompileError(fmt::format("{}: host compile failed ({}): {}\n{}", name, failure, fmt::join(argv, " "), log));
}

std::shared_ptr<HostLibrary> HostCompiler::load_library(const std::string& source, const std::string& name,
                                                        bool* published) const {
  CachedArtifact a = artifact(source, name);  // verified bytes: a damaged or swapped entry was rebuilt
  auto label = [&] { return a.path.empty() ? std::filesystem::path(name + std::string(suffix())) : a.path; };
  if (published) *published = !a.path.empty();
  if (!a.from_cache) return std::make_shared<HostLibrary>(a.bytes, label());
  try {
    return std::make_shared<HostLibrary>(a.bytes, label());
  } catch (const CompileError& e) {  // a whole entry of bytes the loader refuses: compiled again
    warn_once(
        "entry " + a.path.string(),
        fmt::format("the kernel cache entry {} cannot be loaded ({}); compiling it again", a.path.string(), e.what()));
  }
  a.bytes = compile_uncached(source, name);
  count_compile();
  a.path = publish_artifact(cache_key(source, identity()), suffix(), a.bytes);
  if (published) *published = !a.path.empty();
  return std::make_shared<HostLibrary>(a.bytes, label());
}

std::shared_ptr<HostLibrary> HostCompiler::load(const std::string& source, const std::string& name) const {
  return load_library(source, name, nullptr);
}

namespace {
constexpr std::string_view kIndexSuffix = ".idx";  // a kernel's index entry: the key of its batch
}  // namespace

HostKernel HostCompiler::indexed_kernel(const Kernel& k, const std::string& index_key,
                                        std::map<std::string, std::shared_ptr<HostLibrary>>& batches) const {
  std::optional<CachedArtifact> index = find_cached(index_key, kIndexSuffix);
  if (!index) return {};
  auto miss = [&](const std::string& why) {
    warn_once("entry " + index->path.string(),
              fmt::format("the kernel index entry {} {}; compiling {} again", index->path.string(), why, k.name));
    return HostKernel{};
  };
  if (!is_cache_key(index->bytes)) return miss("names no cache entry");  // never a path of its own choosing
  std::shared_ptr<HostLibrary>& lib = batches[index->bytes];
  if (!lib) {
    std::optional<CachedArtifact> batch = find_cached(index->bytes, suffix());
    if (!batch) return {};
    try {
      lib = std::make_shared<HostLibrary>(batch->bytes, batch->path);
    } catch (const CompileError& e) {
      return miss(fmt::format("names a library that cannot be loaded ({})", e.what()));
    }
    count_cache_hit();
  }
  if (CpuKernelFn fn = lib->find(k.name)) return {lib, fn, lib->find(k.name + "_stream")};
  return miss("names a library without " + k.name);
}

std::vector<HostKernel> HostCompiler::load_kernels(std::span<const Kernel> ks) const {
  std::vector<HostKernel> out(ks.size());
  std::vector<std::string> index_keys;
  std::map<std::string, std::shared_ptr<HostLibrary>> batches;
  std::vector<Kernel> missing;
  for (size_t i = 0; i < ks.size(); ++i) {
    index_keys.push_back(cache_key(render_cpp(ks[i]), identity()));
    out[i] = indexed_kernel(ks[i], index_keys[i], batches);
    if (!out[i].fn) missing.push_back(ks[i]);
  }
  if (missing.empty()) return out;
  std::string source = render_cpp(missing);
  bool published = false;
  std::shared_ptr<HostLibrary> lib = load_library(source, missing[0].name, &published);
  std::string batch_key = cache_key(source, identity());
  for (size_t i = 0; i < ks.size(); ++i) {
    if (out[i].fn) continue;
    out[i] = {lib, lib->function(ks[i].name), lib->find(ks[i].name + "_stream")};
    if (published) publish_artifact(index_keys[i], kIndexSuffix, batch_key);
  }
  return out;
}

}  // namespace ringrt::codegen
