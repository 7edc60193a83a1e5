// The CPU renderer: plain C++17 over a range of global ids (see render.hpp; reference: tinygrad
// renderer/cstyle.py ClangRenderer). The runtime runs [0, numel) in chunks under tbb::parallel_for.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <optional>
#include <regex>

#include "codegen/render.hpp"
#include "codegen/render_common.hpp"

namespace ringrt::codegen {

namespace {

// glibc's double functions, declared here rather than through <cmath> and compiled with
// -fno-builtin-* so g++ never folds them at compile time: the interpreter calls the same functions.
const cstyle::Dialect kCpu{"static inline",
                           "exp2",
                           "log2",
                           "sin",
                           "__builtin_sqrtf",
                           "__builtin_sqrt",
                           "__builtin_bit_cast(unsigned, f)",
                           "__builtin_bit_cast(float, x)",
                           "__builtin_isfinite",
                           "__builtin_fabs"};

// Loop splitting (cstyle::gid_ranges) up to this many loops per kernel: an allreduce's reassembly
// of n chunks needs n; beyond it the body's code size grows for little gain.
constexpr size_t kMaxRanges = 16;

// Streaming stores (see NAME_stream in render.hpp): ringrt_stream_line(dst, src) writes the 64 bytes
// at src to the 64-byte aligned dst past the cache, RINGRT_STREAM_FENCE() orders those writes before
// the ones that follow (an x86 non-temporal store is weakly ordered: without sfence the event that says
// the kernel is done could be seen before its data). clang has a portable builtin; g++ only the x86
// ones. Where neither applies RINGRT_STREAM is undefined and no kernel has a _stream entry.
constexpr const char* kStreamPrelude = R"(#if defined(__clang__)
typedef long long ringrt_v2di __attribute__((vector_size(16)));
static inline void ringrt_stream_line(void* dst, const void* src) {
  for (int i = 0; i < 4; ++i) {
    ringrt_v2di x;
    __builtin_memcpy(&x, (const char*)src + 16 * i, 16);
    __builtin_nontemporal_store(x, (ringrt_v2di*)dst + i);
  }
}
#define RINGRT_STREAM 1
#elif defined(__GNUC__) && defined(__AVX512F__)
typedef float ringrt_v16sf __attribute__((vector_size(64)));
static inline void ringrt_stream_line(void* dst, const void* src) {
  ringrt_v16sf a;
  __builtin_memcpy(&a, src, 64);
  __builtin_ia32_movntps512((float*)dst, a);
}
#define RINGRT_STREAM 1
#elif defined(__GNUC__) && defined(__AVX__)
typedef float ringrt_v8sf __attribute__((vector_size(32)));
static inline void ringrt_stream_line(void* dst, const void* src) {
  ringrt_v8sf a, b;
  __builtin_memcpy(&a, src, 32);
  __builtin_memcpy(&b, (const char*)src + 32, 32);
  __builtin_ia32_movntps256((float*)dst, a);
  __builtin_ia32_movntps256((float*)dst + 8, b);
}
#define RINGRT_STREAM 1
#elif defined(__GNUC__) && defined(__SSE2__)
typedef long long ringrt_v2di __attribute__((vector_size(16)));
static inline void ringrt_stream_line(void* dst, const void* src) {
  for (int i = 0; i < 4; ++i) {
    ringrt_v2di x;
    __builtin_memcpy(&x, (const char*)src + 16 * i, 16);
    __builtin_ia32_movntdq((ringrt_v2di*)dst + i, x);
  }
}
#define RINGRT_STREAM 1
#endif
#if defined(RINGRT_STREAM) && (defined(__x86_64__) || defined(__i386__))
#define RINGRT_STREAM_FENCE() __builtin_ia32_sfence()
#elif defined(RINGRT_STREAM)
#define RINGRT_STREAM_FENCE() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#endif
)";

// The declarations at the top of a kernel's entry points: out, in0.., peer0.., sc0.. (words), dnum.
std::string pointers(const Kernel& k) {
  std::string t = cstyle::c_type(k.dtype);
  std::string src = fmt::format("  {0}* out = ({0}*)bufs[0];\n", t);
  auto params = cstyle::input_params(k);
  for (size_t i = 0; i < params.size(); ++i)
    src += fmt::format("  {} = (const {}*)bufs[{}];\n  (void)in{};\n", params[i], cstyle::c_type(k.inputs[i].dtype),
                       i + 1, i);
  for (int j = 0; j < k.peer_outputs; ++j)
    src += fmt::format("  {0}* peer{1} = ({0}*)bufs[{2}];\n", t, j, k.inputs.size() + 1 + static_cast<size_t>(j));
  auto scalars = cstyle::scalar_params(k);
  for (size_t j = 0; j < scalars.size(); ++j)
    src += fmt::format("  const {} = (unsigned long long)bufs[{}];\n  (void)sc{};\n", scalars[j],
                       k.inputs.size() + 1 + static_cast<size_t>(k.peer_outputs) + j, j);
  return src + "  const long long dnum = dnum_arg;\n  (void)dnum;\n";
}

// [begin, end) clipped to a range of gid_ranges: C expressions of begin and end.
std::pair<std::string, std::string> clipped(const cstyle::GidRange& r) {
  return {r.first == 0 ? "begin" : fmt::format("begin > {0} ? begin : {0}", r.first),
          r.last == cstyle::kLastGid ? "end" : fmt::format("end < {0} ? end : {0}", r.last + 1)};
}

// NAME_stream: [begin, end) as NAME computes it, in the same ranges (gid_ranges); within each, every
// whole 64-byte line of the output (and of every peer output) is computed into a local line and
// streamed, and the ragged ends go through NAME. Outputs not aligned alike all go through NAME.
std::string stream_entry(const Kernel& k, const std::vector<cstyle::GidRange>& ranges) {
  std::string t = cstyle::c_type(k.dtype);
  std::string src = fmt::format(
      "\n#ifdef RINGRT_STREAM\nextern \"C\" void {}_stream(void** bufs, int32_t dnum_arg, int64_t begin, int64_t "
      "end) {{\n",
      k.name);
  src += pointers(k);
  // gid % L == phase: the gids whose out[gid] starts a line (out is aligned to its element)
  src += fmt::format(
      "  enum {{ L = 64 / sizeof({0}) }};\n"
      "  const long long phase = (long long)((64 - ((unsigned long long)out & 63)) & 63) / (long long)sizeof({0});\n",
      t);
  for (int j = 0; j < k.peer_outputs; ++j)
    src += fmt::format(
        "  if ((((unsigned long long)peer{} - (unsigned long long)out) & 63) != 0) {{\n"
        "    {}(bufs, dnum_arg, begin, end);\n    return;\n  }}\n",
        j, k.name);
  std::vector<cstyle::GidRange> whole{{0, cstyle::kLastGid}};
  for (const cstyle::GidRange& r : ranges.empty() ? whole : ranges) {
    auto [lo, hi] = clipped(r);
    src += fmt::format(
        "  {{\n    const long long lo = {2}, hi = {3};\n"
        "    long long first = lo + ((phase - lo) % L + L) % L;\n"
        "    long long last = first < hi ? first + (hi - first) / L * L : first;\n"
        "    if (last <= first) first = last = hi > lo ? hi : lo;\n"
        "    if (lo < first) {0}(bufs, dnum_arg, lo, first);\n"
        "    for (long long line = first; line < last; line += L) {{\n"
        "      {1} tmp[L] __attribute__((aligned(64)));\n"
        "      for (long long i = 0; i < L; ++i) {{\n        const long long gid = line + i;\n",
        k.name, t, lo, hi);
    src += cstyle::render_values(k, kCpu, 4, ranges.empty() ? nullptr : &r);
    src += fmt::format("        tmp[i] = v{};\n      }}\n      ringrt_stream_line(out + line, tmp);\n", k.result);
    for (int j = 0; j < k.peer_outputs; ++j) src += fmt::format("      ringrt_stream_line(peer{} + line, tmp);\n", j);
    src += fmt::format("    }}\n    if (last < hi) {}(bufs, dnum_arg, last, hi);\n  }}\n", k.name);
  }
  return src + "  RINGRT_STREAM_FENCE();\n}\n#endif\n";
}

// The one divisor K of every `(gid / K)` in a rendered body: an input read through a view that expands a
// per-block value over K consecutive elements (the compressed wire's block scales, a row's bias). g++
// vectorizes no loop with such a read (it cannot gather it), so blocked_loop hoists it. nullopt when
// there is none or several.
std::optional<int64_t> block_divisor(const std::string& body) {
  static const std::regex kBlock(R"(\(gid / ([0-9]+)\))");
  std::optional<int64_t> k;
  for (auto it = std::sregex_iterator(body.begin(), body.end(), kBlock); it != std::sregex_iterator(); ++it) {
    int64_t d = std::stoll((*it)[1].str());
    if (k && *k != d) return std::nullopt;
    k = d;
  }
  if (k && *k < 8) return std::nullopt;  // too short a run to pay for its loop
  return k;
}

// [begin, end) block by block: gid / K is the block's number (gid >= 0, so truncation is the floor),
// and the inner loop over the block's elements vectorizes.
std::string blocked_loop(std::string body, int64_t k, const char* ivdep) {
  body = std::regex_replace(body, std::regex(fmt::format(R"(\(gid / {}\))", k)), "gblock");
  return fmt::format(
      "  for (long long from = begin; from < end;) {{\n"
      "    const long long gblock = from / {0}, stop = (gblock + 1) * {0} < end ? (gblock + 1) * {0} : end;\n"
      "{1}    for (long long gid = from; gid < stop; ++gid) {{\n{2}    }}\n"
      "    from = stop;\n  }}\n",
      k, ivdep, body);
}

}  // namespace

std::string render_cpp(std::span<const Kernel> kernels) {
  std::string src =
      // the compiler's own int32_t and int64_t, as <stdint.h> defines them, without parsing the header
      // (with -pipe, HostCompiler::default_flags: a small kernel compiles in 0.87x the time)
      "// generated by ringrt codegen/render_cpp.cpp\ntypedef __INT32_TYPE__ int32_t;\ntypedef __INT64_TYPE__ "
      "int64_t;\n"
      "extern \"C\" double exp2(double);\nextern \"C\" double log2(double);\nextern \"C\" double sin(double);\n";
  src += cstyle::prelude(kCpu);
  src += kStreamPrelude;
  for (const Kernel* kp : cstyle::unique_kernels(kernels)) {
    const Kernel& k = *kp;
    // noinline: NAME_stream calls it for the ragged ends of its range; one copy of the loops is enough
    std::string signature =
        fmt::format("extern \"C\" void {}(void** bufs, int32_t dnum_arg, int64_t begin, int64_t end)", k.name);
    src += fmt::format("\n{} __attribute__((noinline));\n{} {{\n", signature, signature);
    src += pointers(k);
    auto ranges = cstyle::gid_ranges(k, kMaxRanges);
    // With peer outputs, g++ would need more run-time alias checks than it makes (a scalar loop): ivdep
    // asserts what the executor checks, that no output overlaps an input (binding.cpp add_peer_outputs).
    const char* ivdep = k.peer_outputs > 0 ? "#pragma GCC ivdep\n" : "";
    std::string body = ranges.empty() ? cstyle::render_body(k, kCpu, 3) : "";
    std::optional<int64_t> block = ranges.empty() ? block_divisor(body) : std::nullopt;
    if (block) {
      src += blocked_loop(body, *block, ivdep);
      src += "}\n";
      continue;  // no streaming entry: its lines would cut the blocks
    }
    if (ranges.empty()) {
      src += ivdep;
      src += "  for (long long gid = begin; gid < end; ++gid) {\n";
      src += cstyle::render_body(k, kCpu, 2);
      src += "  }\n";
    }
    for (const auto& r : ranges) {
      auto [lo, hi] = clipped(r);  // masks on gid alone are constant inside the range
      src += ivdep;
      src += fmt::format("  for (long long gid = {}, stop = {}; gid < stop; ++gid) {{\n", lo, hi);
      src += cstyle::render_body(k, kCpu, 2, &r);
      src += "  }\n";
    }
    src += "}\n";
    src += stream_entry(k, ranges);
  }
  return src;
}

}  // namespace ringrt::codegen
