// codegen/render_cpp's streaming entry NAME_stream (render.hpp): for every element type width, every
// alignment of the output, peer outputs aligned alike or not, and ranges cut anywhere, it writes the
// values host arithmetic gives, to every output, and nothing outside [begin, end); with each of the
// prelude's store forms (g++ with AVX-512, AVX, SSE2 only; clang where installed).
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <cstring>
#include <random>

#include "codegen/compiler.hpp"
#include "codegen/kernel.hpp"
#include "codegen/render.hpp"
#include "core/errors.hpp"

BOOST_AUTO_TEST_SUITE(test_stream_stores)

using namespace ringrt;
using namespace ringrt::codegen;

namespace {

// 64-byte aligned storage of `n` elements of T, filled with `fill`.
template <class T>
struct Aligned {
  T* p;
  explicit Aligned(size_t n, T fill) : p(static_cast<T*>(std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64))) {
    BOOST_REQUIRE(p);
    for (size_t i = 0; i < n; ++i) p[i] = fill;
  }
  ~Aligned() { std::free(p); }
  Aligned(const Aligned&) = delete;
  Aligned& operator=(const Aligned&) = delete;
};

// out = a + b over n elements with two peer outputs; the kernel's two entries, each run over [0, n)
// cut at random, with the outputs at element offsets `offsets` (output, peer 0, peer 1) of their own
// 64-byte aligned storage; every output must hold a[i] + b[i] (T's arithmetic) and the elements around
// [0, n) their fill.
template <class T>
void check_sums(const HostCompiler& cc, DType dtype, int64_t n, std::mt19937_64& rng) {
  UOpGraph g;
  UOp a = new_buffer(DeviceSpec("CPU:0"), n, dtype, &g), b = new_buffer(DeviceSpec("CPU:0"), n, dtype, &g);
  Kernel k = with_peer_outputs(lower_kernel(a + b, "stream_sum"), 2);
  auto lib = cc.load(render_cpp(k), k.name);
  CpuKernelFn plain = lib->function(k.name), stream = lib->find(k.name + "_stream");
#if defined(__x86_64__) || defined(__clang__)
  BOOST_REQUIRE_MESSAGE(stream, "the host compiler has streaming stores here, so " << k.name << "_stream must exist");
#endif
  std::vector<T> ha(static_cast<size_t>(n)), hb(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    ha[static_cast<size_t>(i)] = static_cast<T>(i * 3 - 50);
    hb[static_cast<size_t>(i)] = static_cast<T>(7 - i / 2);
  }
  const T fill = static_cast<T>(-99);
  for (CpuKernelFn fn : {plain, stream}) {
    if (!fn) continue;
    for (auto offsets : std::vector<std::array<int64_t, 3>>{{0, 0, 0}, {3, 3, 3}, {1, 1, 2}, {0, 5, 0}}) {
      std::vector<std::unique_ptr<Aligned<T>>> store;
      std::vector<void*> bufs(4);
      for (size_t j = 0; j < 3; ++j) {
        store.push_back(std::make_unique<Aligned<T>>(static_cast<size_t>(n + 16), fill));
        bufs[j == 0 ? 0 : j + 2] = store[j]->p + offsets[j];
      }
      // the kernel's inputs in its own order
      for (size_t i = 0; i < 2; ++i)
        bufs[1 + i] = k.inputs[i].buffer_id == std::get<BufferArg>(a.arg()).id ? ha.data() : hb.data();
      for (int64_t begin = 0; begin < n;) {
        int64_t end = std::min<int64_t>(n, begin + 1 + static_cast<int64_t>(rng() % 300));
        fn(bufs.data(), 0, begin, end);
        begin = end;
      }
      for (size_t j = 0; j < 3; ++j) {
        const T* base = store[j]->p;
        int64_t off = offsets[j], bad = -1;
        for (int64_t i = 0; i < n + 16 && bad < 0; ++i) {
          bool inside = i >= off && i < off + n;
          T want = inside ? static_cast<T>(ha[static_cast<size_t>(i - off)] + hb[static_cast<size_t>(i - off)]) : fill;
          if (std::memcmp(&base[i], &want, sizeof(T)) != 0) bad = i;
        }
        BOOST_TEST(bad == -1, (fn == stream ? "NAME_stream" : "NAME")
                                  << ", " << sizeof(T) << "-byte elements, n " << n << ", output " << j << " at offset "
                                  << off << ": element " << bad - off << " is wrong");
      }
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(streamed_lines_hold_the_sums_at_every_alignment) {
  std::mt19937_64 rng(7);
  for (int64_t n : {1, 15, 16, 17, 64, 1000, 4099}) {
    HostCompiler cc;
    check_sums<float>(cc, DType::float32, n, rng);
    check_sums<double>(cc, DType::float64, n, rng);
    check_sums<signed char>(cc, DType::int8, n, rng);
    check_sums<short>(cc, DType::int16, n, rng);
  }
}

// The prelude's other store forms than this machine's default: -mno-* takes g++ down to AVX and to
// SSE2 (on x86), and clang++ takes its portable builtin.
BOOST_AUTO_TEST_CASE(every_store_form_holds_the_sums) {
  std::mt19937_64 rng(8);
  std::vector<HostCompiler> compilers;
#if defined(__x86_64__)
  for (const char* off : {"-mno-avx512f", "-mno-avx"}) {
    std::vector<std::string> flags = HostCompiler::default_flags();
    flags.push_back(off);
    compilers.emplace_back("g++", flags);
  }
#endif
  HostCompiler clang("clang++", HostCompiler::default_flags());
  try {
    UOpGraph g;
    UOp b = new_buffer(DeviceSpec("CPU:0"), 4, DType::float32, &g);
    (void)clang.load(render_cpp(lower_kernel(b + b, "probe")), "probe");
    compilers.push_back(clang);
  } catch (const ConfigError& e) {  // not installed: HostCompiler says it cannot run it
    BOOST_TEST_MESSAGE("clang++ not checked: " << e.what());
  }
  for (const HostCompiler& cc : compilers)
    for (int64_t n : {17, 1000}) {
      check_sums<float>(cc, DType::float32, n, rng);
      check_sums<signed char>(cc, DType::int8, n, rng);
    }
}

BOOST_AUTO_TEST_SUITE_END()
