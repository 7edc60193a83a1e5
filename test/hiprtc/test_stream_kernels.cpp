// render_hip's streaming kernels (docs/gpu-path.md "Kernels that stream") compile for every GPU target
// ringrt meets, no GPU needed: a representative set (vector and scalar paths, 32-bit and 64-bit indices,
// float32, float16, bfloat16, int8, float64 and a mix, a permuted read, a shard read, a padded read, a
// reduction, peer outputs) for RINGRT_TEST_GPU_ARCH with the runtime compiler (hipRTC for gfx90a here,
// NVRTC for sm_90 in nvrtc_tests: cmake/RingrtTests.cmake), and for MI300X's gfx942 with clang's HIP
// mode (Debian 12's clang-19: its clang-16 knows gfx940 but not gfx942, and Debian's hipRTC 5.2 neither)
// over Debian's HIP headers, where the assembly must move the vectors with 16-byte loads and stores and
// use no scratch memory (the lanes stay in registers); and fused collectives' kernels
// (render_hip_collective) for both. Without such a clang or without HIP the cases are skipped with the reason.
#include <fmt/format.h>
#include <stdlib.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "codegen/compiler.hpp"
#include "codegen/kernel.hpp"
#include "codegen/render.hpp"
#include "core/errors.hpp"

BOOST_AUTO_TEST_SUITE(test_stream_kernels)

namespace utf = boost::unit_test;
using namespace ringrt;
using namespace ringrt::codegen;

#ifdef RINGRT_HAVE_HIP

namespace {

// The kernels: `small` of 32-bit indices, `big` (over 2^31 elements) of 64-bit ones; one source each, as
// kernels of one name share their form in a source (render_hip). `vector`: the names with the vector path.
struct Kernels {
  UOpGraph g;
  std::vector<Kernel> small, big;
  std::vector<std::string> vector;

  Kernels() {
    DeviceSpec one("HIP:0");
    DeviceSpec two(DeviceTuple{"HIP:0", "HIP:1"});
    auto buf = [&](DType dt, int64_t n, const DeviceSpec& d) { return new_buffer(d, n, dt, &g); };
    const int64_t n = 4099, m = int64_t{3} << 30;
    UOp f0 = buf(DType::float32, n, one), f1 = buf(DType::float32, n, one), f2 = buf(DType::float32, n, one);
    UOp f3 = buf(DType::float32, n, one), h = buf(DType::float16, n, one), bf = buf(DType::bfloat16, n, one);
    UOp i8 = buf(DType::int8, n, one), d = buf(DType::float64, n, one);
    UOp sh = buf(DType::float16, 800, two), mat = buf(DType::float32, 37 * 300, one);
    add(small, f0 + f1 + f2 + f3, "sum4_f32", true);
    add(small, h + h * h, "f16", true);
    add(small, bf * bf + bf, "bf16", true);
    add(small, i8 + i8 * i8, "i8", true);
    add(small, d * d + d, "f64", true);
    add(small, h.cast(DType::float32) + f0, "f16_f32", true);
    small.push_back(with_peer_outputs(lower_kernel(f0 + f1, "sum2_f32"), 3));
    vector.push_back(small.back().name);
    add(small, mat.reshape({37, 300}).permute({1, 0}).reshape({37 * 300}) + mat, "permuted", false);
    add(small, f0.reshape({1, n}).permute({1, 0}).reshape({n}), "copy", true);  // a permute that is no move
    add(small, sh.reshape({2, 400}).shard_local(0).alu(Ops::SQRT), "shard", false);
    add(small, f0.pad(spans({{4, 0}})).shrink(spans({{0, n}})) + f1, "shifted", false);
    add(small, mat.reshape({37, 300}).r(Ops::ADD, {1}), "row_sums", false);
    UOp b8 = buf(DType::int8, m, one), b8b = buf(DType::int8, m, one), bh = buf(DType::float16, m, one);
    add(big, b8 + b8b, "big_i8", true);
    add(big, bh + bh, "big_f16", true);
    add(big, b8.reshape({3, m / 3}).permute({1, 0}).reshape({m}) + b8b, "big_permuted", false);
  }
  void add(std::vector<Kernel>& to, const UOp& ast, const std::string& name, bool vectors) {
    to.push_back(lower_kernel(ast, name));
    if (vectors) vector.push_back(name);
  }
};

bool is_code_object(const std::string& bytes) {
  return bytes.size() > 4 && bytes.compare(0, 4,
                                           "\x7f"
                                           "ELF") == 0;
}

}  // namespace

BOOST_AUTO_TEST_CASE(index_widths_and_vector_paths_are_the_intended_ones) {
  Kernels ks;
  for (const auto& [set, gid] : {std::pair{&ks.small, "const int gid"}, std::pair{&ks.big, "const long long gid"}})
    for (const Kernel& k : *set) {
      std::string src = render_hip(k);
      bool vector = std::find(ks.vector.begin(), ks.vector.end(), k.name) != ks.vector.end();
      BOOST_TEST(src.find(gid) != std::string::npos, k.name << ":\n" << src);
      BOOST_TEST((src.find("rt_vec<") != std::string::npos && src.find("ld0 =") != std::string::npos) == vector,
                 k.name << ":\n"
                        << src);
    }
}

// Fused collectives' kernels (render_hip_collective): n devices' combine as device functions, the plain
// one, the one storing into every output (twoshot) and the ring's two-operand one (ring_fused), and the
// step loop with its barrier, flag waits and signals.
struct Collectives {
  UOpGraph g;
  std::vector<std::pair<std::string, std::string>> sources;  // (name, source)
  Collectives() {
    for (auto [n, dtype] : {std::pair{4, DType::float32}, std::pair{2, DType::float16}, std::pair{8, DType::int8}}) {
      std::vector<UOp> in;
      for (int j = 0; j < n; ++j) in.push_back(new_buffer(DeviceSpec("HIP:0"), 4099, dtype, &g));
      Kernel plain = lower_kernel(fold(Ops::ADD, in), fmt::format("combine_{}", n));
      std::vector<Kernel> both{plain, with_peer_outputs(plain, n - 1)};
      if (n > 2) both.push_back(lower_kernel(fold(Ops::ADD, {in[0], in[1]}), fmt::format("ring_{}", n)));
      std::string name = fmt::format("rt_collective_test_{}", n);
      sources.emplace_back(name, render_hip_collective(name, n, dtype, both));
      name += "_gather";  // an allgather's: no combine
      sources.emplace_back(name, render_hip_collective(name, n, dtype, {}));
    }
  }
};

BOOST_AUTO_TEST_CASE(collective_kernels_compile_for_the_runtime_compiler) {
  HiprtcCompiler cc(RINGRT_TEST_GPU_ARCH);
  for (const auto& [name, source] : Collectives().sources) {
    try {
      BOOST_TEST(is_code_object(cc.compile(source, name)), name);
    } catch (const CompileError& e) {
      BOOST_ERROR(name << ": " << e.what() << "\n" << source);
    }
  }
}

BOOST_AUTO_TEST_CASE(stream_kernels_compile_for_the_runtime_compiler) {
  Kernels ks;
  HiprtcCompiler cc(RINGRT_TEST_GPU_ARCH);
  for (const auto& [set, name] : {std::pair{&ks.small, "stream_small"}, std::pair{&ks.big, "stream_big"}}) {
    try {
      BOOST_TEST(is_code_object(cc.compile(render_hip(*set), name)), name);
    } catch (const CompileError& e) {
      BOOST_ERROR(name << ": " << e.what() << "\n" << render_hip(*set));
    }
  }
}

#ifndef RINGRT_TEST_NVIDIA  // once, in the AMD build's program

namespace {

// A clang++ whose HIP mode targets gfx942, over Debian's HIP headers (libamdhip64-dev: /usr/include/hip):
// the command before its input and output, or empty.
std::string clang_for_gfx942() {
  if (!std::filesystem::exists("/usr/include/hip/hip_runtime.h")) return {};
  for (const char* cxx : {"clang++-19", "clang++-18", "clang++-17", "clang++"}) {
    std::string cmd = fmt::format(
        "{} -x hip --offload-arch=gfx942 -nogpulib --hip-path=/usr -include hip/hip_runtime.h --cuda-device-only -O3 "
        "-S",
        cxx);
    std::string probe = fmt::format(
        "command -v {} >/dev/null 2>&1 && echo 'extern \"C\" __global__ void k() {{}}' | "
        "{} -o /dev/null - >/dev/null 2>&1",
        cxx, cmd);
    if (std::system(probe.c_str()) == 0) return cmd;
  }
  return {};
}

struct HasClangForGfx942 {
  boost::test_tools::assertion_result operator()(utf::test_unit_id) const {
    boost::test_tools::assertion_result r(!clang_for_gfx942().empty());
    r.message() << "no clang++ (19, 18, 17) that compiles HIP for gfx942 over /usr/include/hip (Debian 12: apt-get "
                   "install clang-19 libamdhip64-dev; scripts/install-deps.sh)";
    return r;
  }
};

// `cmd` run on `source` (written to a temporary file): the assembly, or a failed test with clang's output.
std::string assemble(const std::string& cmd, const std::string& source, const std::string& label) {
  std::string dir = (std::filesystem::temp_directory_path() / "ringrt-gfx942-XXXXXX").string();
  BOOST_REQUIRE(::mkdtemp(dir.data()) != nullptr);
  std::filesystem::path src = std::filesystem::path(dir) / "k.hip", out = std::filesystem::path(dir) / "k.s";
  std::ofstream(src) << source;
  std::string run = fmt::format("{} -o '{}' '{}' 2>&1", cmd, out.string(), src.string());
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(run.c_str(), "r"), pclose);
  BOOST_REQUIRE(pipe);
  std::string log;
  char buf[4096];
  for (size_t got; (got = std::fread(buf, 1, sizeof buf, pipe.get())) > 0;) log.append(buf, got);
  int rc = pclose(pipe.release());
  std::string asm_text;
  if (rc == 0) {
    std::ifstream in(out);
    asm_text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  BOOST_TEST(rc == 0, label << ": " << run << " failed:\n" << log);
  return asm_text;
}

// The lines of `asm_text` from kernel `name`'s label to its end (.Lfunc_end), its .amdhsa_kernel
// descriptor included.
std::string function_of(const std::string& asm_text, const std::string& name) {
  size_t at = asm_text.find("\n" + name + ":");
  if (at == std::string::npos) return {};
  size_t end = asm_text.find(".Lfunc_end", at);
  return asm_text.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

}  // namespace

BOOST_AUTO_TEST_CASE(stream_kernels_compile_for_gfx942, *utf::precondition(HasClangForGfx942{})) {
  Kernels ks;
  const std::string cmd = clang_for_gfx942();
  for (const auto& [set, label] : {std::pair{&ks.small, "32-bit indices"}, std::pair{&ks.big, "64-bit indices"}}) {
    std::string asm_text = assemble(cmd, render_hip(*set), label);
    for (const Kernel& k : *set) {
      std::string fn = function_of(asm_text, k.name);
      BOOST_TEST_CONTEXT(label << ", " << k.name) {
        BOOST_TEST(!fn.empty(), "no function in the assembly");
        BOOST_TEST(fn.find(".amdhsa_private_segment_fixed_size 0\n") != std::string::npos, fn);  // no scratch
        if (std::find(ks.vector.begin(), ks.vector.end(), k.name) != ks.vector.end())
          BOOST_TEST(fn.find("global_store_dwordx4") != std::string::npos, fn);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(collective_kernels_compile_for_gfx942, *utf::precondition(HasClangForGfx942{})) {
  const std::string cmd = clang_for_gfx942();
  for (const auto& [name, source] : Collectives().sources) {
    std::string fn = function_of(assemble(cmd, source, name), name);
    BOOST_TEST(!fn.empty(), name << ": no function in the assembly");
    BOOST_TEST(fn.find("global_atomic_add") != std::string::npos, fn);  // the barrier's arrival
  }
}
#endif

#else  // no HIP: report the cases as skipped

BOOST_AUTO_TEST_CASE(stream_kernels_compile, *utf::precondition([](utf::test_unit_id) {
                       boost::test_tools::assertion_result r(false);
                       r.message() << "built without HIP (RINGRT_HAVE_HIP undefined)";
                       return r;
                     })) {}

#endif

BOOST_AUTO_TEST_SUITE_END()
