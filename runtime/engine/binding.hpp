// The binding of a Program's runs (executor.hpp), planned once and reused (internal to runtime/engine).
//
// What memory each item of a run reads and writes depends on the run's buffers only through a few
// facts: which BUFFER ids the caller's lookup has a storage for (and on which devices), the devices
// of the caller's output blocks, which of those blocks are the same memory (an in-place allreduce
// writes its input; a value realized twice shares one output), the devices' can_read_peer (fixed per
// pair of devices), runtime.peer_reads and runtime.peer_writes. A BindingPlan is the binding worked
// out once for those facts on symbolic pointers (a slot and a byte offset; the slots are the output and
// input blocks and the run's fresh blocks): for every item whether it is a peer read or a peer write,
// and the pointers of its launches or its copy. A run gathers its slots, checks the facts against the
// plan's (BindingPlan::matches), and only substitutes the real pointers; when a fact differs the plan
// is built again.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "codegen/kernel.hpp"
#include "runtime/engine/executor.hpp"

namespace ringrt {

// A fused collective item's (rewrite/collective.hpp): its combine kernels, compiled for each device, and
// its barrier with the index of the next call's first barrier (changed under collective_submit_mutex()).
// A combine step's kernel: its length, whether it stores into every device's output (twoshot with
// push), whether it is the ring's two-operand combine. An empty step has none.
using CombineKey = std::tuple<int64_t, bool, bool>;
CombineKey combine_key(const FusedStep& s);

struct PreparedCollective {
  CollectiveArg arg;
  int64_t ndev = 0, numel = 0;
  DType dtype = DType::float32;
  // each device's steps (fused_steps with push: the binding requires peer access between every pair), out
  // of place [0] and in place [1], worked out once
  std::array<std::vector<std::vector<FusedStep>>, 2> steps;
  // a combine step's kernel by its key (combine_key)
  std::map<CombineKey, codegen::Kernel> kernels;
  std::unordered_map<Device*, std::map<CombineKey, std::shared_ptr<CompiledKernel>>> compiled;
  std::shared_ptr<CollectiveBarrier> barrier;
  uint64_t next_barrier = 0;
  uint64_t next_signal = 0;  // each device's signals in the earlier calls (ring_fused)
  std::vector<int> ranks;    // mpi: the tuple's ranks in tuple order (the communicator's; Cluster::collective)
};

struct Program::PreparedKernel {
  codegen::Kernel kernel;
  std::vector<size_t> input_reads;  // kernel input i reads item.reads[input_reads[i]]
  std::unordered_map<Device*, std::shared_ptr<CompiledKernel>> compiled;
  // Peer writes (runtime.peer_writes): the copy items of MemoryPlan::peer_writes whose destination
  // the kernel's device may write, and the kernel with one peer output per copy, compiled beside it.
  std::vector<size_t> peer_copies;
  std::shared_ptr<CompiledKernel> peer_compiled;   // null without peer copies
  std::shared_ptr<PreparedCollective> collective;  // a fused collective item's; null for a kernel item
};

// An argument word of a run: slot `tag` (an output or input block: its index among the run's fixed
// slots; a fresh block: kTempTag + its index) plus `offset` bytes; or run-time scalar `tag -
// kScalarTag` (the program's parameter, codegen::KernelScalar), whose word is the run's value.
struct SymPtr {
  static constexpr uint32_t kTempTag = uint32_t{1} << 22;
  static constexpr uint32_t kScalarTag = uint32_t{1} << 30;
  uint32_t tag = 0;
  uint64_t offset = 0;
  bool temp() const { return tag >= kTempTag && tag < kScalarTag; }
};

// The run's real memory the symbolic pointers stand for.
struct RunSlots {
  std::vector<void*> fixed;      // outputs' blocks (root by root), then the looked-up inputs' blocks
  std::vector<Device*> devices;  // per fixed slot
  std::vector<std::shared_ptr<DeviceStorage>> held;  // the inputs' storages, held for the run
  std::vector<Block> temps;       // fresh blocks: BindingPlan::temps' entries, device by device (tag order)
  std::vector<uint64_t> scalars;  // the run's values of the program's parameters (ExecOptions::scalars)

  void* real(const SymPtr& p) const {
    if (p.tag >= SymPtr::kScalarTag)
      return reinterpret_cast<void*>(static_cast<uintptr_t>(scalars[p.tag - SymPtr::kScalarTag]));
    void* base = p.tag < SymPtr::kTempTag ? fixed[p.tag] : temps[p.tag - SymPtr::kTempTag].ptr;
    return p.offset == 0 ? base : static_cast<char*>(base) + p.offset;
  }
};

// The binding of one set of facts (see the top of this file).
struct Program::BindingPlan {
  struct Launch {  // one device's launch of a kernel item, or of a fused collective item
    Device* device;
    int32_t dnum;
    std::vector<SymPtr> bufs;                // output first, then the kernel's inputs, then its peer outputs;
                                             // a collective: every device's output, every device's input
                                             // (tuple order), then this device's scratch where it needs one
    bool peer = false;                       // the kernel with peer outputs (PreparedKernel::peer_compiled)
    const CompiledKernel* kernel = nullptr;  // what runs: compiled for the device, or peer_compiled
    bool in_place = false;                   // a collective whose output is its input (on some device)
  };
  struct Copy {  // a copy item not patched into a peer read
    Device* from = nullptr;
    Device* to = nullptr;
    SymPtr src, dst;
    size_t bytes = 0;
  };
  struct Temp {  // a run's fresh memory: `bytes` on each of `devices`
    std::vector<Device*> devices;
    size_t bytes;
  };

  // the facts
  bool peer_reads = false;
  bool peer_writes = false;
  std::vector<size_t> out_blocks;     // per root: the caller's blocks
  std::vector<int64_t> input_ids;     // the BUFFER ids looked up, in order
  std::vector<int64_t> input_blocks;  // per looked-up id: its storage's blocks, -1 without one
  std::vector<Device*> devices;       // per fixed slot
  std::vector<uint32_t> same_as;      // per fixed slot: the first fixed slot of the same address

  // the binding
  std::vector<Temp> temps;
  std::vector<char> elided;                   // per item: a copy turned into a peer read or a peer write
  std::vector<std::vector<Launch>> launches;  // per kernel item
  std::vector<Copy> copies;                   // per copy item

  // Gathers the run's fixed slots into `slots` (looking up this plan's input ids, holding their
  // storages); whether the run's facts are this plan's.
  bool matches(const std::vector<std::vector<Block>>& outs, const StorageLookup& inputs, RunSlots& slots) const;
  // Works out the binding of a run's facts (looking up inputs as the binding asks for them) and fills
  // `slots` with the run's fixed slots. Throws InternalError past 2^22 slots or a 1 TiB offset.
  static std::shared_ptr<const BindingPlan> build(const Program& p, const std::vector<std::vector<Block>>& outs,
                                                  const StorageLookup& inputs, RunSlots& slots);
  // Drops the fresh blocks no launch or copy uses (binding.cpp) and renumbers the others' tags.
  void drop_unused_temps();
};

// A fused collective item's combine kernels (one per length its devices' combine steps cover, in place
// or not, storing into its peers or not: the binding decides) and its barrier (collective_run.cpp).
std::shared_ptr<PreparedCollective> prepare_collective(const ScheduleItem& item);
// A timeout's words for a collective item of run `run` across ranks: ": MPI's collective across ranks 0, 1 in
// multi-rank run 7" (its tuple's ranks); "" for one on this rank's devices alone.
std::string mpi_collective_part(const ScheduleItem& item, uint64_t run);

// "item 3 (kernel float32 (4,))", "item 5 (copy CPU:0 -> CPU:1)": an item in errors (executor.cpp).
std::string describe_item(const ScheduleItem& item, size_t i);

// Held while a fused collective's launches are queued (executor.cpp): every device queue gets the
// launches of the process's collectives in one order, so none waits at a barrier for a device whose
// queue holds another collective's launch before this one's.
std::mutex& collective_submit_mutex();

// The fences of a run (executor.cpp): the tails of the work in flight on its input and output storages
// (pending.hpp), each once, but those done.
std::vector<Event> pending_fences(const std::vector<std::shared_ptr<DeviceStorage>>& inputs,
                                  const std::vector<std::shared_ptr<DeviceStorage>>& outputs);

// Per fixed slot, the first slot of the same address (the classes of equal pointers).
std::vector<uint32_t> same_address(const std::vector<void*>& fixed);

}  // namespace ringrt
