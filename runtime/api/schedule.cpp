// A Schedule (runtime/api/tensor.hpp): what realize() would run, built from the same lowering, plan and kernel
// IR the engine runs (schedule_of), and its kernel sources (Schedule::source, Schedule::emit_sources).
#include "rewrite/plan/schedule.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unordered_set>

#include "codegen/item_kernel.hpp"
#include "codegen/render.hpp"
#include "core/files.hpp"
#include "rewrite/canonical.hpp"
#include "rewrite/collective.hpp"
#include "rewrite/lower/lower.hpp"
#include "rewrite/plan/memory_plan.hpp"
#include "rewrite/rules/multi.hpp"
#include "runtime/api/internal.hpp"
#include "runtime/api/tensor.hpp"
#include "runtime/engine/collect.hpp"

namespace ringrt {

namespace {

// The file suffix of a target; ConfigError for an unknown one. "hip" and "nvidia" are one source
// (render_hip): hipRTC compiles it on AMD, NVRTC on NVIDIA.
const char* suffix_of(const std::string& target) {
  if (target == "cpu") return ".cpp";
  if (target == "hip") return ".hip";
  if (target == "nvidia") return ".cu";
  throw ConfigError(fmt::format("kernel source target '{}': expected 'hip', 'nvidia' or 'cpu'", target));
}

}  // namespace

namespace {

// The kernel items a run skips: a root's copy of a buffer that the lowering made (MemoryPlan::forwarded),
// which a run binds to the root's memory instead (runtime/engine/binding.cpp).
std::vector<char> skipped_items(const ItemPlan& plan, const std::vector<UOp>& roots, const UOp& root) {
  std::vector<char> out(plan.items.size(), 0);
  MemoryPlan memory(plan, roots);
  std::unordered_set<const detail::Node*> inputs;
  for (const UOp& u : root.graph().toposort({root}))
    if (u.op() == Ops::BUFFER) inputs.insert(u.node());
  for (size_t i = 0; i < plan.items.size(); ++i)
    if (const detail::Node* buffer = memory.forwarded(i)) out[i] = !inputs.count(buffer);
  return out;
}

}  // namespace

Schedule schedule_of(const UOp& root, bool borrowed) {
  GraphUse use;
  // a view of a realized buffer, or a contiguous() that will be one: nothing to run
  if (borrowed || as_buffer_view(root, current_settings())) return {};
  Lowered low = lower_multi({with_scalar_parameters(root)}, current_settings());  // numbers as the program's
  Schedule s;
  s.algorithms = algorithm_names(low.algorithms);
  ItemPlan plan = plan_schedule(low.roots);
  std::vector<char> skipped = skipped_items(plan, low.roots, root);
  auto ir = std::make_shared<detail::KernelIR>();
  for (size_t i = 0; i < plan.items.size(); ++i) {
    const ScheduleItem& item = plan.items[i];
    if (skipped[i]) continue;
    if (item.kind == ScheduleItem::Kind::kernel) {  // the IR the executor would compile for it
      codegen::Kernel k = lower_item(item).kernel;
      s.kernel_items.push_back({i, item.device.to_string(), k.name, k.numel});
      ir->kernels.push_back(std::move(k));
      continue;
    }
    if (item.kind == ScheduleItem::Kind::collective) {
      CollectiveArg a = collective_arg(item.ast);
      s.fused_items.push_back({i, item.device.to_string(), std::string(fused_collective_name(a.collective)),
                               std::string(fused_name(a.algorithm)),
                               a.collective == FusedCollective::allgather || a.collective == FusedCollective::broadcast
                                   ? std::string("none")
                                   : std::string(op_name(a.op)),
                               ringrt::prod(item.ast.src(0).shape())});  // the input's elements per device
      continue;
    }
    const UOp& c = item.ast;
    s.copy_items.push_back(
        {c.src(0).device().name(), c.device().name(), ringrt::prod(c.shape()) * itemsize(c.dtype())});
  }
  s.kernel_count = static_cast<int64_t>(s.kernel_items.size());
  s.listing = plan.to_string(skipped);
  s.ir_ = std::move(ir);
  return s;
}

std::string Schedule::source(size_t i, const std::string& target) const {
  suffix_of(target);
  kernel_items.at(i);  // std::out_of_range for a bad i
  const codegen::Kernel& k = kernel_of(*this, i);
  return target == "cpu" ? codegen::render_cpp(k) : codegen::render_hip(k);
}

std::vector<std::string> Schedule::emit_sources(const std::string& dir, const std::string& target) const {
  const char* suffix = suffix_of(target);
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw IOError(fmt::format("kernel source directory '{}': cannot create it: {}", dir, ec.message()));
  if (!fs::is_directory(dir, ec))
    throw IOError(fmt::format("kernel source directory '{}': exists and is not a directory", dir));
  std::vector<std::string> paths;
  for (size_t i = 0; i < kernel_items.size(); ++i) {
    const KernelItem& ki = kernel_items[i];
    fs::path path = fs::path(dir) / fmt::format("{:03}_{}{}", ki.item, ki.name, suffix);
    std::string text = source(i, target);
    write_file(path.string(), text);  // IOError naming the path; a planted link is not followed
    paths.push_back(path.string());
  }
  return paths;
}

}  // namespace ringrt
