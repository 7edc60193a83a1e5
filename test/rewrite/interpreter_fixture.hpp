// The fixture of the interpreter tests (test/rewrite/test_interpreter*.cpp): a graph, the input data
// of its buffers and an interpreter that reads them. Include after <boost/test/unit_test.hpp>.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "rewrite/interpreter.hpp"
#include "test/rewrite/uop_fixture.hpp"  // cpus()

namespace ringrt::test {

inline constexpr double kInf = std::numeric_limits<double>::infinity();
using F = std::vector<double>;
using I = std::vector<int64_t>;

inline int64_t buffer_id(const UOp& b) { return std::get<BufferArg>(b.arg()).id; }

// A graph, the input data of its buffers, and an interpreter that reads them.
struct InterpreterFixture {
  UOpGraph g;
  std::map<int64_t, std::vector<HostBuffer>> data;
  Interpreter interp{[this](int64_t id) -> const std::vector<HostBuffer>* {
    auto it = data.find(id);
    return it == data.end() ? nullptr : &it->second;
  }};

  // A buffer on one device holding values (stored in dtype, so rounded or wrapped), viewed as shape.
  template <class T>
  UOp input(DType dtype, const Shape& shape, const std::vector<T>& values, const std::string& device = "CPU:0") {
    UOp b = new_buffer(DeviceSpec(device), prod(shape), dtype, &g);
    data[buffer_id(b)] = {HostBuffer::from_vector(values, dtype, {prod(shape)})};
    return b.reshape(shape);
  }
  // A buffer on CPU:0..n-1 with one list of values per device.
  template <class T>
  UOp tinput(DType dtype, const Shape& shape, const std::vector<std::vector<T>>& per_device) {
    UOp b = new_buffer(DeviceSpec(cpus(static_cast<int>(per_device.size()))), prod(shape), dtype, &g);
    for (const auto& v : per_device) data[buffer_id(b)].push_back(HostBuffer::from_vector(v, dtype, {prod(shape)}));
    return b.reshape(shape);
  }
  UOp cst(double v, DType dtype = DType::float32) { return const_uop(dtype, v, &g); }

  std::vector<HostBuffer> eval(const UOp& u) { return interp.evaluate(u); }
  // The one value of u (a single-device or device-less node).
  HostBuffer one(const UOp& u) {
    auto v = eval(u);
    BOOST_REQUIRE_EQUAL(v.size(), 1u);
    return v[0];
  }
  F floats(const UOp& u) { return one(u).to_vector<double>(); }
  I ints(const UOp& u) { return one(u).to_vector<int64_t>(); }
  // Per-device values of u.
  std::vector<I> per_device_ints(const UOp& u) {
    std::vector<I> out;
    for (const auto& b : eval(u)) out.push_back(b.to_vector<int64_t>());
    return out;
  }
};

}  // namespace ringrt::test

#define CHECK_VALUES(got, ...) BOOST_TEST((got) == (__VA_ARGS__), boost::test_tools::per_element())
