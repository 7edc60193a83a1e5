#include "codegen/item_kernel.hpp"

#include <unordered_map>

#include "rewrite/errors.hpp"

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

}  // namespace ringrt
