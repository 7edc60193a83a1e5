// Compilers: kernel source -> a compiled artifact, through the on-disk cache (compile_cache.hpp).
// Reference: tinygrad device.py Compiler (compile_cached keyed by source) and runtime/ops_clang.py /
// ops_hip.py (a shared object loaded with dlopen; a code object from hipRTC).
//
// - HostCompiler: the host C++ compiler ($CXX, else g++) builds a shared object from render_cpp's
//   source; HostLibrary dlopens it and hands out the kernels' function pointers.
// - HiprtcCompiler: the GPU platform's runtime compiler builds a code object for one target from
//   render_hip's source: hipRTC for a gfx target on AMD, NVRTC for an sm_XY target on NVIDIA (the build's
//   RINGRT_GPU_PLATFORM; codegen/rtc_platform.hpp). The hip backend loads it with hipModuleLoadData.
//   Debian's hipRTC aborts the process for targets it does not know, so the target is checked first.
// All methods are thread-safe; artifacts are immutable once published.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/compile_cache.hpp"
#include "codegen/kernel.hpp"

namespace ringrt::codegen {

class Compiler {
 public:
  virtual ~Compiler() = default;
  // What, besides the source, decides the artifact: compiler path and version, flags, target. Part of
  // every cache key.
  virtual const std::string& identity() const = 0;
  // The artifact's path in the cache (an entry: the artifact followed by its record, see
  // compile_cache.hpp), compiling `source` first unless the same (source, identity) was compiled before
  // (by any process using the same cache directory) and its entry passes every check. `name` labels
  // errors. Throws CompileError (message: the name, the compiler's log) when compilation fails,
  // ConfigError when the compiler cannot run, IOError when the entry could not be published anywhere.
  // Counts a compile or a cache hit in compile_stats().
  std::filesystem::path compile_to_path(const std::string& source, const std::string& name) const;
  // The artifact's bytes (a shared object, a code object), verified as compile_to_path does; works
  // when the cache cannot be written (the bytes are then kept in memory only).
  std::string compile(const std::string& source, const std::string& name) const;
  // compile() and where the entry is published (empty when nowhere).
  CachedArtifact artifact(const std::string& source, const std::string& name) const;

 protected:
  // Compiles without the cache. Throws CompileError carrying `name` and the compiler's log.
  virtual std::string compile_uncached(const std::string& source, const std::string& name) const = 0;
  virtual std::string_view suffix() const = 0;  // the artifact's file suffix: ".so", ".hsaco"
};

// The entry point render_cpp gives every kernel: elements [begin, end) of the output, bufs[0] the output
// buffer and bufs[1 + i] input i (Kernel::inputs order), dnum the device's _device_num.
using CpuKernelFn = void (*)(void** bufs, int32_t dnum, int64_t begin, int64_t end);

// A loaded shared object; dlclose on destruction (function pointers die with it). Loaded from the
// exact bytes given (verified by the cache), never by reopening a path in the cache: from an anonymous
// memory file (memfd), else — one warning — from a file in this process's private folder, unlinked once
// loaded. So a cache folder on a noexec mount works, and nothing can swap the file after the check.
class HostLibrary {
 public:
  // `label` names the library in errors and path() (the cache entry it came from). Throws CompileError
  // when it cannot be loaded either way (both reasons); IOError when no memory file could be made and
  // $TMPDIR does not allow executables.
  HostLibrary(std::string_view bytes, std::filesystem::path label);
  ~HostLibrary();
  HostLibrary(const HostLibrary&) = delete;
  HostLibrary& operator=(const HostLibrary&) = delete;
  // The kernel `name`. Throws CompileError when the library has no such symbol.
  CpuKernelFn function(const std::string& name) const;
  // The kernel `name`, nullptr when the library has no such symbol.
  CpuKernelFn find(const std::string& name) const;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  void* handle_ = nullptr;
  int memfd_ = -1;  // open while loaded: "/proc/self/fd/N" names the library, so N must stay unique
};

struct HostKernel {  // a compiled CPU kernel; keep `library` alive while calling `fn` or `stream`
  std::shared_ptr<HostLibrary> library;
  CpuKernelFn fn = nullptr;
  // NAME_stream (render.hpp): the same elements, whole output lines stored past the cache; nullptr
  // where the host compiler has no streaming store (then fn is the only entry)
  CpuKernelFn stream = nullptr;
};

class HostCompiler : public Compiler {
 public:
  // The compiler is the tunable runtime.cxx ($CXX, else g++); flags default_flags(). The command is
  // split on whitespace into the program and its first arguments ("ccache g++" runs ccache with g++ as
  // its first argument) and run without a shell: no quoting, no expansion of $, *, ; or `...`. A
  // compiler that cannot be started (absent, not executable) is a ConfigError naming it (exit 2).
  HostCompiler();
  HostCompiler(std::string cxx, std::vector<std::string> flags);
  // -O<runtime.kernel_opt> (3 unless set) -march=native -fPIC -shared -std=c++17, plus
  // -ffp-contract=off (no FMA: every op rounds, so the -O level never changes a value) and
  // -fno-builtin-{exp2,log2,sin} (no compile-time folding: the interpreter calls glibc's). Not
  // -fno-trapping-math: it lets g++ fold 0.0/0.0 to +NaN where x86 computes -NaN at run time.
  // -nostdlib: a kernel needs no start files, libstdc++ or libc (it calls only libm's exp2, log2 and
  // sin, linked with -lm), and linking the standard libraries was a fifth of a small kernel's compile time.
  // -pipe: the assembly goes to the assembler through a pipe, not a file (with render_cpp's source
  // free of #include, a small kernel compiles in 0.87x the time).
  static std::vector<std::string> default_flags();
  // "<cxx> | <first line of cxx --version> | <flags> | <cpu model>" (-march=native depends on the CPU).
  const std::string& identity() const override { return identity_; }
  // Compiles (or finds in the cache) and dlopens the shared object built from `source`.
  std::shared_ptr<HostLibrary> load(const std::string& source, const std::string& name) const;
  // The kernels `ks` (render_cpp), in order, each found through the kernel index when an earlier batch,
  // of this process or another, compiled it: a kernel's index entry (`<key of its own source>.idx`, a
  // verified cache entry like any other) names the batch entry (`.so`) that holds it. The kernels no
  // batch holds are compiled together, in one compiler run, as one new batch, and indexed. So programs
  // that share kernels share their compiled code, and a batch is compiled once for all of them. An index
  // entry that names a missing, refused or foreign batch is a miss (compiled and indexed again). Same
  // errors as load().
  std::vector<HostKernel> load_kernels(std::span<const Kernel> ks) const;

 protected:
  std::string compile_uncached(const std::string& source, const std::string& name) const override;
  std::string_view suffix() const override { return ".so"; }

 private:
  // split_command(cxx_) + flags + args
  std::vector<std::string> command_line(const std::vector<std::string>& flags,
                                        const std::vector<std::string>& args) const;
  // Runs argv in cwd; throws ConfigError (naming the compiler and the system's reason) when it cannot be
  // started, CompileError (name, what went wrong, the command, its log) unless it exits 0 and `product`
  // exists.
  void run_compiler(const std::vector<std::string>& argv, const std::filesystem::path& cwd, const std::string& name,
                    const std::filesystem::path& product) const;
  // load(), and whether the library's entry is published (`*published`, when given). An entry that
  // passes every check but whose bytes the loader refuses (a compiler that exited 0 with a broken
  // output) is one warning and compiled again.
  std::shared_ptr<HostLibrary> load_library(const std::string& source, const std::string& name, bool* published) const;
  // `k` through its index entry `index_key`, loading the batch it names into `batches` (by batch key)
  // unless already there; an empty HostKernel on a miss.
  HostKernel indexed_kernel(const Kernel& k, const std::string& index_key,
                            std::map<std::string, std::shared_ptr<HostLibrary>>& batches) const;

  std::string cxx_;
  std::vector<std::string> flags_;
  std::string identity_;
};

#ifdef RINGRT_HAVE_HIP
// True when the platform's runtime compiler targets `arch` without a GPU present. AMD: a gfx target the
// installed HIP's release supports (Debian's 5.2: gfx90a, gfx908, gfx906, gfx1030), optionally with
// target features (":sramecc+", ":xnack-"). NVIDIA: sm_XY or sm_XYa for an XY NVRTC lists.
bool hiprtc_supports_arch(std::string_view arch);

class HiprtcCompiler : public Compiler {
 public:
  // `arch` as the device reports it: "gfx90a:sramecc+:xnack-" (gcnArchName) on AMD, "sm_90" on NVIDIA.
  // Throws CompileError, without calling the runtime compiler, when !hiprtc_supports_arch(arch).
  explicit HiprtcCompiler(std::string arch);
  // "hiprtc <version> | HIP <HIP_VERSION> | --offload-arch=<arch> -O3 -ffp-contract=off" on AMD,
  // "nvrtc <version> | CUDA <CUDA_VERSION> | --gpu-architecture=<arch> --fmad=false ..." on NVIDIA
  const std::string& identity() const override { return identity_; }
  const std::string& arch() const { return arch_; }

 protected:
  // The code object hipRTC (an ELF .hsaco) or NVRTC (a cubin) produces. Throws CompileError with the
  // program log.
  std::string compile_uncached(const std::string& source, const std::string& name) const override;
  std::string_view suffix() const override;

 private:
  std::string arch_;
  std::vector<std::string> options_;
  std::string identity_;
};
#endif

}  // namespace ringrt::codegen
