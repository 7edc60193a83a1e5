// The Tensor front end (public): builds logical graphs and checks shapes; realizing them is the
// engine's (runtime/engine/realize.hpp), which lowers them for the devices and runs them.
// Reference: tinygrad tensor.py (shard, to, movement ops, reductions, assign) and multi.py.
//
// A Tensor is a cheap handle to a lazy value. Shapes are in elements; every method that can fail
// throws ShapeError naming the op, the shapes and the axis (or DeviceError / ConfigError).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ringrt/core/dtype.hpp>
#include <ringrt/core/errors.hpp>
#include <ringrt/core/host_buffer.hpp>
#include <ringrt/core/reduce_op.hpp>
#include <ringrt/core/settings.hpp>
#include <ringrt/core/shape.hpp>
#include <ringrt/runtime/api/devices.hpp>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace ringrt {

class UOp;            // the IR (internal: rewrite/uop.hpp)
class Event;          // completion of device work (runtime/device/device.hpp)
struct TensorState;   // what a Tensor handle points at (internal: runtime/engine/realize.hpp)
struct TensorAccess;  // in-tree access to it (internal: runtime/api/internal.hpp)
namespace detail {
struct KernelIR;  // a Schedule's kernel IR (internal: runtime/api/internal.hpp)
}
namespace codegen {
struct Kernel;  // one kernel's IR (internal: codegen/kernel.hpp)
}

struct CopyItem {
  std::string src, dst;
  int64_t bytes;
  bool operator==(const CopyItem&) const = default;
};

// One kernel item of a schedule; its source: Schedule::source.
struct KernelItem {
  size_t item = 0;     // its index among all items (copies included), as in Schedule::to_string()
  std::string device;  // the device or device tuple it is launched on, e.g. "(CPU:0, CPU:1)"
  std::string name;    // the kernel's name, a hash of its structure: equal names, equal kernels
  int64_t numel = 0;   // the elements one launch writes (on each device of the tuple)
};

// One fused collective item of a schedule (rewrite/collective.hpp): one launch per device of its tuple (mpi: one
// MPI collective per rank).
struct FusedItem {
  size_t item = 0;         // its index among all items, as in Schedule::to_string()
  std::string device;      // the device tuple, e.g. "(CPU:0, CPU:1)"
  std::string collective;  // "allreduce" | "reduce_scatter" | "allgather"
  std::string algorithm;   // "oneshot" | "twoshot" | "ring_fused"; "mpi": MPI's own collective across ranks
  std::string op;          // "ADD" | "MUL" | "MAX" | "MIN"; "none" for an allgather
  int64_t numel = 0;       // elements per device of the collective's input
  bool operator==(const FusedItem&) const = default;
};

// What realize() runs: the lowered graph's device-to-device copies, kernels and fused collectives, in order.
struct Schedule {
  // per ALLREDUCE node, in order: naive|ring|all2all|oneshot|twoshot|ring_fused|hierarchical|hierarchical_rs|mpi; one
  // lowered as a reduce_scatter, allgather or alltoall (rewrite/rules/collectives.cpp) names the form it got, ring,
  // all2all (direct) or hierarchical (over device groups). So is a broadcast from one device of a tuple
  // (Tensor::broadcast of a tensor on the tuple); placing a one-device value on a tuple (shard(), broadcast() of a
  // one-device tensor) is not.
  std::vector<std::string> algorithms;
  std::vector<CopyItem> copy_items;
  int64_t kernel_count = 0;
  std::string listing;
  std::vector<KernelItem> kernel_items;  // every kernel item in order; kernel_items.size() == kernel_count
  std::vector<FusedItem> fused_items;    // every fused collective item in order
  std::vector<CopyItem> copies() const { return copy_items; }  // device-to-device copies, in order
  int64_t kernels() const { return kernel_count; }             // kernel items (one per launch on a device tuple)
  std::string to_string() const { return listing; }
  // The source of kernel item i (an index into kernel_items) for a target: "cpu" is render_cpp's C++
  // (HostCompiler compiles it), "hip" and "nvidia" are render_hip's HIP C++, one source that hipRTC
  // compiles on AMD and NVRTC on NVIDIA (HiprtcCompiler). Throws ConfigError for another target,
  // std::out_of_range for a bad i.
  std::string source(size_t i, const std::string& target) const;
  // Writes source(i, target) of every kernel item to one file per item in dir, named
  // "<item index, 3 digits>_<kernel name>.<cpp|hip|cu>" (e.g. "004_r_1f0c2d9e8a7b6c5d.hip"); creates dir
  // and its parents, overwrites files of the same name. Returns the paths in kernel_items order.
  // Throws ConfigError for a bad target (before writing anything), IOError for a directory or file that
  // cannot be created or written. Reference: tinygrad's DEBUG=4 source dump (one kernel's source per item).
  std::vector<std::string> emit_sources(const std::string& dir, const std::string& target) const;

 private:
  friend Schedule schedule_of(const UOp& root, bool borrowed);           // builds it (runtime/api/schedule.cpp)
  friend const codegen::Kernel& kernel_of(const Schedule& s, size_t i);  // reads it (runtime/api/internal.hpp)
  std::shared_ptr<const detail::KernelIR> ir_;                           // the kernel IR of kernel_items, in order
};

// What the engine holds now and has done, as counts (never times), for a long-running process to
// watch: a training loop's figures stay flat after its first steps.
struct EngineStats {
  size_t programs_built = 0;           // program cache misses: lowered, planned and compiled
  size_t program_cache_hits = 0;       // realizes that reused a cached program (same buffers or new)
  size_t program_cache_evictions = 0;  // programs dropped, least recently used first
  size_t programs_cached = 0;          // programs in the cache now
  size_t program_cache_capacity = 0;   // its bound: runtime.program_cache (RINGRT_PROGRAM_CACHE)
  size_t graph_nodes = 0;              // graph nodes alive (the graph tensors are built in)
  size_t storages = 0;                 // device buffers alive (one per realized buffer, on 1+ devices)
  size_t tensors = 0;                  // tensor states alive (Tensor handles share them)
  size_t assignments = 0;              // records of run assignments that a live graph still holds
  size_t in_flight = 0;                // asynchronous realizes and host writes not known complete (GPUs)
};

class Tensor {
 public:
  // data (row-major, prod(shape) elements, converted to the dtype of T) on one device.
  template <class T>
  static Tensor from_vector(std::vector<T> data, Shape shape, std::string device = "CPU:0");
  static Tensor from_host(HostBuffer data, std::string device = "CPU:0");
  static Tensor empty(Shape shape, DType dtype = DType::float32, std::string device = "CPU:0");
  static Tensor full(Shape shape, double value, DType dtype = DType::float32, std::string device = "CPU:0");
  // A device-less scalar: it broadcasts onto any device or device tuple it is combined with.
  static Tensor constant(double value, DType dtype = DType::float32);
  // A named run-time scalar, shape (), device-less like constant(): its value is an argument of the
  // kernels that read it, never part of the program, so a new value each step (a learning rate, a step
  // counter, an integer threshold) reuses the compiled program. Plain floating-point numbers other than
  // 0 and 1 are already such arguments (docs/architecture.md "Runtime scalars"); name the ones that
  // must be whatever their value: integers (else structure), values that may be 0 or 1. Reference:
  // tinygrad's Variable(name, ...).bind(value) (DEFINE_VAR). Throws ConfigError for a name that is not
  // a C identifier or an integer dtype's value that is not an integer within its range.
  static Tensor variable(const std::string& name, double value, DType dtype = DType::float32);
  static Tensor arange(int64_t n, DType dtype = DType::float32, std::string device = "CPU:0");

  // Split along axis over devices (each gets shape[axis]/n; ShapeError if uneven), or replicate
  // (axis nullopt). Reference: tensor.py shard. A tensor already on a device tuple is resharded (tinygrad
  // refuses): on the same tuple, replicated -> sharded takes each device's part in place (no copy; of a
  // lazy allreduce, x.sum({0}) of a sharded x, the lowering makes that a reduce-scatter), sharded ->
  // replicated is an allgather (bit for bit) and onto another axis an alltoall (both built as an
  // allreduce of the zero-padded shards, which rewrite/rules/collectives.cpp lowers as such); onto
  // another tuple it is gathered to the new tuple's first device and sharded from there. A lazy sharded
  // value that is not a plain MULTI is realized first.
  Tensor shard(const std::vector<std::string>& devices, std::optional<int> axis) const;
  // Copy to one device; a sharded tensor is gathered (reference: multi.py copy_multi).
  Tensor to(const std::string& device) const;

  Tensor reshape(Shape shape) const;
  Tensor expand(Shape shape) const;
  Tensor permute(std::vector<int> order) const;
  Tensor pad(std::vector<std::pair<int64_t, int64_t>> before_after) const;
  Tensor shrink(std::vector<std::pair<int64_t, int64_t>> begin_end) const;
  Tensor flip(std::vector<int> axes) const;
  // Reductions drop the reduced axes; an empty list reduces over every axis. sum of a bool tensor counts
  // (int32, as tinygrad's sum_acc_dtype); other dtypes keep their own.
  Tensor sum(std::vector<int> axes = {}) const;
  Tensor max(std::vector<int> axes = {}) const;
  Tensor min(std::vector<int> axes = {}) const;
  Tensor prod(std::vector<int> axes = {}) const;
  Tensor reduce(ReduceOp op, std::vector<int> axes) const;
  Tensor cast(DType dtype) const;
  // The tensor in memory of its own layout. Of a realized buffer seen through reshapes and shrinks
  // that leave its elements one contiguous range at one offset on every device, no kernel runs: the
  // realized result is that range of the buffer (tinygrad's BUFFER_VIEW). Unlike tinygrad's, it does
  // not alias the buffer for writes: it stays the value it had when realized (it gets a copy of its
  // own before the buffer is written, or before it is written itself).
  Tensor contiguous() const;
  // Writes value into this tensor in place, or through a shrink (of a shrink ...) of a tensor into
  // that region of it: every device holding part of the region writes that part, no other element
  // changes, and later reads of the tensor and the view see the write. Shapes in elements. Throws
  // ShapeError when the shapes or the shard layouts differ (into a view of a sharded tensor a
  // replicated value on its devices is accepted too), for a shrink on the sharded axis that is not
  // whole shards, and for a write into another movement view; DeviceError when the devices differ.
  // Tensors read before the write keep the old values (a contiguous() that borrowed the memory gets
  // a copy first). Reference: tensor.py assign; multi.py assign_multi (equal axes).
  Tensor& assign(const Tensor& value);

  // ---- persistent tensors written from the host (runtime/api/tensor_write.cpp). A model's
  // parameters or DDP's gradient buckets live in one tensor for the whole run; each step writes new
  // values into that memory in place. The tensor is first realized into memory of its own (a lazy
  // value is computed, a pending assign() runs, a contiguous() that borrowed another buffer gets a
  // copy); then every live tensor still reading the old contents is realized first (a lazy x + 1
  // built before the write keeps the old x) and a contiguous() that borrowed this memory gets a copy.
  // A view (a reshape of it) built before the write and not yet realized is such a reader too: it
  // keeps the old values, as after assign(); one built after sees the new values. No graph node is
  // created and nothing is compiled; blocking (the bytes are in device memory on return). Thread-safe
  // as realize(). A shrink of a tensor (a view written through assign) is refused with ShapeError:
  // write the whole tensor, or assign() into the view. Reference: PyTorch Tensor.copy_ from the host;
  // tinygrad Buffer.copyin.

  // The whole logical tensor's new values: data has this tensor's shape and dtype (elements, row-major).
  // A sharded tensor's devices each get their part along the shard axis, a replicated one every device
  // the whole, a one-device tensor its buffer. ShapeError naming the op and both shapes (and dtypes) on
  // a mismatch or a view; DeviceError for a tensor with no device (a constant).
  Tensor& write(const HostBuffer& data);
  // One host buffer per device, in devices() order, each of the local shape (the logical shape with
  // the shard axis divided by the device count; a replicated or one-device tensor: the whole shape)
  // and this dtype. A replicated tensor may be given different values per device (gradients before
  // their allreduce_in_place, DDP's case): until they agree again each device computes with its own,
  // and host() gathers the first device's. ShapeError for a count, shape or dtype that does not fit
  // (naming the index), or a view; DeviceError for a tensor with no device.
  Tensor& write_shards(const std::vector<HostBuffer>& shards);
  // For a tensor on a device tuple (sharded or replicated): every device's local value becomes the
  // elementwise reduction over all devices' local values with op (ADD sum, MUL prod, MAX, MIN), in the
  // same memory: DDP's allreduce of a persistent gradient bucket. An ASSIGN of the IR's ALLREDUCE of
  // the tensor into itself, lowered by the allreduce rules with the settings in force when realized
  // (naive, ring, all2all, hierarchical, as for reduce() over the shard axis); lazy like assign():
  // realize() (or any read) runs it. On one device (or a one-device tuple) it changes nothing.
  // ShapeError for an op that is not a reduce op, or a view. (Not the switch runtime.allreduce_in_place,
  // which lets any allreduce read its input buffer without a contiguous copy.) Reference: PyTorch
  // dist.all_reduce(tensor, op) (in place); DDP's Reducer allreduces each bucket in place.
  Tensor& allreduce_in_place(ReduceOp op = ReduceOp::sum);

  // ---- collectives (runtime/api/tensor_collectives.cpp): NCCL's set over the devices of a tuple, lazy like
  // every op. A device's "local value" is its shard of a sharded tensor (its copy of a replicated one);
  // n is the tuple's length. Each is lowered by rewrite/rules/collectives.cpp (reduce_to: allreduce.cpp)
  // with the allreduce settings in force when realized (allreduce.ring, allreduce.all2all,
  // allreduce.ring_threshold): ring where the ring applies, else the direct form (naive has no form of its
  // own but for reduce_to); Schedule::algorithms names the one chosen. On a tuple with device groups
  // (allreduce.groups) of one size covering it, reduce_scatter and allgather take their hierarchical form
  // ("hierarchical": reduce_scatter inside each group, then across groups among the devices of one index;
  // allgather the reverse; collectives.cpp gives the bytes); with groups of unequal size, and for alltoall, the
  // hierarchical allreduce with each device keeping its part. A lazy sharded input that is not a plain shard of a
  // buffer (x * 2 of a sharded x) is realized first, as shard() does. Reference: NCCL's collectives (ncclReduceScatter,
  // ncclAllGather, ncclBroadcast, ncclReduce, ncclAllToAll, as rccl-tests run them); PyTorch torch.distributed.

  // Reduce-scatter: the local values (each of the local shape L) reduced elementwise over the devices
  // with op (ADD, MUL, MAX, MIN), cut into n equal parts along axis of L (negative counts from the end);
  // device i gets part i, as NCCL's rank i gets chunk i of the reduced buffer. The result is sharded on
  // axis over the same devices, logical shape L: x of shape (n*k, m) sharded on axis 0 gives (k, m), device
  // i holding rows [i*k/n, (i+1)*k/n) of sum over d of x[d*k : (d+1)*k]. Moves (n-1)/n of L per device
  // (ring and direct), half an allreduce. ShapeError (naming the op, shapes and devices) for a tensor that
  // is not sharded (one device, or replicated), an op that is not a reduce op, an axis out of range, or
  // L[axis] not a multiple of n.
  Tensor reduce_scatter(ReduceOp op = ReduceOp::sum, int axis = 0) const;
  // Allgather: a sharded tensor replicated on the same devices, every device holding the whole logical
  // tensor (shard i in place i along the shard axis, bit for bit: -0.0 stays -0.0); shard(devices(),
  // nullopt). A replicated tensor is returned as it is. DeviceError for a tensor not on a device tuple.
  Tensor allgather() const;
  // Broadcast: the root's value replicated on devices (the root is devices[root]). Of a one-device tensor
  // it must live on devices[root]; of a tensor on a tuple the tuple must be devices and the value is the
  // root's local value (NCCL: the root's send buffer to every rank). The result has the local shape.
  // DeviceError naming the op, root and devices for no, unknown or repeated devices, a root outside
  // [0, devices.size()), a one-device tensor on another device, a tuple other than devices, or a tensor
  // on no device.
  Tensor broadcast(int root, const std::vector<std::string>& devices) const;
  // Reduce: the local values reduced elementwise with op onto devices()[root], a one-device tensor of the
  // local shape (NCCL's ncclReduce to the root). Not named reduce(op, root): reduce(op, {0}) would then
  // pick that overload over reduce(op, axes). ShapeError for an op that is not a reduce op; DeviceError
  // for a tensor not on a device tuple or a root outside [0, n).
  Tensor reduce_to(int root, ReduceOp op = ReduceOp::sum) const;
  // All-to-all: for a tensor sharded on axis s with local length n*c along s, device i's chunk j (c
  // along s) goes to device j's slot i (NCCL's ncclAllToAll: chunk j of rank i's buffer lands at
  // offset i of rank j's); the result has this shape and layout (sharded on s). Each device sends (n-1)/n
  // of its shard. ShapeError for a tensor that is not sharded or a local length along s not a multiple
  // of n.
  Tensor alltoall() const;

  friend Tensor operator+(const Tensor& a, const Tensor& b);
  friend Tensor operator-(const Tensor& a, const Tensor& b);
  friend Tensor operator*(const Tensor& a, const Tensor& b);
  friend Tensor operator/(const Tensor& a, const Tensor& b);
  // With a number: the number is a device-less constant of the tensor's dtype, except that a fraction
  // with an integer tensor is float32 (int32 x * 2.0 is int32, x * 2.5 float32: the dtype follows the
  // value, unlike tinygrad, where any Python float makes it float). A floating-point constant other than
  // 0 and 1 is a kernel argument (a new value reuses the program); an integer constant is structure.
  friend Tensor operator+(const Tensor& a, double b);
  friend Tensor operator-(const Tensor& a, double b);
  friend Tensor operator*(const Tensor& a, double b);
  friend Tensor operator/(const Tensor& a, double b);
  // The number first: lr * g, 1 - x (the same rules).
  friend Tensor operator+(double a, const Tensor& b);
  friend Tensor operator-(double a, const Tensor& b);
  friend Tensor operator*(double a, const Tensor& b);
  friend Tensor operator/(double a, const Tensor& b);
  Tensor maximum(const Tensor& o) const;
  Tensor minimum(const Tensor& o) const;
  Tensor binary(BinaryOp op, const Tensor& o) const;  // numpy broadcasting and dtype promotion

  // Runs the schedule on the devices. On devices that queue asynchronously (GPUs; runtime.async) it
  // returns once the work is enqueued: reading the tensor, writing it, writing a buffer that work still
  // reads, and freeing memory wait for exactly the work they depend on; synchronize() waits for all.
  // The cpu backend returns once the work ran. Throws what lowering, compiling and running throw.
  Tensor& realize();
  // Realizes several tensors with one schedule (one compile of all their kernels).
  static void realize_all(const std::vector<Tensor>& tensors);
  // Waits until the work that computes this tensor's realized value (and every write to its memory)
  // has run; at most runtime.watchdog_s (TimeoutError naming the late item). Rethrows that work's
  // error. Does not realize: for a lazy tensor it waits for nothing.
  const Tensor& synchronize() const;
  template <class T>
  std::vector<T> to_vector() const {
    return host().to_vector<T>();
  }
  HostBuffer host() const;  // realizes and gathers the whole logical tensor to the host
  // The reference interpreter's value of the whole logical tensor, computed from the graph without
  // running kernels (the oracle the runtime is tested against).
  HostBuffer interpret() const;
  // The lowered per-device graph (with the settings in force) evaluated by the reference interpreter:
  // one value per device of the result, in its local shape. The oracle for the lowering rules.
  std::vector<HostBuffer> interpret_shards() const;
  // How many schedules realize() has lowered, planned and compiled in this process (a cache miss
  // count: running the same computation again builds nothing).
  static size_t programs_built();
  // The engine's counts, taken after collecting every graph node no live tensor reaches (the
  // collection is skipped while another thread is inside the Tensor API; the counts then include
  // garbage). Programs are keyed by structure: graphs that differ only in which buffers they read and
  // write share one (reference: tinygrad's schedule cache).
  static EngineStats engine_stats();

  Shape shape() const;
  DType dtype() const;
  std::vector<std::string> devices() const;
  std::optional<int> shard_axis() const;  // the axis a multi-device tensor is split on
  std::vector<Tensor> shards() const;     // per-device values of a multi-device tensor
  // Under mpirun: the shards (per-device values) on this rank's devices, in the tensor's device order,
  // as (device name, value on that device); every shard in one process. shards() and host() read other
  // ranks' devices and so throw DeviceError for a tensor that spans ranks.
  std::vector<std::pair<std::string, Tensor>> local_shards() const;
  // local_shards() read to the host: (device name, its shard in the local shape), read once from the
  // device (local_shards() puts each shard on its device again, and its host() reads it back).
  std::vector<std::pair<std::string, HostBuffer>> local_host_shards() const;
  // local_host_shards() chunk by chunk, for values too large to hold twice: for first = 0,
  // chunk_elements, 2 * chunk_elements, ... (element offsets into a shard's flat, row-major local
  // shape), calls fn(device, first, chunk) for each of this rank's devices in the tensor's device
  // order, chunk holding that shard's elements [first, first + chunk.numel()), chunk_elements of them
  // (the last chunk fewer; no call for a shard without elements). Realizes first. A realized buffer is
  // read straight from device memory a chunk at a time, so the host holds one chunk; any other value
  // (a view, a lazy result) is evaluated whole by the interpreter first, as local_host_shards() does.
  // chunk is reused once fn returns. The read is no snapshot: fn must not write this tensor (assign,
  // write_shards) while it is read. Throws ShapeError for chunk_elements < 1, DeviceError for a
  // placeholder, and what realize() and fn throw (reading stops there).
  using ShardChunkFn = std::function<void(const std::string& device, int64_t first, const HostBuffer& chunk)>;
  void read_local_shards(int64_t chunk_elements, const ShardChunkFn& fn) const;
  Schedule schedule() const;  // what realize() would run (nothing for a view of a buffer)
  // The algorithm of each allreduce realize() would run, in order (naive|ring|all2all|hierarchical|
  // hierarchical_rs), as
  // lowering with the settings in force chooses them; no planning or compiling (cheaper than schedule()).
  // Throws ShapeError for impossible sharding.
  std::vector<std::string> algorithms() const;
  // The lowered per-device graph with these settings as Graphviz DOT text (one node per UOp, edges from
  // sources). Throws ShapeError for impossible sharding. Reference: tinygrad's VIZ graph.
  std::string to_dot(const AllreduceSettings& settings) const;

  // ---- more ops (runtime/api/tensor_ops.cpp). Reference: tinygrad tensor.py, same names and semantics
  // unless a comment says otherwise; on sharded tensors the multi rules apply (rewrite/rules/multi.cpp).

  // A multi-device tensor from per-device host data: data[i] (all of one dtype and shape, the local
  // shape) goes to devices[i]; the logical tensor is their concatenation along axis, or (nullopt)
  // replicated, when every data[i] must be equal. The inverse of shards(). ShapeError for a count,
  // dtype, shape or axis that does not fit (or unequal replicas); DeviceError for unknown or repeated
  // devices.
  static Tensor from_shards(std::vector<HostBuffer> data, const std::vector<std::string>& devices,
                            std::optional<int> axis);
  // Uniform in [0, 1): element i (row-major) is a function of (seed, i) alone: threefry2x32-20
  // (Random123; tinygrad's Tensor.rand uses threefry on counters too) of the counter i keyed by seed,
  // its top bits scaled by 2^-p for the dtype's precision p (24 float32, 53 float64, 11 float16, 8
  // bfloat16), so every value is exact and never 1. Generated on the host and uploaded (the values
  // match tinygrad's in distribution, not bit for bit). ShapeError for a non-float dtype.
  static Tensor rand(Shape shape, uint64_t seed, DType dtype = DType::float32, std::string device = "CPU:0");
  // The same logical values, each device generating (on the host) and receiving only its own shard:
  // equal bit for bit to rand(shape, seed, dtype).shard(devices, axis) for any number of devices.
  static Tensor rand(Shape shape, uint64_t seed, const std::vector<std::string>& devices, std::optional<int> axis,
                     DType dtype = DType::float32);
  // Standard normal: Box-Muller over the two words of element i's threefry block, in double, rounded
  // to dtype (reference: tensor.py randn, which draws its two uniforms from two halves of a rand).
  static Tensor randn(Shape shape, uint64_t seed, DType dtype = DType::float32, std::string device = "CPU:0");

  // A tensor for planning only: shape (logical, in elements) and dtype split on axis over devices (or
  // replicated: nullopt), with no memory and no values. Its graph is that of a realized input of that
  // layout (a buffer on the device tuple), so schedule(), algorithms() and to_dot() of anything built
  // on it give what realize() would run on real data of that layout, with nothing allocated, written or
  // compiled. Realizing or reading it, or anything built on it (realize, host, shards, interpret,
  // write, assign), throws DeviceError. ShapeError when axis does not split shape evenly; DeviceError
  // for no, unknown or repeated devices. (tinygrad plans from shapes the same way: its schedule never
  // looks at buffer contents.)
  static Tensor placeholder(Shape shape, DType dtype, const std::vector<std::string>& devices, std::optional<int> axis);

  // Same shape, dtype, devices and shard axis as this; full_like's value is lazy (no memory until
  // realized), empty_like allocates uninitialized memory on every device now. Reference: tensor.py
  // full_like, empty (ringrt keeps a sharded argument's layout).
  Tensor empty_like() const;
  Tensor full_like(double value) const;
  Tensor zeros_like() const { return full_like(0.0); }
  Tensor ones_like() const { return full_like(1.0); }

  // this (the condition, cast to bool) ? x : y, the three broadcast like binary(); x and y promote to one
  // dtype (a scalar takes the tensor's dtype, as binary's scalars do). Reference: tensor.py where.
  Tensor where(const Tensor& x, const Tensor& y) const;
  Tensor where(const Tensor& x, double y) const;
  Tensor where(double x, const Tensor& y) const;

  // Elementwise math. neg: -x (bool: logical not); abs: x < 0 ? -x : x (integers wrap at their minimum,
  // -0.0 stays -0.0 as in tinygrad's x * sign(x)). The rest compute in a float dtype (integers and bool
  // are cast to float32 first, tensor.py least_upper_float): exp(x) = exp2(x * log2(e)), log(x) =
  // log2(x) * ln(2) (tinygrad's decompositions), sqrt, reciprocal (1/x), exp2, log2, sin.
  Tensor neg() const;
  Tensor abs() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor exp2() const;
  Tensor log2() const;
  Tensor sqrt() const;
  Tensor reciprocal() const;
  Tensor sin() const;
  friend Tensor operator-(const Tensor& a) { return a.neg(); }

  // The same bits as another dtype of the same item size (float32 <-> int32/uint32, float16 <-> int16,
  // ...). ShapeError when the sizes differ (tinygrad also reshapes the last axis then; ringrt does not)
  // or either side is bool. Reference: tensor.py bitcast.
  Tensor bitcast(DType dtype) const;

  // Mean over axes (empty: all), the axes dropped: sum in the accumulation dtype (tinygrad's
  // sum_acc_dtype: float32 for 16-bit floats, int32/int64 for integers, uint32 for unsigned) divided by
  // the count, then cast to this dtype if it is a float, else float32. Over the shard axis the sum is an
  // allreduce. Reference: tensor.py mean.
  Tensor mean(std::vector<int> axes = {}) const;

  // Matrix product over this's last axis and w's second-to-last (its only axis when 1-D); leading axes
  // broadcast. Built as tinygrad's dot: reshape + transpose + broadcast multiply + sum over the
  // contracted axis (in sum_acc_dtype, then cast to the promoted dtype). With both operands sharded on
  // the contracted axis (x on its last axis, w on axis -2: a tensor-parallel linear layer) it lowers to a
  // local matmul and one allreduce. ShapeError for 0-D operands or contracted lengths that differ.
  // Reference: tensor.py dot, matmul.
  Tensor dot(const Tensor& w) const;
  Tensor matmul(const Tensor& w) const { return dot(w); }

  // Concatenation along dim (negative counts from the end): shapes equal except on dim, dtypes promote.
  // Each piece is padded into place and selected by a mask (where), not added as tinygrad does, so -0.0
  // and NaN payloads survive. ShapeError for no tensors, ranks or shapes that differ, or dim the shard
  // axis of a sharded input (as tinygrad refuses to pad the shard axis; reshard first).
  // Reference: tensor.py cat.
  static Tensor cat(const std::vector<Tensor>& tensors, int dim = 0);
  // A new axis at dim (in [-rank-1, rank]) holding each tensor: unsqueeze and cat. ShapeError for no
  // tensors or shapes that differ. Reference: tensor.py stack.
  static Tensor stack(const std::vector<Tensor>& tensors, int dim = 0);

 private:
  friend struct TensorAccess;
  explicit Tensor(std::shared_ptr<TensorState> s) : s_(std::move(s)) {}
  const UOp& uop() const;
  // shards() and local_shards(): (device, value there) of every device, or of this rank's only.
  std::vector<std::pair<std::string, Tensor>> device_values(bool local_only) const;
  std::vector<std::pair<std::string, HostBuffer>> host_values(bool local_only) const;
  Tensor derive(UOp u) const;
  Tensor& assign_view(const Tensor& value);
  // u, keeping alive the storages of this and of every tensor in also.
  Tensor derive(UOp u, const std::vector<Tensor>& also) const;
  // A buffer on every device of devices holding prod(local) elements each, filled from data (one per
  // device, flat or shaped; empty: uninitialized), viewed as local and wrapped in MULTI(axis) when axis.
  static Tensor alloc_multi(const Shape& local, DType dtype, const std::vector<std::string>& devices,
                            std::optional<int> axis, std::vector<HostBuffer> data);
  // This tensor as per-device values for the collective op: a realized copy when it is a lazy sharded
  // value that is not a plain MULTI; DeviceError when it is not on a device tuple (tensor_collectives.cpp).
  Tensor on_tuple(const char* op) const;
  // shard() of a tensor already on a device tuple (tensor_ops.cpp).
  Tensor reshard(const std::vector<std::string>& devices, std::optional<int> axis) const;
  std::shared_ptr<TensorState> s_;
};

template <class T>
Tensor Tensor::from_vector(std::vector<T> data, Shape shape, std::string device) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int64_t> ||
                    std::is_same_v<T, int32_t> || std::is_same_v<T, int16_t> || std::is_same_v<T, int8_t> ||
                    std::is_same_v<T, uint32_t> || std::is_same_v<T, uint8_t> || std::is_same_v<T, bool>,
                "from_vector takes float, double, int64_t, int32_t, int16_t, int8_t, uint32_t, uint8_t or bool");
  DType dt = std::is_same_v<T, bool> ? DType::bool_ : native_dtype<T>();
  if (static_cast<int64_t>(data.size()) != ringrt::prod(shape))
    throw ShapeError("from_vector: " + std::to_string(data.size()) + " values for shape " + shape_str(shape));
  return from_host(HostBuffer::from_vector(data, dt, std::move(shape)), std::move(device));
}

// Times work queued on devices the way nccl-tests does: a marker on each device's queue at start and at
// stop, read on the device's own clock (GPU timing events on the hip backend, the host's on the cpu
// backend), so that iterations enqueued back to back (realize() returns at once on GPUs) are timed by
// the devices, not by the host's waits. Not thread-safe; one clock per timed loop.
class DeviceClock {
 public:
  // Start markers on the named devices (this process's; "HIP:0", "CPU:1"). Throws DeviceError for an
  // unknown device.
  explicit DeviceClock(const std::vector<std::string>& devices);
  ~DeviceClock();
  DeviceClock(const DeviceClock&) = delete;
  DeviceClock& operator=(const DeviceClock&) = delete;
  // End markers on the same devices; waits for them (at most runtime.watchdog_s: TimeoutError) and
  // returns the seconds between each device's start and end markers, the largest over the devices.
  // Throws the devices' errors. Each call puts new end markers: a second call returns the seconds from
  // the same start markers to its own (the time so far, not the time since the last call).
  double stop();

 private:
  struct Marks;  // the start markers (runtime/api/tensor.cpp)
  std::unique_ptr<Marks> marks_;
};

// Waits until every realize and host write of this process has run on its devices (on GPUs they run
// asynchronously: realize() returns once the work is enqueued); at most runtime.watchdog_s for each
// (TimeoutError naming the late item). Throws the first error of that work (each error once).
void synchronize();

}  // namespace ringrt
