// Sharding rules (reference: multi.py multi_pm). A MULTI node is a logical tensor whose per-device
// values are concatenated along its axis. Each rule rewrites an op over MULTI sources into the same op
// over the shards, wrapped in a new MULTI, or into an ALLREDUCE where the op crosses shards.
#include "rewrite/rules/multi.hpp"

#include <fmt/format.h>

#include <boost/container/small_vector.hpp>
#include <unordered_map>
#include <unordered_set>

#include "core/errors.hpp"

namespace ringrt {
namespace {

using std::optional;

[[noreturn]] void unsupported(const UOp& root, const UOp& multi, const std::string& why) {
  throw ShapeError(fmt::format("{}: {} (shape {}, sharded on axis {} over {} devices)", op_name(root.op()), why,
                               shape_str(multi.shape()), multi.axis() ? std::to_string(*multi.axis()) : "none",
                               multi.device().count()));
}

// Same axis: take the shard; unsharded: shard it; other axis: unshard, allreduce, shard again.
optional<UOp> alu_multi(const UOp& root) {
  optional<int> axis = root.axis();
  if (!axis) return std::nullopt;
  std::vector<UOp> srcs;
  for (const UOp& m : root.src()) {
    if (m.axis() == axis) {
      if (m.op() != Ops::MULTI) unsupported(root, m, "a sharded operand must be a MULTI here");
      srcs.push_back(m.src(0));
    } else if (!m.axis()) {
      if (m.op() == Ops::MULTI) unsupported(root, m, "replicated MULTI operand");
      UOp c = m;
      while (c.op() == Ops::RESHAPE || c.op() == Ops::EXPAND) c = c.src(0);
      if (m.device().none() && c.op() == Ops::CONST) {
        // a broadcast constant is uniform along every axis: any shard of it will do
        Spans sp = spans({});
        for (int64_t s : m.shape()) sp.push_back({Affine{0, 0}, Affine{s, 0}});
        sp[static_cast<size_t>(*axis)].second.c /= static_cast<int64_t>(root.device().count());
        srcs.push_back(m.shrink(sp));
      } else if (m.device().none()) {
        // other values made of constants (a padded mask): made on the devices, then sharded
        auto placed = const_on_device(m, root.device());
        if (!placed) unsupported(root, m, "a device-less operand that is not made of constants");
        srcs.push_back(placed->shard_local(*axis));
      } else {
        srcs.push_back(m.shard_local(*axis));
      }
    } else {
      srcs.push_back(m.src(0).unshard_local(*m.axis()).allreduce(Ops::ADD, m.device()).shard_local(*axis));
    }
  }
  UOp first = srcs[0];
  srcs.erase(srcs.begin());
  return first.alu(root.op(), srcs).multi(axis);
}

optional<UOp> reduce_multi(const UOp& root, const UOp& multi) {
  const ReduceArg& ra = root.arg_reduce();
  bool over_shard = multi.axis() && std::find(ra.axes.begin(), ra.axes.end(), *multi.axis()) != ra.axes.end();
  // over axes of local size 1 the local reduction is the identity (keepdim): no kernel for it
  const Shape& shape = multi.src(0).shape();
  bool unit = std::all_of(ra.axes.begin(), ra.axes.end(), [&](int a) { return shape.at(static_cast<size_t>(a)) == 1; });
  UOp local = over_shard && unit && allreduce_in_place() ? multi.src(0) : multi.src(0).r(ra.op, ra.axes);
  return over_shard ? local.allreduce(ra.op, multi.device()) : local.multi(multi.axis());
}

optional<UOp> reshape_multi(const UOp& root, const UOp& multi) {
  Shape to = root.arg_ints();
  int new_axis = *root.axis();  // shape inference already refused reshapes without one
  const Shape& local = multi.src(0).shape();
  int64_t ndev = static_cast<int64_t>(multi.device().count());
  int64_t inner_old = prod(Shape(local.begin() + *multi.axis(), local.end()));
  int64_t inner_new = prod(Shape(to.begin() + new_axis + 1, to.end()));
  int64_t& axis_len = to[static_cast<size_t>(new_axis)];
  // each shard keeps its elements: the new axis splits evenly and the shard's trailing block is the same
  if (axis_len % ndev != 0 || (inner_old != 0 && inner_old != axis_len / ndev * inner_new))
    unsupported(root, multi, fmt::format("reshape to {} would move elements between shards", shape_str(to)));
  axis_len /= ndev;
  return multi.src(0).reshape(to).multi(new_axis);
}

optional<UOp> expand_multi(const UOp& root, const UOp& multi) {
  Shape to = root.arg_ints();
  size_t ax = static_cast<size_t>(*multi.axis());
  if (to[ax] != multi.shape()[ax])
    unsupported(root, multi, fmt::format("expand to {} changes the sharded axis", shape_str(to)));
  to[ax] = multi.src(0).shape()[ax];
  return multi.src(0).expand(to).multi(multi.axis());
}

optional<UOp> pad_multi(const UOp& root, const UOp& multi) {
  const Spans& sp = root.arg_spans();
  size_t ax = static_cast<size_t>(*multi.axis());
  if (!(sp[ax].first == Affine{} && sp[ax].second == Affine{})) unsupported(root, multi, "padding the sharded axis");
  return multi.src(0).pad(sp).multi(multi.axis());
}

// The whole axis stays sharded; whole shards (other axes may shrink too) are copied to every device,
// side by side when there are several (tinygrad allows exactly one shard; several are ringrt's own).
optional<UOp> shrink_multi(const UOp& root, const UOp& multi) {
  Spans sp = root.arg_spans();
  size_t ax = static_cast<size_t>(*multi.axis());
  for (const auto& [a, b] : sp)
    if (a.k != 0 || b.k != 0) unsupported(root, multi, "device-dependent shrink of a logical tensor");
  auto [begin, end] = std::pair{sp[ax].first.c, sp[ax].second.c};
  int64_t local = multi.src(0).shape()[ax];
  sp[ax] = {Affine{0, 0}, Affine{local, 0}};
  if (begin == 0 && end == multi.shape()[ax]) return multi.src(0).shrink(sp).multi(multi.axis());
  if (local == 0 || begin % local != 0 || end % local != 0)
    unsupported(root, multi,
                fmt::format("shrink ({}, {}) on the sharded axis is neither the whole axis nor whole shards of {}",
                            begin, end, local));
  if (begin == end) {  // nothing left along the axis: an empty value on every device
    sp[ax] = {Affine{0, 0}, Affine{0, 0}};
    return multi.src(0).shrink(sp);
  }
  std::vector<UOp> parts;
  for (int64_t i = begin / local; i < end / local; ++i)
    parts.push_back(multi.src(0).shrink(sp).copy_to_device(multi.device(), i));
  return parts.size() == 1 ? parts[0] : concat_select(parts, static_cast<int>(ax));
}

optional<UOp> flip_multi(const UOp& root, const UOp& multi) {
  if (root.arg_ints()[static_cast<size_t>(*multi.axis())]) unsupported(root, multi, "flipping the sharded axis");
  return multi.src(0).flip(root.arg_ints()).multi(multi.axis());
}

// From many devices to one: one copy of each shard to the destination, laid side by side there
// (a gather; reference: tinygrad's copy_multi). To another device tuple: unshard + allreduce ADD, which
// gives every destination device the whole tensor with 2(n-1)/n of the traffic of n gathers.
optional<UOp> copy_multi(const UOp& multi, const UOp& device) {
  const UOp& shards = multi.src(0);
  int axis = *multi.axis();
  if (device.device().tuple()) return shards.unshard_local(axis).allreduce(Ops::ADD, device.device());
  if (prod(shards.shape()) == 0)  // nothing to move: the empty tensor, made on the destination
    return broadcast_to(const_uop(multi.dtype(), 0, device.device(), &multi.graph()), multi.shape());
  std::vector<UOp> parts;
  for (size_t i = 0; i < shards.device().count(); ++i)
    parts.push_back(shards.mselect(static_cast<int64_t>(i)).copy_to_device(device.device()));
  return concat_select(parts, axis);
}

optional<UOp> assign_multi(const UOp& root) {
  const UOp &dest = root.src(0), &value = root.src(1);
  // a replicated value into a buffer held per device on the same devices: each device stores its copy
  if (dest.op() != Ops::MULTI && !dest.logical() && value.op() == Ops::MULTI && !value.axis() &&
      dest.device() == value.device())
    return dest.assign(value.src(0));
  if (dest.op() != Ops::MULTI || value.op() != Ops::MULTI || dest.axis() != value.axis())
    throw ShapeError(
        fmt::format("ASSIGN: destination and value have different shard layouts (shape {}, axes {} and {})",
                    shape_str(dest.shape()), dest.axis() ? std::to_string(*dest.axis()) : "none",
                    value.axis() ? std::to_string(*value.axis()) : "none"));
  return dest.src(0).assign(value.src(0)).multi(value.axis());
}

// root on the shards: its first source's MULTI and any other MULTI source replaced by their shards.
optional<UOp> passthrough_multi(const UOp& root, const UOp& multi) {
  std::vector<UOp> src{multi.src(0)};
  for (size_t i = 1; i < root.src().size(); ++i)
    src.push_back(root.src(i).op() == Ops::MULTI ? root.src(i).src(0) : root.src(i));
  return root.replace(std::move(src)).multi(multi.axis());
}

// A void CALL (a custom kernel run for its effect) takes the shards of every MULTI argument.
optional<UOp> strip_multi(const UOp& root) {
  std::vector<UOp> src;
  bool any = false;
  for (const UOp& s : root.src()) {
    any = any || s.op() == Ops::MULTI;
    src.push_back(s.op() == Ops::MULTI ? s.src(0) : s);
  }
  if (!any) return std::nullopt;
  return root.replace(std::move(src));
}

UPat multi_src(const char* name = "multi") { return UPat(Ops::MULTI).named(name); }

}  // namespace

PatternMatcher multi_pm() {
  return PatternMatcher({
      // a copy of a value made of constants alone is that value made on the destination
      {UPat(Ops::COPY).src({UPat::var("x"), UPat(Ops::DEVICE).named("device")}),
       [](const Match& x) { return const_on_device(x["x"], x["device"].device()); }},
      // ALU: bring every operand to the root's shard axis
      {UPat(group::alu()).named("root").early_reject({Ops::MULTI}),
       [](const Match& x) { return alu_multi(x["root"]); }},
      // reduce over the sharded axis -> local reduce + ALLREDUCE; over other axes it stays sharded
      {UPat(Ops::REDUCE_AXIS).named("root").src({multi_src()}),
       [](const Match& x) { return reduce_multi(x["root"], x["multi"]); }},
      // reshape, never moving elements between shards
      {UPat(Ops::RESHAPE).named("root").src({multi_src()}),
       [](const Match& x) { return reshape_multi(x["root"], x["multi"]); }},
      // expand, pad, shrink, permute, flip of the shards
      {UPat(Ops::EXPAND).named("root").src({multi_src()}),
       [](const Match& x) { return expand_multi(x["root"], x["multi"]); }},
      {UPat(Ops::PAD).named("root").src({multi_src()}),
       [](const Match& x) { return pad_multi(x["root"], x["multi"]); }},
      {UPat(Ops::SHRINK).named("root").src({multi_src()}),
       [](const Match& x) { return shrink_multi(x["root"], x["multi"]); }},
      {UPat(Ops::PERMUTE).named("root").src({multi_src()}),
       [](const Match& x) {
         return std::optional(x["multi"].src(0).permute(x["root"].arg_ints()).multi(x["root"].axis()));
       }},
      {UPat(Ops::FLIP).named("root").src({multi_src()}),
       [](const Match& x) { return flip_multi(x["root"], x["multi"]); }},
      // assign needs equal layouts on both sides
      {UPat(Ops::ASSIGN).named("root").early_reject({Ops::MULTI}),
       [](const Match& x) { return assign_multi(x["root"]); }},
      // copy to one device (or another tuple): unshard + allreduce ADD
      {UPat(Ops::COPY).src({multi_src(), UPat(Ops::DEVICE).named("device")}),
       [](const Match& x) { return copy_multi(x["multi"], x["device"]); }},
      // an allreduce of a MULTI reduces its shards
      {UPat(Ops::ALLREDUCE).named("red").src({multi_src(), UPat(Ops::DEVICE).named("device")}),
       [](const Match& x) {
         return std::optional(x["multi"]
                                  .src(0)
                                  .allreduce(static_cast<Ops>(x["red"].arg_int()), x["device"].device())
                                  .multi(x["multi"].axis()));
       }},
      // a void CALL (run for its effect) takes the shards of its sharded arguments, the user's custom
      // kernel handles them; a CALL with a value whose first argument is sharded runs on each shard.
      // The reference tries the pass-through first because its CALL's first source is the callee;
      // ringrt's CALL names the kernel in arg and has only arguments as sources, so void goes first.
      {UPat(Ops::CALL).named("root").dtype({DType::void_}).early_reject({Ops::MULTI}),
       [](const Match& x) { return strip_multi(x["root"]); }},
      {UPat(Ops::CALL).named("root").src_prefix({multi_src()}),
       [](const Match& x) { return passthrough_multi(x["root"], x["multi"]); }},
      // cast, bitcast, contiguous and detach act on each shard
      {UPat(OpSet{Ops::CAST, Ops::BITCAST, Ops::CONTIGUOUS, Ops::DETACH}).named("root").src({multi_src()}),
       [](const Match& x) { return passthrough_multi(x["root"], x["multi"]); }},
      // after a CALL: the ordering holds on each shard
      {UPat(Ops::AFTER).named("a").src({multi_src(), UPat(Ops::CALL)}),
       [](const Match& x) {
         std::vector<UOp> src = x["a"].src();
         src[0] = x["multi"].src(0);
         return std::optional(x["a"].replace(std::move(src)).multi(x["multi"].axis()));
       }},
  });
}

UOp broadcast_to(const UOp& u, const Shape& shape) {
  if (u.shape() == shape) return u;
  Shape ones(shape.size(), 1);
  return u.reshape(u.shape().empty() ? ones : u.shape()).expand(shape);
}

UOp at_device(const UOp& v, const UOp& src, int64_t dnum) {
  if (v.op() != Ops::SHRINK && v.op() != Ops::PAD) return v.replace({src});
  Spans sp = v.arg_spans();
  for (auto& [a, b] : sp) {
    a = Affine{a.at(dnum), 0};
    b = Affine{b.at(dnum), 0};
  }
  return v.replace({src}, sp);
}

namespace {
// Whether u alone rules out a value of constants: an op that is not a pure function of its sources, a
// logical (multi-device) node, or bounds that depend on _device_num.
bool not_of_constants(const UOp& u) {
  static const OpSet kPure =
      group::alu() | group::movement() |
      OpSet{Ops::CONST, Ops::DEVICE, Ops::CAST, Ops::BITCAST, Ops::CONTIGUOUS, Ops::DETACH, Ops::REDUCE_AXIS};
  if (!kPure.contains(u.op()) || u.logical()) return true;
  if (u.op() == Ops::SHRINK || u.op() == Ops::PAD)
    for (const auto& [a, b] : u.arg_spans())
      if (a.k != 0 || b.k != 0) return true;
  return false;
}
}  // namespace

std::optional<UOp> const_on_device(const UOp& x, const DeviceSpec& device) {
  // The rules ask this of every COPY and MSELECT, and most reach a buffer within a few nodes: a first
  // walk of up to 32 nodes (revisits counted, nothing allocated) gives up at the first node that is no
  // function of constants. The full walk below, with a set of seen nodes, runs only when that one
  // found none or could not finish.
  {
    boost::container::small_vector<UOp, 16> stack{x};
    for (int budget = 32; !stack.empty() && budget > 0; --budget) {
      UOp u = stack.back();
      stack.pop_back();
      if (not_of_constants(u)) return std::nullopt;
      stack.insert(stack.end(), u.src().begin(), u.src().end());
    }
  }
  std::vector<UOp> stack{x}, consts;
  std::unordered_set<const detail::Node*> seen;
  while (!stack.empty()) {
    UOp u = stack.back();
    stack.pop_back();
    if (!seen.insert(u.node()).second) continue;
    if (not_of_constants(u)) return std::nullopt;
    if (u.op() == Ops::CONST) consts.push_back(u);
    for (const UOp& s : u.src()) stack.push_back(s);
  }
  UOp dev = device_uop(device, &x.graph());
  std::unordered_map<const detail::Node*, UOp> sub;
  for (const UOp& c : consts) sub.emplace(c.node(), c.replace({dev}));
  return substitute(x, sub);
}

UOp concat_select(const std::vector<UOp>& parts, int axis) {
  std::vector<UOp> kept;
  for (const UOp& p : parts)
    if (p.shape().at(static_cast<size_t>(axis)) != 0) kept.push_back(p);
  if (kept.empty()) throw ShapeError(fmt::format("concat: no part with elements along axis {}", axis));
  Shape shape = kept[0].shape();
  size_t ax = static_cast<size_t>(axis);
  int64_t total = 0;
  std::vector<int64_t> begins;
  for (const UOp& p : kept) {
    Shape a = p.shape(), b = shape;
    a[ax] = b[ax] = 0;
    if (a != b)
      throw ShapeError(fmt::format("concat: part of shape {} does not fit parts of shape {} along axis {}",
                                   shape_str(p.shape()), shape_str(shape), axis));
    begins.push_back(total);
    total += p.shape()[ax];
  }
  shape[ax] = total;
  auto where = [&](size_t i) {  // the padding that puts part i into place
    Spans sp(shape.size());
    sp[ax] = {Affine{begins[i], 0}, Affine{total - begins[i] - kept[i].shape()[ax], 0}};
    return sp;
  };
  UOp out = kept.back().pad(where(kept.size() - 1));
  for (size_t i = kept.size() - 1; i-- > 0;) {
    UOp inside = broadcast_to(const_uop(DType::bool_, 1, &out.graph()), kept[i].shape());
    out = inside.pad(where(i)).where(kept[i].pad(where(i)), out);
  }
  return out;
}
}  // namespace ringrt
