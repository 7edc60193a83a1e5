// The GPU runtime compiler (see compiler.hpp): hipRTC on AMD, NVRTC on NVIDIA, one source through
// codegen/rtc_platform.hpp. Follows rocm-examples: every call is checked, and the program log is
// fetched before the compile status is checked, so a failed compile reports its diagnostics.
//
// Targets. NVRTC lists the sm_XY targets it compiles for (nvrtcGetSupportedArchs). hipRTC has no such
// call, and Debian 12's hipRTC (ROCm 5.2) aborts the whole process on a target it does not know, so the
// AMD targets come from a table of the ROCm release that first supports each (ROCm's release notes:
// MI300's gfx942 from 6.0, RDNA3 from 5.5, RDNA4 from 6.4, MI350's gfx950 from 7.0), checked against the
// installed HIP_VERSION before hipRTC is called: on Debian's 5.2 that is gfx906, gfx908, gfx90a, gfx1030.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <charconv>

#include "codegen/compiler.hpp"
#include "codegen/rtc_platform.hpp"
#include "core/errors.hpp"

namespace ringrt::codegen {

namespace {

#if defined(RINGRT_GPU_SIM)

std::vector<std::string> supported_targets() { return {ringrt::sim::kSimArch}; }
bool supports(std::string_view arch) { return arch == ringrt::sim::kSimArch; }

#elif defined(RINGRT_GPU_NVIDIA)

// The sm_XY numbers this NVRTC compiles for; empty when NVRTC cannot say.
const std::vector<int>& nvrtc_archs() {
  static const std::vector<int> archs = [] {
    int n = 0;
    std::vector<int> out;
    if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0) return out;
    out.resize(static_cast<size_t>(n));
    if (nvrtcGetSupportedArchs(out.data()) != NVRTC_SUCCESS) out.clear();
    return out;
  }();
  return archs;
}

std::vector<std::string> supported_targets() {
  std::vector<std::string> out;
  for (int a : nvrtc_archs()) out.push_back(fmt::format("sm_{}", a));
  return out;
}

// "sm_90", or "sm_90a" (sm_90's arch-specific features; NVRTC has them from sm_90 on, no sm_80a), spelled
// as NVRTC spells them (no leading zero), for an XY that NVRTC lists.
bool supports(std::string_view arch) {
  if (!arch.starts_with("sm_")) return false;
  std::string_view digits = arch.substr(3);
  bool specific = digits.ends_with('a');
  if (specific) digits.remove_suffix(1);
  if (digits.empty() || digits.front() == '0') return false;
  int number = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), number);
  if (ec != std::errc() || end != digits.data() + digits.size() || (specific && number < 90)) return false;
  for (int a : nvrtc_archs())
    if (a == number) return true;
  return false;
}

#else

struct AmdTarget {
  std::string_view name;
  int since;  // HIP_VERSION of the first ROCm release whose hipRTC compiles it (major*10^7 + minor*10^5)
  std::array<std::string_view, 2> features;  // the target features it takes, in target-ID order
};
constexpr int rocm(int major, int minor) { return major * 10000000 + minor * 100000; }
// Features from LLVM's AMDGPU processor table: a feature the target lacks (gfx1030:xnack+) makes
// Debian's hipRTC abort the process, so it is refused here like an unknown target.
constexpr std::array<AmdTarget, 10> kAmdTargets{{
    {"gfx906", rocm(5, 0), {"sramecc", "xnack"}},
    {"gfx908", rocm(5, 0), {"sramecc", "xnack"}},
    {"gfx90a", rocm(5, 0), {"sramecc", "xnack"}},
    {"gfx1030", rocm(5, 0), {}},
    {"gfx1100", rocm(5, 5), {}},
    {"gfx1101", rocm(5, 5), {}},
    {"gfx1102", rocm(5, 5), {}},
    {"gfx942", rocm(6, 0), {"sramecc", "xnack"}},
    {"gfx1200", rocm(6, 4), {}},
    {"gfx950", rocm(7, 0), {"sramecc", "xnack"}},
}};

std::vector<std::string> supported_targets() {
  std::vector<std::string> out;
  for (const AmdTarget& t : kAmdTargets)
    if (HIP_VERSION >= t.since) out.emplace_back(t.name);
  return out;
}

// "gfx90a", optionally with the target's features, each once, in order, + or -: "gfx90a:sramecc+:xnack-".
bool supports(std::string_view arch) {
  size_t colon = arch.find(':');
  std::string_view base = arch.substr(0, colon);
  const AmdTarget* target = nullptr;
  for (const AmdTarget& t : kAmdTargets)
    if (t.name == base && HIP_VERSION >= t.since) target = &t;
  if (!target) return false;
  size_t next = 0;  // features before this index were given or passed over
  while (colon != std::string_view::npos) {
    arch = arch.substr(colon + 1);
    colon = arch.find(':');
    std::string_view f = arch.substr(0, colon);
    if (f.size() < 2 || (f.back() != '+' && f.back() != '-')) return false;
    f.remove_suffix(1);
    while (next < target->features.size() && target->features[next] != f) ++next;
    if (next == target->features.size() || f.empty()) return false;
    ++next;
  }
  return true;
}

#endif

}  // namespace

bool hiprtc_supports_arch(std::string_view arch) { return supports(arch); }

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
    throw CompileError(fmt::format("{} target '{}' is not supported by this {}: supported are {}{}", rtc::kCompiler,
                                   arch_, rtc::toolkit_release(), fmt::join(supported_targets(), ", "),
                                   rtc::kFeatures));
  options_ = rtc::options(arch_);
  int major = 0, minor = 0;
  std::string version = hiprtcVersion(&major, &minor) == HIPRTC_SUCCESS ? fmt::format("{}.{}", major, minor) : "?";
  identity_ = fmt::format("{} {} | {} | {}", rtc::kCompiler, version, rtc::toolkit_id(), fmt::join(options_, " "));
}

std::string_view HiprtcCompiler::suffix() const { return rtc::kSuffix; }

std::string HiprtcCompiler::compile_uncached(const std::string& source, const std::string& name) const {
  if (!hiprtc_supports_arch(arch_))
    throw CompileError(fmt::format("{}: unsupported {} target {}", name, rtc::kCompiler, arch_));
  hiprtcProgram prog = nullptr;
  RINGRT_HIPRTC_CHECK(
      hiprtcCreateProgram(&prog, source.c_str(), (name + std::string(rtc::kSourceSuffix)).c_str(), 0, nullptr, nullptr),
      name, "");
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
    throw CompileError(fmt::format("{}: {}CompileProgram for {} failed: {}\n{}", name, rtc::kCompiler, arch_,
                                   hiprtcGetErrorString(status), log));
  size_t size = 0;
  RINGRT_HIPRTC_CHECK(hiprtcGetCodeSize(prog, &size), name, log);
  std::string code(size, '\0');
  RINGRT_HIPRTC_CHECK(hiprtcGetCode(prog, code.data()), name, log);
  return code;
}

}  // namespace ringrt::codegen
