// Compile kernel ASTs for the CPU in one translation unit and compare every output, bit for bit,
// with the reference interpreter (include after <boost/test/unit_test.hpp>).
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "codegen/compiler.hpp"
#include "codegen/kernel.hpp"
#include "codegen/render.hpp"
#include "core/params_internal.hpp"
#include "rewrite/interpreter.hpp"
#include "test/codegen/random_kernel.hpp"
#include "test/support/checks.hpp"

namespace ringrt::test {

// Runs fn for device d over [0, numel) in uneven chunks of at most max_chunk elements, as a runtime
// splitting the range would; the output, then each of the kernel's peer outputs (Kernel::peer_outputs).
inline std::vector<HostBuffer> run_cpu(codegen::CpuKernelFn fn, const codegen::Kernel& k, const BufferLookup& lookup,
                                       int d, std::mt19937_64& rng, int64_t max_chunk = 97) {
  std::vector<HostBuffer> outs(1 + static_cast<size_t>(k.peer_outputs), HostBuffer(k.dtype, k.shape));
  for (HostBuffer& out : outs)
    std::fill(out.bytes.begin(), out.bytes.end(), std::byte{0xab});  // a write that never happens shows
  std::vector<void*> bufs{outs[0].bytes.data()};
  for (const auto& in : k.inputs) {
    const std::vector<HostBuffer>* data = lookup(in.buffer_id);
    BOOST_REQUIRE_MESSAGE(data && !data->empty(), "no data for buffer " << in.buffer_id);
    bufs.push_back(const_cast<std::byte*>((*data)[data->size() == 1 ? 0 : static_cast<size_t>(d)].bytes.data()));
  }
  for (size_t j = 1; j < outs.size(); ++j) bufs.push_back(outs[j].bytes.data());
  for (int64_t begin = 0; begin < k.numel;) {
    int64_t end =
        std::min<int64_t>(k.numel, begin + 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(max_chunk)));
    fn(bufs.data(), d, begin, end);
    begin = end;
  }
  return outs;
}

inline std::string bytes_hex(const HostBuffer& b, int64_t i) {
  std::string s;
  int w = itemsize(b.dtype);
  for (int j = w; j-- > 0;) s += fmt::format("{:02x}", static_cast<unsigned>(b.bytes[static_cast<size_t>(i * w + j)]));
  return s;
}

// The kernel functions of a rendered translation unit, without the shared prelude.
inline std::string kernel_source(const std::string& src) {
  return src.substr(std::min(src.size(), src.find("\nextern")));
}

// The default host compiler (runtime.cxx, HostCompiler::default_flags) at -O<level> instead of the
// tunable runtime.kernel_opt.
inline codegen::HostCompiler host_compiler_at(int level) {
  std::vector<std::string> flags = codegen::HostCompiler::default_flags();
  for (std::string& f : flags)
    if (f.rfind("-O", 0) == 0) f = fmt::format("-O{}", level);
  return codegen::HostCompiler(current_runtime_params().cxx, flags);
}

// Lowers every ast (with `peer_outputs` peer outputs: codegen::with_peer_outputs), compiles them
// together with `cc`, runs each for every device and checks the bytes of the output and of every peer
// output against Interpreter::evaluate; the same for the streaming entry NAME_stream where the compiler
// makes one (in chunks of up to 400 elements, so whole 64-byte lines occur; HostBuffer's storage puts the
// outputs at any alignment, alike or not). `label` names the batch (and its seeds) in failures. A NaN
// matches any NaN, unless `strict_nans`: then every bit (a signaling NaN must come out quieted).
inline void check_against_interpreter(const std::vector<UOp>& asts, const std::vector<BufferLookup>& lookups,
                                      const std::vector<int>& ndevs, const std::vector<std::string>& labels,
                                      int peer_outputs = 0, const codegen::HostCompiler& cc = codegen::HostCompiler(),
                                      bool strict_nans = false) {
  if (asts.empty()) return;
  std::vector<codegen::Kernel> kernels;
  for (size_t i = 0; i < asts.size(); ++i) {
    try {
      kernels.push_back(codegen::with_peer_outputs(codegen::lower_kernel(asts[i]), peer_outputs));
    } catch (const std::exception& e) {
      BOOST_FAIL(labels[i] << ": lower_kernel threw " << e.what() << "\n" << print_graph(asts[i]));
    }
  }
  std::string src = codegen::render_cpp(kernels);
  auto lib = cc.load(src, "check_batch");
  std::mt19937_64 rng(12345);
  for (size_t i = 0; i < asts.size(); ++i) {
    const codegen::Kernel& k = kernels[i];
    std::vector<HostBuffer> want = Interpreter(lookups[i]).evaluate(asts[i]);
    std::vector<std::pair<std::string, codegen::CpuKernelFn>> entries{{k.name, lib->function(k.name)}};
    if (codegen::CpuKernelFn stream = lib->find(k.name + "_stream")) entries.emplace_back(k.name + "_stream", stream);
    for (int d = 0; d < ndevs[i]; ++d)
      for (size_t e = 0; e < entries.size(); ++e) {
        std::vector<HostBuffer> outs = run_cpu(entries[e].second, k, lookups[i], d, rng, e == 0 ? 97 : 400);
        const HostBuffer& w = want[want.size() == 1 ? 0 : static_cast<size_t>(d)];
        for (size_t j = 0; j < outs.size(); ++j) {
          const HostBuffer& got = outs[j];
          if (got.bytes == w.bytes) continue;
          int64_t bad = 0;
          auto same = [&](int64_t at) {
            auto size = static_cast<size_t>(itemsize(got.dtype)), off = static_cast<size_t>(at) * size;
            return strict_nans ? std::memcmp(got.bytes.data() + off, w.bytes.data() + off, size) == 0
                               : ringrt::test::same_element(got, w, at);
          };
          while (bad < got.numel() && same(bad)) ++bad;
          if (bad == got.numel()) continue;
          BOOST_ERROR(labels[i] << ", " << entries[e].first << ", device " << d
                                << (j ? fmt::format(", peer output {}", j - 1) : "") << ": element " << bad << " of "
                                << got.numel() << " is 0x" << bytes_hex(got, bad) << " (" << got.get(bad)
                                << "), the interpreter says 0x" << bytes_hex(w, bad) << " (" << w.get(bad) << ")\n"
                                << print_graph(asts[i]) << k.dump() << kernel_source(codegen::render_cpp(k)));
          break;
        }
      }
  }
}

// The same for random kernels: one batch of `count` seeds starting at `first_seed`.
inline void check_random_batch(uint64_t first_seed, int count) {
  UOpGraph g;
  std::vector<RandomKernel> cases;
  cases.reserve(static_cast<size_t>(count));
  std::vector<UOp> asts;
  std::vector<BufferLookup> lookups;
  std::vector<int> ndevs;
  std::vector<std::string> labels;
  for (int i = 0; i < count; ++i) {
    uint64_t seed = first_seed + static_cast<uint64_t>(i);
    try {
      cases.push_back(KernelGen(seed, g).make());
    } catch (const std::exception& e) {
      BOOST_FAIL("seed " << seed << ": the generator built an invalid graph: " << e.what());
    }
    asts.push_back(cases.back().ast);
    lookups.push_back(cases.back().lookup());
    ndevs.push_back(cases.back().ndev);
    labels.push_back(fmt::format("random kernel seed {}", seed));
  }
  check_against_interpreter(asts, lookups, ndevs, labels);
}

}  // namespace ringrt::test
