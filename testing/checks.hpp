// Checks of a ringrt result against the interpreter or a host reference, under the rules `ringrt run` counts
// #wrong by (runtime/api/reference.hpp: exact for integers, a bound for float sums of n terms, NaN matches NaN,
// -0.0 matches 0.0 unless compared bit for bit). A check returns a report (ResultCheck) that a test asserts:
//
//   ringrt::Tensor r = x.sum({0});                    // lazy: the check plans and realizes it
//   RINGRT_CHECK_RESULT(ringrt::testing::check_result(r, ringrt::testing::reduction_expected(inputs,
//   ringrt::ReduceOp::sum),
//                                                     "allreduce"));
//
// and whose failure message names the collective, its algorithm, the dtype, each device with a wrong element,
// the first wrong index there with its value and the expected value, then the schedule. Part of
// <ringrt/testing.hpp>.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <ringrt/core/host_buffer.hpp>
#include <ringrt/runtime/api/reference.hpp>
#include <ringrt/runtime/api/tensor.hpp>
#include <ringrt/testing/collectives.hpp>
#include <string>
#include <utility>
#include <vector>

namespace ringrt::testing {

// What a checked result is, for the failure message.
struct ResultInfo {
  std::string collective;  // the caller's name for it ("allreduce"); "result" when none was given
  std::string algorithm;   // Tensor::algorithms() joined with '+' ("ring", "naive+ring"); "none" without a collective
  std::string dtype;       // "float32"
  std::string schedule;    // Schedule::to_string() of what realizing it runs; "" for a result realized before
};

// result's ResultInfo: its algorithms and its schedule as planned now (call it before realizing the result: a
// realized tensor has no schedule left). Throws what Tensor::schedule throws (ShapeError for impossible sharding).
inline ResultInfo describe(const Tensor& result, const std::string& collective = "") {
  std::vector<std::string> algos = result.algorithms();
  return {collective.empty() ? "result" : collective, algos.empty() ? "none" : fmt::format("{}", fmt::join(algos, "+")),
          std::string(dtype_name(result.dtype())), result.schedule().to_string()};
}

// One device's values against its reference.
struct DeviceCheck {
  std::string device;     // "CPU:3"
  Comparison comparison;  // runtime/api/reference.hpp
};

// The report of one check: every device of this process that holds a value of the result.
struct ResultCheck {
  ResultInfo info;
  std::vector<DeviceCheck> devices;
  std::string problem;  // "" or why the values could not be matched with the references (a device without one)

  int64_t wrong() const {
    int64_t n = 0;
    for (const DeviceCheck& d : devices) n += d.comparison.wrong;
    return n;
  }
  int64_t compared() const {
    int64_t n = 0;
    for (const DeviceCheck& d : devices) n += d.comparison.compared;
    return n;
  }
  bool ok() const { return problem.empty() && wrong() == 0; }

  // "" when ok(); else, e.g.
  //   allreduce (ring) float32: 1 of 1028 elements wrong, on 1 of 4 devices
  //     CPU:3: 1 of 257 wrong, the first at index 7: got 3.5, expected 2.25 (within 1.1920928955078125e-06)
  //   schedule:
  //     ...
  std::string message() const {
    if (ok()) return "";
    size_t bad = static_cast<size_t>(
        std::count_if(devices.begin(), devices.end(), [](const DeviceCheck& d) { return !d.comparison.ok(); }));
    std::string out = fmt::format("{} ({}) {}: {} of {} elements wrong, on {} of {} devices", info.collective,
                                  info.algorithm, info.dtype, wrong(), compared(), bad, devices.size());
    if (!problem.empty()) out += "; " + problem;
    for (const DeviceCheck& d : devices) {
      const Comparison& c = d.comparison;
      if (c.ok()) continue;
      out += fmt::format("\n  {}: {} of {} wrong", d.device, c.wrong, c.compared);
      if (!c.shape_problem.empty()) out += ": " + c.shape_problem;
      if (const auto& m = c.first)
        out += fmt::format(", the first at index {}: got {}, expected {}{}", m->index, m->got, m->expected,
                           m->tolerance > 0 ? fmt::format(" (within {})", m->tolerance) : std::string());
    }
    std::string listing = info.schedule.empty() ? "  (none: the result was realized before the check)\n" : "";
    for (size_t at = 0; at < info.schedule.size();) {  // indented by two
      size_t end = std::min(info.schedule.find('\n', at), info.schedule.size());
      listing += "  " + info.schedule.substr(at, end - at) + "\n";
      at = end + 1;
    }
    return out + "\nschedule:\n" + listing;
  }
};

// Compares the devices' values `got` ((device, values) pairs, as Tensor::local_host_shards gives them) with
// `expected`: one Reference per device of `order` (the result's devices, Tensor::devices()), or one for every
// device. A device whose values have another element count or dtype than its reference counts every element.
inline ResultCheck check_values(const std::vector<std::pair<std::string, HostBuffer>>& got,
                                const std::vector<std::string>& order, const std::vector<Reference>& expected,
                                ResultInfo info) {
  ResultCheck out{std::move(info), {}, ""};
  if (expected.size() != 1 && expected.size() != order.size()) {
    out.problem =
        fmt::format("{} references for {} devices (one per device, or one for all)", expected.size(), order.size());
    return out;
  }
  for (const auto& [device, values] : got) {
    size_t at = static_cast<size_t>(std::find(order.begin(), order.end(), device) - order.begin());
    if (at == order.size() && expected.size() != 1) {
      out.problem = "values of " + device + ", which is not one of the result's devices";
      continue;
    }
    out.devices.push_back({device, compare(expected[expected.size() == 1 ? 0 : at], values)});
  }
  return out;
}

// Checks `result` (best lazy: its schedule goes into the report) on each of this process's devices against
// `expected` (one Reference per device of Tensor::devices(), or one for all): realizes it and reads every local
// device's value (Tensor::local_host_shards; under mpirun this rank's devices, the realize collective as ever).
// `collective` names it in the message. Throws what planning and realizing throw.
inline ResultCheck check_result(const Tensor& result, const std::vector<Reference>& expected,
                                const std::string& collective = "") {
  ResultInfo info = describe(result, collective);
  return check_values(result.local_host_shards(), result.devices(), expected, std::move(info));
}

// The interpreter's value of `result` on each of its devices (Tensor::interpret_shards: the lowered graph
// evaluated on the host, with the settings in force), compared by value, or byte for byte with bitwise. Call it
// on the lazy result, before realizing it.
inline std::vector<Reference> interpreter_expected(const Tensor& result, bool bitwise = false) {
  std::vector<Reference> out;
  for (HostBuffer& b : result.interpret_shards()) out.push_back(exact_reference(std::move(b), bitwise));
  return out;
}
// The interpreter's values as (device, values) pairs, for check_values: what the lowering computes, nothing run.
inline std::vector<std::pair<std::string, HostBuffer>> interpreter_values(const Tensor& result) {
  std::vector<std::pair<std::string, HostBuffer>> out;
  std::vector<std::string> devices = result.devices();
  std::vector<HostBuffer> values = result.interpret_shards();
  for (size_t d = 0; d < values.size() && d < devices.size(); ++d) out.emplace_back(devices[d], std::move(values[d]));
  return out;
}

// The expected value of a reduction with op over the devices' local values `inputs` (all of one shape and
// dtype), the same on every device: what an allreduce of them gives.
inline std::vector<Reference> reduction_expected(const std::vector<HostBuffer>& inputs, ReduceOp op) {
  return collective_expected("allreduce", inputs, op, 0);
}

// check_result against interpreter_expected(result, bitwise): a lazy result run on the devices against the
// lowered graph on the host.
inline ResultCheck check_with_interpreter(const Tensor& result, const std::string& collective = "",
                                          bool bitwise = false) {
  std::vector<Reference> expected = interpreter_expected(result, bitwise);
  return check_result(result, expected, collective);
}

// Element i of got and want (same dtype) match bit for bit, or are NaN both: the stricter comparison of a kernel
// with the interpreter (Reference::bitwise, one element).
inline bool same_element(const HostBuffer& got, const HostBuffer& want, int64_t i) {
  size_t size = static_cast<size_t>(itemsize(got.dtype)), at = static_cast<size_t>(i) * size;
  if (std::memcmp(got.bytes.data() + at, want.bytes.data() + at, size) == 0) return true;
  return is_float(got.dtype) && std::isnan(got.get(i)) && std::isnan(want.get(i));
}

// A BOOST_CHECK_EXCEPTION predicate: true when e.what() contains every part (the op, the shapes, the axis,
// ...); prints the message when it does not.
inline auto message_has(std::vector<std::string> parts) {
  return [parts = std::move(parts)](const std::exception& e) {
    std::string what = e.what();
    bool ok = true;
    for (const auto& p : parts) {
      if (what.find(p) == std::string::npos) {
        BOOST_TEST_MESSAGE("error message '" << what << "' does not contain '" << p << "'");
        ok = false;
      }
    }
    if (!ok) BOOST_TEST_MESSAGE("full message: " << what);
    return ok;
  };
}

}  // namespace ringrt::testing

// Boost.Test assertions of a ResultCheck (evaluated once): the case fails (CHECK: goes on; REQUIRE: ends) with
// its message.
#define RINGRT_CHECK_RESULT(...)                                         \
  do {                                                                   \
    const ::ringrt::testing::ResultCheck& ringrt_check_ = (__VA_ARGS__); \
    BOOST_CHECK_MESSAGE(ringrt_check_.ok(), ringrt_check_.message());    \
  } while (0)
#define RINGRT_REQUIRE_RESULT(...)                                       \
  do {                                                                   \
    const ::ringrt::testing::ResultCheck& ringrt_check_ = (__VA_ARGS__); \
    BOOST_REQUIRE_MESSAGE(ringrt_check_.ok(), ringrt_check_.message());  \
  } while (0)
