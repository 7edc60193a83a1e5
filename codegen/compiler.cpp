// Compiler's cached path and the host compiler (see compiler.hpp).
#include "codegen/compiler.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>

#include "codegen/render.hpp"
#include "rewrite/errors.hpp"
#include "rewrite/params.hpp"

namespace ringrt::codegen {

namespace {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs a shell command; returns its exit code (-1: it did not run or died of a signal) and appends its
// stdout and stderr to output.
int run(const std::string& cmd, std::string& output) {
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) output.append(buf, n);
  int status = ::pclose(p);
  return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

std::string version_of(const std::string& cxx) {
  static std::mutex m;
  static std::map<std::string, std::string> versions;
  std::lock_guard<std::mutex> lock(m);
  auto it = versions.find(cxx);
  if (it != versions.end()) return it->second;
  std::string out;
  int rc = run(cxx + " --version", out);
  return versions[cxx] = rc == 0 ? first_line(out) : "unknown version";
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown cpu";
}

// A private scratch directory, removed on scope exit.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string templ = (std::filesystem::temp_directory_path() / "ringrt-cc-XXXXXX").string();
    if (!::mkdtemp(templ.data())) throw CompileError(fmt::format("cannot create a build directory {}", templ));
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

std::filesystem::path Compiler::compile_to_path(const std::string& source, const std::string& name) const {
  std::string key = cache_key(source, identity());
  CompileCache cache;
  std::filesystem::path p = cache.path(key, suffix());
  std::error_code ec;
  if (std::filesystem::is_regular_file(p, ec) && std::filesystem::file_size(p, ec) > 0 && !ec) {
    count_cache_hit();
    return p;
  }
  std::string bytes = compile_uncached(source, name);
  count_compile();
  try {
    return cache.store(key, suffix(), bytes);
  } catch (const std::exception& first) {  // an unwritable cache: fall back to a private one
    try {
      return CompileCache(std::filesystem::temp_directory_path() / "ringrt-cache").store(key, suffix(), bytes);
    } catch (const std::exception&) {
      throw CompileError(
          fmt::format("{}: cannot write the compile cache {}: {}", name, cache.dir().string(), first.what()));
    }
  }
}

std::string Compiler::compile(const std::string& source, const std::string& name) const {
  std::filesystem::path p = compile_to_path(source, name);
  std::ifstream in(p, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in) throw CompileError(fmt::format("{}: cannot read the compiled artifact {}", name, p.string()));
  return std::move(bytes).str();
}

// ---------------------------------------------------------------------------------------------
// HostLibrary

HostLibrary::HostLibrary(const std::filesystem::path& path) : path_(path) {
  handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char* err = ::dlerror();
    throw CompileError(fmt::format("dlopen {} failed: {}", path.string(), err ? err : "unknown error"));
  }
}

HostLibrary::~HostLibrary() {
  if (handle_ && ::dlclose(handle_) != 0) std::cerr << "ringrt: dlclose " << path_ << " failed\n";  // log, go on
}

CpuKernelFn HostLibrary::function(const std::string& name) const {
  void* sym = ::dlsym(handle_, name.c_str());
  if (!sym) throw CompileError(fmt::format("{}: no such kernel in {}", name, path_.string()));
  return reinterpret_cast<CpuKernelFn>(sym);
}

// ---------------------------------------------------------------------------------------------
// HostCompiler

std::vector<std::string> HostCompiler::default_flags() {
  return {"-O3",
          "-march=native",
          "-fPIC",
          "-shared",
          "-std=c++17",
          "-ffp-contract=off",
          "-fno-builtin-exp2",
          "-fno-builtin-log2",
          "-fno-builtin-sin"};
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
  {
    std::ofstream out(src);
    out << source;
    if (!out) throw CompileError(fmt::format("{}: cannot write {}", name, src.string()));
  }
  std::string cmd = cxx_;  // unquoted: $CXX may carry a launcher ("ccache g++")
  for (const auto& f : flags_) cmd += " " + shell_quote(f);
  cmd += fmt::format(" -o {} {} -lm", shell_quote(lib.string()), shell_quote(src.string()));
  std::string log;
  int rc = run(cmd, log);
  if (rc != 0 || !std::filesystem::exists(lib))
    throw CompileError(fmt::format("{}: host compile failed (exit status {}): {}\n{}", name, rc, cmd, log));
  std::ifstream in(lib, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return std::move(bytes).str();
}

std::shared_ptr<HostLibrary> HostCompiler::load(const std::string& source, const std::string& name) const {
  std::filesystem::path p = compile_to_path(source, name);
  try {
    return std::make_shared<HostLibrary>(p);
  } catch (const CompileError&) {  // a damaged cache entry: drop it and build once more
    std::error_code ignored;
    std::filesystem::remove(p, ignored);
    return std::make_shared<HostLibrary>(compile_to_path(source, name));
  }
}

}  // namespace ringrt::codegen
