// The kernel IR: what one generated kernel computes, independent of the target it is rendered for
// (reference: tinygrad codegen, the linearized UOps a renderer consumes). Both renderers (plain C++
// for the CPU, HIP) read this one IR, so they cannot drift apart.
//
// Design. A kernel writes `numel` elements of one output buffer, element gid = the value at
// multi-index unravel(gid, shape). The body is a block of SSA statements, each defining value v<id>
// stored in its dtype's bytes (float16/bfloat16 as 16-bit patterns, bool as a byte): constants, masked
// loads through views, the device number, ALU ops, casts, masked selects (a PAD above a computed value)
// and reductions, which own a nested block run once per reduced element in row-major order. The
// semantics are rewrite/interpreter.cpp's, statement by statement: 16-bit floats round after every
// op, integers wrap, IDIV/MOD of 0 give 0, MAX/MIN keep a NaN first operand, reductions round the
// accumulator after every step.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "codegen/symbolic.hpp"
#include "rewrite/uop.hpp"

namespace ringrt::codegen {

enum class StmtKind : uint8_t { Const, Load, DeviceNum, Alu, Cast, Bitcast, Select, Reduce, Scalar };

struct LoopVar {  // a reduce loop counter `name` over [0, extent)
  std::string name;
  int64_t extent;
};

struct Stmt {
  StmtKind kind = StmtKind::Const;
  int id = -1;                   // defines value v<id>
  DType dtype = DType::void_;    // the value's dtype
  Ops op = Ops::SINK;            // Alu: the op; Reduce: ADD, MUL, MAX or MIN
  std::vector<int> src{};        // Alu: operands; Cast, Bitcast, Select: the source value
  uint64_t bits = 0;             // Const: the value's bytes, little-endian; Reduce: the identity's
  int input = -1;                // Load: index into Kernel::inputs; Scalar: index into Kernel::scalars
  Expr index{};                  // Load: the element read
  Mask valid{};                  // Load, Select: the value is 0 where the mask is false
  std::vector<LoopVar> loops{};  // Reduce: outermost first
  std::vector<Stmt> body{};      // Reduce: runs once per reduced element
  int result = -1;               // Reduce: the body's value folded into the accumulator
};

struct KernelInput {  // one BUFFER the kernel reads
  int64_t buffer_id;
  DType dtype;
  int64_t numel;
};

// A run-time scalar the kernel reads (rewrite/uop.hpp ScalarArg): parameter `slot` of the program,
// passed as one 64-bit argument word holding the value's stored bytes (little-endian, zero-extended).
struct KernelScalar {
  int64_t slot;
  DType dtype;
  bool operator==(const KernelScalar&) const = default;
};

struct Kernel {
  std::string name;                 // a C identifier
  DType dtype;                      // of the output buffer
  Shape shape;                      // of the value computed; the output holds prod(shape) elements, row-major
  int64_t numel = 0;                // prod(shape): the element range [0, numel) a launch covers
  std::vector<KernelInput> inputs;  // first appearance in UOpGraph::toposort of the ast
  int64_t dnum_max = 0;             // the kernel is launched with _device_num in [0, dnum_max]
  std::vector<Stmt> body;
  int result = -1;  // the value stored to out[gid]
  // Peer outputs: n more buffers of the output's dtype and size, after the inputs (cpu: bufs[1 +
  // inputs.size() + j]; hip: parameters peer0..peer<n-1>), each stored the same value at the same gid.
  // The executor sets it (with_peer_outputs) when a kernel's result is copied whole to peers' memory
  // that the kernel's device may write: the kernel writes each copy itself (runtime.peer_writes).
  int peer_outputs = 0;
  // Run-time scalars, first appearance first: argument words after the peer outputs (cpu: bufs[1 +
  // inputs.size() + peer_outputs + j]; hip: parameters sc0..sc<n-1>). Their values are not code: a
  // kernel run with other values is the same compiled function.
  std::vector<KernelScalar> scalars;

  bool has_reduce() const;
  // The constant c when every load of input `input` reads element gid + c (outside any reduce loop;
  // masks allowed), so that output element gid aliasing that input element is read before it is
  // written, by the same thread; nothing otherwise (or when the kernel never reads it).
  std::optional<int64_t> gid_offset(int input) const;
  // The elements of input `input` its loads may read, [first, last] (bounds of the index expressions
  // over every variable's range: masked-off reads included), or nothing when the kernel never reads it.
  std::optional<std::pair<int64_t, int64_t>> read_bounds(int input) const;
  // Whether every input the kernel reads is read only at the output's element (gid_offset 0: masks
  // allowed, no load inside a reduce loop) and holds numel elements or more, so that the inputs' elements
  // [gid, gid + w) are in bounds and computed with the output's: the HIP renderer's vector path (and
  // nothing else) relies on it.
  bool reads_at_gid() const;
  // Whether every index the kernel computes is exact in 32-bit int arithmetic: numel and the reduce
  // extents below 2^31, and Expr::magnitude of every load's index and every mask within INT32_MAX. The
  // HIP renderer then emits 32-bit indices.
  bool fits_int32() const;
  // A canonical multi-line listing of the IR (the name is left out); equal for equal structure.
  std::string dump() const;
  // What the renderers emit, as text: the output and input dtypes, the body and the result, without
  // the launch facts (shape, numel, input sizes, dnum_max), which are kernel arguments (numel: the
  // cpu function's [begin, end), hip's n) or not needed. Equal code renders to equal source for
  // every target, so kernels of equal code share a name and one compiled function: an elementwise
  // kernel over contiguous buffers is one kernel for every size. Sizes that index math folds in
  // (strides, chunk offsets, pad bounds) stay literals in the body, so they are part of the code.
  std::string code() const;
};

// Lowers a kernel AST: the UOp subgraph rooted at the value the kernel computes (shape S; see
// docs/architecture.md "Code generation"). Leaves are BUFFERs seen through movement ops (RESHAPE EXPAND PAD
// SHRINK PERMUTE FLIP, PAD/SHRINK bounds c + k*_device_num), CONSTs (a DEVICE source is ignored; a
// program parameter, ScalarArg slot >= 0, is a Kernel::scalars argument, a named variable's value a literal) and
// DEFINE_VAR _device_num; between them ALU ops, CAST, BITCAST, REDUCE_AXIS and movement ops above
// computed values, which are pushed into the index (views compose; nothing is realized).
// `name`: the kernel's C name; empty derives "E_<hash>" (elementwise) or "r_<hash>" (with a reduction)
// from Kernel::code(). _device_num ranges over [0, n-1] where n is the largest device tuple or
// DEFINE_VAR range in the ast (1 when there is none).
// Throws InternalError for an op or an op/dtype pair the interpreter has no semantics for (e.g. a
// CONTIGUOUS inside the ast, SQRT of an integer) and ConfigError for a name that is not a C identifier.
Kernel lower_kernel(const UOp& ast, std::string name = {});

// k with n peer outputs (Kernel::peer_outputs), named <k.name>_p<n>; n = 0 returns k unchanged.
Kernel with_peer_outputs(Kernel k, int n);

// A stable 64-bit FNV-1a hash, as 16 hex digits (kernel names, cache keys).
std::string stable_hash_hex(std::string_view text);

}  // namespace ringrt::codegen
