// The fixture of the UOp tests (test/rewrite/test_uop*.cpp): a fresh graph per test with builders for
// the usual leaves. Include after <boost/test/unit_test.hpp>.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "rewrite/uop.hpp"

namespace ringrt::test {

inline DeviceTuple cpus(int n) {
  DeviceTuple out;
  for (int i = 0; i < n; ++i) out.push_back("CPU:" + std::to_string(i));
  return out;
}

// A fresh graph per test, with builders for the usual leaves.
struct UOpFixture {
  UOpGraph g;
  UOp buf(const Shape& shape, DType dtype = DType::float32, const std::string& device = "CPU:0") {
    return new_buffer(DeviceSpec(device), prod(shape), dtype, &g).reshape(shape);
  }
  UOp tbuf(const Shape& shape, int ndev, DType dtype = DType::float32) {  // on CPU:0..ndev-1
    return new_buffer(DeviceSpec(cpus(ndev)), prod(shape), dtype, &g).reshape(shape);
  }
  UOp cst(double v, DType dtype = DType::float32) { return const_uop(dtype, v, &g); }
};

// The shard axis, -1 for none (std::optional does not print in Boost.Test messages).
inline int axis_of(const UOp& u) { return u.axis().value_or(-1); }

inline std::string dot_of(const UOpGraph& g, const std::vector<UOp>& roots) {
  std::ostringstream os;
  g.write_dot(os, roots);
  return os.str();
}

}  // namespace ringrt::test
