// The hipRTC compiler (see compiler.hpp). Follows rocm-examples: every hipRTC call is checked, and the
// program log is fetched before the compile status is checked, so a failed compile reports its
// diagnostics. Debian 12's hipRTC (ROCm 5.2) compiles for the targets below with no GPU present and
// aborts the whole process for newer ones (gfx94x, gfx11xx), hence the allow-list checked first.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>

#include "codegen/compiler.hpp"
#include "rewrite/errors.hpp"

#ifdef RINGRT_HAVE_HIP
#include <hip/hip_version.h>
#include <hip/hiprtc.h>
#endif

namespace ringrt::codegen {

namespace {

constexpr std::array<std::string_view, 4> kHiprtcArchs{"gfx90a", "gfx908", "gfx906", "gfx1030"};

bool valid_feature(std::string_view f) {  // "sramecc+", "xnack-"
  if (f.size() < 2 || (f.back() != '+' && f.back() != '-')) return false;
  std::string_view name = f.substr(0, f.size() - 1);
  return name == "sramecc" || name == "xnack";
}

}  // namespace

bool hiprtc_supports_arch(std::string_view arch) {
  size_t colon = arch.find(':');
  std::string_view base = arch.substr(0, colon);
  bool known = false;
  for (auto a : kHiprtcArchs) known = known || a == base;
  while (known && colon != std::string_view::npos) {
    arch = arch.substr(colon + 1);
    colon = arch.find(':');
    known = valid_feature(arch.substr(0, colon));
  }
  return known;
}

#ifdef RINGRT_HAVE_HIP

// Throws CompileError naming the call, file:line, the kernel and hipRTC's error string.
#define RINGRT_HIPRTC_CHECK(call, name, log)                                                            \
  do {                                                                                                  \
    hiprtcResult rc_ = (call);                                                                          \
    if (rc_ != HIPRTC_SUCCESS)                                                                          \
      throw CompileError(fmt::format("{}: {} failed at {}:{}: {}\n{}", name, #call, __FILE__, __LINE__, \
                                     hiprtcGetErrorString(rc_), log));                                  \
  } while (0)

HiprtcCompiler::HiprtcCompiler(std::string arch) : arch_(std::move(arch)) {
  if (!hiprtc_supports_arch(arch_))
    throw CompileError(
        fmt::format("hipRTC target '{}' is not supported by this HIP (ROCm {}.{}): supported are {} "
                    "with optional :sramecc± / :xnack± features",
                    arch_, HIP_VERSION_MAJOR, HIP_VERSION_MINOR, fmt::join(kHiprtcArchs, ", ")));
  options_ = {"--offload-arch=" + arch_, "-O3", "-ffp-contract=off"};
  int major = 0, minor = 0;
  std::string version = hiprtcVersion(&major, &minor) == HIPRTC_SUCCESS ? fmt::format("{}.{}", major, minor) : "?";
  identity_ = fmt::format("hiprtc {} | HIP {} | {}", version, HIP_VERSION, fmt::join(options_, " "));
}

std::string HiprtcCompiler::compile_uncached(const std::string& source, const std::string& name) const {
  if (!hiprtc_supports_arch(arch_)) throw CompileError(fmt::format("{}: unsupported hipRTC target {}", name, arch_));
  hiprtcProgram prog = nullptr;
  RINGRT_HIPRTC_CHECK(hiprtcCreateProgram(&prog, source.c_str(), (name + ".hip").c_str(), 0, nullptr, nullptr), name,
                      "");
  struct Destroy {
    hiprtcProgram* p;
    ~Destroy() { hiprtcDestroyProgram(p); }  // a failure here is not worth more than the leak
  } destroy{&prog};
  std::vector<const char*> opts;
  for (const auto& o : options_) opts.push_back(o.c_str());
  hiprtcResult status = hiprtcCompileProgram(prog, static_cast<int>(opts.size()), opts.data());
  size_t log_size = 0;  // the log first, then the status (rocm-examples)
  std::string log;
  if (hiprtcGetProgramLogSize(prog, &log_size) == HIPRTC_SUCCESS && log_size > 1) {
    log.resize(log_size);
    if (hiprtcGetProgramLog(prog, log.data()) != HIPRTC_SUCCESS) log.clear();
    while (!log.empty() && log.back() == '\0') log.pop_back();
  }
  if (status != HIPRTC_SUCCESS)
    throw CompileError(
        fmt::format("{}: hiprtcCompileProgram for {} failed: {}\n{}", name, arch_, hiprtcGetErrorString(status), log));
  size_t size = 0;
  RINGRT_HIPRTC_CHECK(hiprtcGetCodeSize(prog, &size), name, log);
  std::string code(size, '\0');
  RINGRT_HIPRTC_CHECK(hiprtcGetCode(prog, code.data()), name, log);
  return code;
}

#endif  // RINGRT_HAVE_HIP

}  // namespace ringrt::codegen
