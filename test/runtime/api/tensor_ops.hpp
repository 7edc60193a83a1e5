// Helpers of the Tensor op tests (test/runtime/api/test_tensor_ops*.cpp): the allreduce algorithms
// and the (device count, algorithm) samples they rotate through, and deterministic test data.
// Include after <boost/test/unit_test.hpp>.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/settings.hpp"
#include "runtime/api/internal.hpp"
#include "test/support/host_oracle.hpp"

using ringrt::AllreduceSettings;
using ringrt::DType;
using ringrt::HostBuffer;
using ringrt::ScopedSettings;
using ringrt::Shape;
using ringrt::ShapeError;
using ringrt::Tensor;

namespace ops {

using ringrt::test::host::check_close;
using ringrt::test::host::close;

enum class Algo { naive, ring, all2all };
inline std::ostream& operator<<(std::ostream& os, Algo a) {
  return os << (a == Algo::naive ? "naive(RING=0)" : a == Algo::ring ? "ring(RING=2)" : "all2all(ALL2ALL=2)");
}
inline std::string algo_name(Algo a) { return a == Algo::naive ? "naive" : a == Algo::ring ? "ring" : "all2all"; }
inline AllreduceSettings settings_for(Algo a) {
  AllreduceSettings s;
  s.ring = a == Algo::ring ? 2 : 0;
  s.all2all = a == Algo::all2all ? 2 : 0;
  return s;
}

struct Variant {
  int ndev;
  Algo algo;
};
inline std::ostream& operator<<(std::ostream& os, const Variant& v) { return os << v.ndev << " devices, " << v.algo; }
// 1..8 devices, the algorithm rotating with the count (pairwise, as test_regressions does): every
// algorithm meets several device counts without the full product's compile time.
inline std::vector<Variant> variants() {
  std::vector<Variant> out;
  for (int n = 1; n <= 8; ++n) out.push_back({n, static_cast<Algo>(n % 3)});
  return out;
}
inline const std::vector<int> kCounts{1, 2, 3, 4, 5, 6, 7, 8};

inline std::vector<std::string> devs(int n) { return ringrt::cpu_devices(n); }

// Deterministic test data: small, mixed-sign, exact in float32.
inline std::vector<float> data(int64_t n, int salt = 0) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(((i * 7 + salt * 13) % 23) - 11) / 4;
  return v;
}

}  // namespace ops
