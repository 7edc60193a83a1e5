#include "codegen/item_kernel.hpp"

#include <unordered_map>

#include "core/errors.hpp"
#include "rewrite/collective.hpp"

namespace ringrt {

namespace {

// The ast with each realized value it reads replaced by a placeholder BUFFER (id -1-k) of its shape.
UOp with_placeholders(const UOp& ast, const std::vector<UOp>& reads) {
  std::unordered_map<const detail::Node*, UOp> sub;
  for (size_t k = 0; k < reads.size(); ++k) {
    const UOp& leaf = reads[k];
    UOp buf = make_uop(Ops::BUFFER, leaf.dtype(), {device_uop(leaf.device(), &leaf.graph())},
                       BufferArg{-1 - static_cast<int64_t>(k), prod(leaf.shape())}, &leaf.graph());
    sub.emplace(leaf.node(), buf.reshape(leaf.shape()));
  }
  return substitute(ast, sub);
}

}  // namespace

UOp item_ast(const ScheduleItem& item) {
  if (item.kind != ScheduleItem::Kind::kernel) throw InternalError("item_ast: a copy item has no kernel");
  return with_placeholders(item.ast, item.reads);
}

ItemKernel lower_item(const ScheduleItem& item) {
  ItemKernel out;
  out.kernel = codegen::lower_kernel(item_ast(item));
  for (const auto& in : out.kernel.inputs) out.input_reads.push_back(static_cast<size_t>(-1 - in.buffer_id));
  return out;
}

codegen::Kernel collective_combine_kernel(const ScheduleItem& item, int64_t numel, int64_t operands) {
  if (item.kind != ScheduleItem::Kind::collective) throw InternalError("collective_combine_kernel: not a collective");
  CollectiveArg arg = collective_arg(item.ast);
  const UOp& src = item.ast.src(0);
  DeviceSpec first(item.device.names().at(0));
  std::vector<UOp> inputs;
  size_t count = operands < 0 ? item.device.count() : static_cast<size_t>(operands);
  for (size_t j = 0; j < count; ++j)
    inputs.push_back(make_uop(Ops::BUFFER, src.dtype(), {device_uop(first, &src.graph())},
                              BufferArg{-1 - static_cast<int64_t>(j), numel}, &src.graph()));
  codegen::Kernel k = codegen::lower_kernel(fold(arg.op, inputs));
  for (size_t j = 0; j < k.inputs.size(); ++j)  // launched on (out, in_0 .. in_{n-1}): inputs in tuple order
    if (k.inputs[j].buffer_id != -1 - static_cast<int64_t>(j) || k.inputs.size() != inputs.size())
      throw InternalError("collective_combine_kernel: the kernel's inputs are not in tuple order");
  return k;
}

}  // namespace ringrt
