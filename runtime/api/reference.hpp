// Expected values of a result and the rules that decide which of its elements are wrong (public). One copy
// of the rules, shared by `ringrt run`, which counts #wrong with them (runtime/cli/experiment.cpp), and by
// the testing library's checks of a user's results (testing/checks.hpp):
//   - integers: exact; the host reference wraps at the type's width as the devices do;
//   - floats compared exactly (a reduction that cannot round, or Reference::tolerance empty): equal values,
//     so -0.0 matches +0.0 (a max over both may return either);
//   - floats within a bound: |got - value| <= tolerance, value the reduction in double; for a sum of n terms
//     the bound is n * epsilon(dtype) * sum |x_i|, for a product n * epsilon * |prod x_i|;
//   - Reference::bitwise: the same bytes (the stricter check of a kernel against the interpreter);
//   - in every form NaN matches any NaN and nothing else (IEEE 754 leaves a NaN's sign and payload to the
//     hardware), and an expected infinity only the same infinity.
// A float reduction cannot round when its terms are integers whose partial results all fit the significand:
// sum |x_i| at most 2^11 (float16), 2^8 (bfloat16), 2^24 (float32), 2^53 (float64); for a product, each term
// a power of two (or 0), or the product of the nonzero |x_i| within that limit. max and min never round.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <ringrt/core/dtype.hpp>
#include <ringrt/core/host_buffer.hpp>
#include <ringrt/core/reduce_op.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace ringrt {

// The expected values of a range of a result (one device's, or part of one), and how far each element may be
// from them.
struct Reference {
  HostBuffer exact;               // the expected values rounded (or wrapped) into the result's dtype
  std::vector<double> value;      // with a tolerance: the expected values in double, before rounding
  std::vector<double> tolerance;  // floats: the allowed |got - value| per element; empty: compare `exact`
  bool bitwise = false;           // compare `exact` byte for byte (NaN still matches any NaN)
};

// The terms of a reduction: device d's element i as it is stored in the dtype (rounded or wrapped), as double.
using StoredValue = std::function<double(int64_t d, int64_t i)>;

// The spacing of 1.0 and the next value of dt: 2^-52 float64, 2^-23 float32, 2^-10 float16, 2^-7
// bfloat16; 0 for integers and bool.
double epsilon(DType dt);

// Elements [first, first + count) of the reduction with op (sum, prod, max, min) over ndev devices' values
// (element k of the reference is element first + k of the reduction): exact where it cannot round (the
// header comment), else within the bound of n terms. Polls for a stop every 65536 elements (core/
// interrupt.hpp; the `ringrt` program's SIGINT): throws Interrupted then; std::invalid_argument for an op
// outside ReduceOp (an int cast to one).
Reference reference_of(DType dt, int64_t ndev, int64_t first, int64_t count, ReduceOp op, const StoredValue& value);

// Elements [first, first + len) of the result of `collective` on device `device` (0 .. ndev-1), for count
// elements per device as rccl-tests counts them (the buffer on each device; reduce_scatter's before the
// scatter, allgather's gathered), from the inputs value(d, i) (device d's local element i). c = count / ndev:
//   allreduce, reduce (the root's):  the reduction with op over the devices
//   reduce_scatter:                  device j's chunk j of the reduction (c elements)
//   allgather:                       device d's c elements, in device order
//   alltoall:                        slot i of device j is device i's chunk j
//   broadcast:                       device root's values
// Throws Interrupted as reference_of; std::invalid_argument for another collective.
Reference collective_reference(std::string_view collective, DType dt, ReduceOp op, int64_t ndev, int64_t root,
                               int64_t count, int64_t device, int64_t first, int64_t len, const StoredValue& value);

// A reference that is the values of `expected` themselves: compared exactly (by value), or byte for byte.
Reference exact_reference(HostBuffer expected, bool bitwise = false);

// The first element that differs from its reference.
struct Mismatch {
  int64_t index = 0;     // its flat (row-major) index in the compared range
  double got = 0;        // its value, as double
  double expected = 0;   // the reference's value (in double where a tolerance applies)
  double tolerance = 0;  // the allowed |got - expected|; 0 where compared exactly
};

// How a range of a result compares with its reference.
struct Comparison {
  int64_t compared = 0;  // elements compared: the reference's
  int64_t wrong = 0;     // elements that differ (all of them when the shapes or dtypes differ)
  std::optional<Mismatch> first;
  std::string shape_problem;  // "" or why nothing could be compared: "got 3 int32 elements, expected 4 float32"
  bool ok() const { return wrong == 0; }
};

// got against ref, element by element, by the rules of the header comment. Throws Interrupted as
// reference_of.
Comparison compare(const Reference& ref, const HostBuffer& got);
// compare(ref, got).wrong: the #wrong of `ringrt run`.
int64_t count_wrong(const Reference& ref, const HostBuffer& got);

}  // namespace ringrt
