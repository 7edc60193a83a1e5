#include "runtime/engine/realize.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "codegen/item_kernel.hpp"
#include "codegen/view.hpp"
#include "core/errors.hpp"
#include "rewrite/collective.hpp"
#include "rewrite/lower/lower.hpp"
#include "rewrite/plan/memory_plan.hpp"
#include "rewrite/plan/schedule.hpp"
#include "rewrite/rules/multi.hpp"
#include "runtime/engine/collect.hpp"
#include "runtime/engine/program_cache.hpp"

namespace ringrt {

// ---------------------------------------------------------------------------------------------
// storages and live states

namespace {

using Storage = DeviceStorage;

// Weak records, pruned whenever they have doubled since the last prune (and by engine_roots), so a
// process that makes tensors forever keeps records of the live ones only.
struct EngineRecords {
  std::mutex mu;
  std::unordered_map<int64_t, std::weak_ptr<Storage>> storages;
  std::vector<std::weak_ptr<TensorState>> live;
  size_t storages_limit = 64, live_limit = 64;

  void prune() {
    std::erase_if(storages, [](const auto& kv) { return kv.second.expired(); });
    std::erase_if(live, [](const auto& w) { return w.expired(); });
    storages_limit = 2 * storages.size() + 64;
    live_limit = 2 * live.size() + 64;
  }
};
EngineRecords& engine_records() {
  static EngineRecords r;
  return r;
}

void register_storage(const std::shared_ptr<Storage>& s) {
  auto& r = engine_records();
  std::lock_guard<std::mutex> lock(r.mu);
  r.storages[s->id()] = s;
  if (r.storages.size() > r.storages_limit) r.prune();
}

}  // namespace

// Device memory for BUFFER buf, filled from host data (one HostBuffer per device, or one for all).
std::shared_ptr<Storage> new_storage(const UOp& buf, const std::vector<HostBuffer>& data) {
  auto s = std::make_shared<Storage>(std::get<BufferArg>(buf.arg()).id, buf.device(), buf.dtype(), prod(buf.shape()));
  if (!data.empty()) s->from_host(data);
  register_storage(s);
  return s;
}

std::shared_ptr<Storage> find_storage(int64_t id) {
  auto& r = engine_records();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.storages.find(id);
  return it == r.storages.end() ? nullptr : it->second.lock();
}

std::vector<HostBuffer> interpret_buffers(const UOp& u, bool remote_as_zeros) {
  std::unordered_map<int64_t, std::vector<HostBuffer>> host;
  Interpreter in([&](int64_t id) -> const std::vector<HostBuffer>* {
    auto it = host.find(id);
    if (it == host.end()) {
      auto st = find_storage(id);
      if (!st) return nullptr;
      it = host.emplace(id, st->to_host(remote_as_zeros)).first;
    }
    return &it->second;
  });
  return in.evaluate(u);
}

void hold(TensorState& st, const std::vector<std::shared_ptr<Storage>>& more) {
  for (const auto& m : more)
    if (std::find(st.storages.begin(), st.storages.end(), m) == st.storages.end()) st.storages.push_back(m);
}

void check_has_memory(const TensorState& st, const char* op) {
  if (st.placeholder)
    throw DeviceError(std::string(op) +
                      ": a Tensor::placeholder (or a tensor built on one) has no memory or values; it is for "
                      "planning only (schedule, algorithms, to_dot)");
}

StatePtr make_state(UOp u, std::vector<std::shared_ptr<Storage>> storages) {
  auto s = std::make_shared<TensorState>();
  s->uop = u;
  s->storages = std::move(storages);
  auto& r = engine_records();
  std::lock_guard<std::mutex> lock(r.mu);
  r.live.push_back(s);
  if (r.live.size() > r.live_limit) r.prune();
  return s;
}

// ---------------------------------------------------------------------------------------------
// buffer views

bool is_buffer_view(const UOp& u) {
  const UOp& x = u.op() == Ops::MULTI ? u.src(0) : u;
  return x.op() == Ops::BUFFER || (x.op() == Ops::RESHAPE && x.src(0).op() == Ops::BUFFER);
}

namespace {

UOp buffer_of(UOp u) {
  while (u.op() != Ops::BUFFER) {
    if (u.src().empty()) throw InternalError("no buffer under " + u.to_string());
    u = u.src(0);
  }
  return u;
}

std::set<int64_t> buffers_read(const UOp& u) {
  std::set<int64_t> ids;
  for (const UOp& x : u.graph().toposort({u}))
    if (x.op() == Ops::BUFFER) ids.insert(std::get<BufferArg>(x.arg()).id);
  return ids;
}

}  // namespace

int64_t buffer_id_of(const UOp& view) { return std::get<BufferArg>(buffer_of(view).arg()).id; }

// root as a view of a buffer when it is a CONTIGUOUS of movement ops over a realized BUFFER (through
// a MULTI) whose elements, on every device, are one contiguous range of the buffer at the same offset
// (a reshape; a shrink on the outermost axes that are not 1; a shrink of each shard on an axis other
// than the sharded one, when the axes before it have local size 1; chains of these): the buffer, a 1-D
// SHRINK to that range (none for the whole buffer) and a RESHAPE to the local shape, under a MULTI on
// the root's shard axis. Otherwise nothing. Shapes in elements; throws what lower_multi throws for
// the movement ops (a ShapeError for a shrink on the sharded axis that is not one shard or the whole).
// Reference: tinygrad's BUFFER_VIEW (a CONTIGUOUS of a view that is a contiguous range of a buffer is
// that range of the buffer, no kernel); whether it aliases the buffer: see TensorState::borrowed.
std::optional<UOp> as_buffer_view(const UOp& root, const AllreduceSettings& settings) {
  if (root.op() != Ops::CONTIGUOUS) return std::nullopt;
  UOp under = root.src(0);
  while (group::movement().contains(under.op()) || under.op() == Ops::MULTI) under = under.src(0);
  if (under.op() != Ops::BUFFER) return std::nullopt;
  Lowered low = lower_multi({root}, settings);
  const UOp& local = low.roots.at(0);
  if (local.op() != Ops::CONTIGUOUS) return std::nullopt;
  const UOp& chain = local.src(0);
  int64_t numel = prod(chain.shape());
  int64_t ndev = std::max<int64_t>(1, static_cast<int64_t>(chain.device().count()));
  codegen::Expr gid = codegen::gid_var(numel);
  codegen::ViewAccess access =
      codegen::view_access(chain, {codegen::unravel(gid, chain.shape()), {}}, codegen::dnum_var(ndev - 1));
  if (access.base.op() != Ops::BUFFER || !access.valid.always()) return std::nullopt;
  int64_t offset = 0;
  if (numel > 0) {  // element gid of the view is element offset + gid of the buffer, on every device
    std::optional<int64_t> off = (access.index - gid).as_constant();
    if (!off && numel == 1 && access.index.min() == access.index.max()) off = access.index.min();
    if (!off) return std::nullopt;
    offset = *off;
  }
  UOp view = access.base;
  if (offset != 0 || numel != prod(view.shape())) view = view.shrink(spans({{offset, offset + numel}}));
  view = view.reshape(local.shape());
  return low.axes.at(0) ? view.multi(low.axes[0]) : view;
}

// ---------------------------------------------------------------------------------------------
// assignments and realize

// Realizing changes states (their graph, storages, borrowed flag) that other threads' handles share:
// one realize at a time in the process. Recursive: settling an assignment realizes copies.
std::recursive_mutex& realize_mutex() {
  static std::recursive_mutex mu;
  return mu;
}

namespace {

// Assignments that have run: ASSIGN node -> the destination view it wrote. A graph built on a
// tensor before that tensor was realized still holds its ASSIGN; it reads the destination instead of
// running the assignment again.
struct AssignLog {
  std::mutex mu;
  std::unordered_map<const detail::Node*, UOp> dest;
};
AssignLog& assign_log() {
  static AssignLog log;
  return log;
}

bool contains(const UOp& graph, const UOp& node) {
  for (const UOp& u : graph.graph().toposort({graph}))
    if (u == node) return true;
  return false;
}

// The views of buffer id that root reads outside the assignment a (the old contents).
std::vector<UOp> reads_outside(const UOp& root, const UOp& a, int64_t id) {
  std::vector<UOp> found, stack{root};
  std::unordered_set<const detail::Node*> seen;
  while (!stack.empty()) {
    UOp u = stack.back();
    stack.pop_back();
    if (u == a || !seen.insert(u.node()).second) continue;
    if (is_buffer_view(u) && buffer_id_of(u) == id) {
      found.push_back(u);
      continue;
    }
    for (const UOp& s : u.src()) stack.push_back(s);
  }
  return found;
}

// Realized: a buffer's memory (of its own or borrowed); realize() has nothing to run for it.
bool is_realized(const TensorState& st) { return st.borrowed || is_buffer_view(st.uop); }

thread_local std::vector<const TensorState*> realizing;  // assignment owners up this thread's stack

// Gives a borrowed state memory of its own (one copy kernel); its value is unchanged.
void copy_out(const StatePtr& st) {
  if (!st->borrowed) return;
  auto copy = make_state(st->uop.contiguous(), st->storages);
  realize_states({copy}, false);
  st->uop = copy->uop;
  st->storages = copy->storages;
  st->borrowed = false;
}

// The live states other than owner for which keep holds.
template <class Pred>
std::vector<StatePtr> live_states(const StatePtr& owner, Pred keep) {
  std::vector<StatePtr> out;
  auto& r = engine_records();
  std::lock_guard<std::mutex> lock(r.mu);
  for (auto& w : r.live)
    if (auto s = w.lock(); s && s != owner && keep(*s)) out.push_back(s);
  return out;
}

}  // namespace

void before_write(const StatePtr& owner, int64_t id, std::optional<UOp> assignment) {
  GraphUse use;
  std::lock_guard<std::recursive_mutex> lock(realize_mutex());
  std::vector<StatePtr> readers =
      live_states(owner, [&](const TensorState& s) { return !is_realized(s) && buffers_read(s.uop).count(id); });
  // A reader holding this very assignment reads the new contents (it is realized after); one already
  // being realized up the stack is not waited for; a reader that cannot be realized would fail anyway.
  realizing.push_back(owner.get());
  for (const StatePtr& r : readers) {
    if ((assignment && contains(r->uop, *assignment)) ||
        std::find(realizing.begin(), realizing.end(), r.get()) != realizing.end())
      continue;
    try {
      realize_states({r}, true);
    } catch (const Error&) {
    }
  }
  realizing.pop_back();
  // values borrowing the destination's memory (those just realized too) get their own copy first
  std::vector<StatePtr> borrowers =
      live_states(owner, [&](const TensorState& s) { return s.borrowed && buffers_read(s.uop).count(id); });
  for (const StatePtr& b : borrowers) copy_out(b);
}

namespace {

// Runs the assignment a (its value already free of other pending assignments): first every live
// tensor that still reads the destination's old contents is realized (write after read), then the
// program writes the value into the destination.
void run_assign(const UOp& a, const StatePtr& owner, const AllreduceSettings& settings) {
  UOp dest = a.src(0);  // a buffer view, or a MULTI of one
  before_write(owner, buffer_id_of(dest), a);
  ProgramRef program = program_for({a.replace(a.src(), Arg())}, settings);  // one program for every call
  auto record = [&] {
    std::lock_guard<std::mutex> lock(assign_log().mu);
    assign_log().dest.emplace(a.node(), dest);
  };
  try {
    program.run({{}}, find_storage);
  } catch (const TimeoutError&) {
    record();  // submitted: it still writes the destination, so running it again would apply it twice
    throw;
  }
  record();
}

// The assignments of several states run as one program (one compile, and on GPUs one graph launch: DDP's
// in-place allreduces of every bucket of a step): each state whose graph is one ASSIGN, with no other
// assignment in it and not run yet, into a buffer of its own that no other of these assignments reads.
// Each is then recorded as run, as run_assign records it; settle_assigns finds them. Fewer than two such
// states: nothing.
void run_assigns_together(const std::vector<StatePtr>& states, const AllreduceSettings& settings) {
  std::vector<std::pair<UOp, StatePtr>> batch;
  std::set<int64_t> dests;
  for (const StatePtr& st : states) {
    const UOp& a = st->uop;
    if (a.op() != Ops::ASSIGN) continue;
    bool alone = true;
    for (const UOp& u : a.graph().toposort({a})) alone = alone && (u.op() != Ops::ASSIGN || u.node() == a.node());
    {
      std::lock_guard<std::mutex> lock(assign_log().mu);
      alone = alone && !assign_log().dest.count(a.node());
    }
    if (alone && dests.insert(buffer_id_of(a.src(0))).second) batch.emplace_back(a, st);
  }
  for (const auto& [a, st] : batch)  // none reads another's destination (write after read, read after write)
    for (int64_t id : buffers_read(a.src(1)))
      if (id != buffer_id_of(a.src(0)) && dests.count(id)) return;
  if (batch.size() < 2) return;
  std::vector<UOp> roots;
  for (const auto& [a, st] : batch) {
    before_write(st, buffer_id_of(a.src(0)), a);
    roots.push_back(a.replace(a.src(), Arg()));
  }
  ProgramRef program = program_for(roots, settings);
  auto record = [&] {
    std::lock_guard<std::mutex> lock(assign_log().mu);
    for (const auto& [a, st] : batch) assign_log().dest.emplace(a.node(), a.src(0));
  };
  try {
    program.run(std::vector<std::vector<Block>>(roots.size()), find_storage);
  } catch (const TimeoutError&) {
    record();  // submitted: they still write their destinations, so running them again would apply them twice
    throw;
  }
  record();
}

// Copies out the old contents of a's destination that root reads outside a; returns root reading
// the copies instead, or nothing when there are none.
std::optional<UOp> snapshot_old_contents(const StatePtr& st, const UOp& root, const UOp& a) {
  std::unordered_map<const detail::Node*, UOp> snap{{a.node(), a}};  // a itself stays as it is
  for (const UOp& v : reads_outside(root, a, buffer_id_of(a.src(0)))) {
    auto copy = make_state(v.contiguous(), st->storages);
    realize_states({copy}, false);  // a copy in memory of its own, never a view of the destination
    snap.emplace(v.node(), copy->uop);
    hold(*st, copy->storages);
  }
  if (snap.size() == 1) return std::nullopt;
  return substitute(root, snap);
}

// st's graph with every assignment in it run once (innermost first) and replaced by its
// destination; reads of a destination's old contents outside its assignment are snapshotted first.
// A graph with no ASSIGN keeps none (nodes never change): the last such root of the global graph, by
// node id (never reused), is not walked again (the same lazy value realized step after step).
UOp settle_assigns(const StatePtr& st, const AllreduceSettings& settings) {
  thread_local int64_t last_without_assign = -1;
  UOp root = st->uop;
  bool global = &root.graph() == &UOpGraph::global();
  if (global && root.id() == last_without_assign) return root;
  for (;;) {
    std::unordered_map<const detail::Node*, UOp> sub;
    std::optional<UOp> pending;
    bool any = false;
    {
      std::lock_guard<std::mutex> lock(assign_log().mu);
      for (const UOp& u : root.graph().toposort({root})) {
        if (u.op() != Ops::ASSIGN) continue;
        any = true;
        if (auto it = assign_log().dest.find(u.node()); it != assign_log().dest.end()) {
          sub.emplace(u.node(), it->second);
        } else if (!pending) {
          pending = u;  // the first in order: its sources hold no unrun assignment
        }
      }
    }
    if (!any && global) last_without_assign = root.id();
    if (!sub.empty()) root = substitute(root, sub);
    if (!pending) return root;
    UOp a = *pending;
    if (a.node() != root.node()) {
      // old contents read elsewhere in this graph: copy them out before the destination changes
      if (std::optional<UOp> snapped = snapshot_old_contents(st, root, a)) {
        root = *snapped;
        continue;  // a is unchanged: its dest and value are excluded from the snapshot walk
      }
    }
    run_assign(a, st, settings);
  }
}

// Runs one program computing the plain states' values into fresh storages, which they then hold.
void run_fresh(const std::vector<StatePtr>& plain, const AllreduceSettings& settings) {
  std::vector<UOp> roots;
  for (auto& st : plain) roots.push_back(st->uop);
  ProgramRef program = program_for(roots, settings);
  const Lowered& low = program.lowered();
  std::vector<std::shared_ptr<Storage>> outputs;
  std::vector<std::vector<Block>> outs;
  std::vector<UOp> buffers;
  std::unordered_map<const detail::Node*, size_t> first;  // states of one value share its memory
  for (size_t i = 0; i < low.roots.size(); ++i) {
    const UOp& root = low.roots[i];
    if (auto [it, fresh] = first.emplace(root.node(), i); !fresh) {
      outputs.push_back(outputs[it->second]);
      outs.push_back(outs[it->second]);
      buffers.push_back(buffers[it->second]);
      continue;
    }
    DeviceSpec dev = root.device().none() ? DeviceSpec("CPU:0") : root.device();
    UOp buf = new_buffer(dev, ringrt::prod(root.shape()), root.dtype());
    outputs.push_back(new_storage(buf, {}));
    outs.push_back(outputs.back()->blocks());
    buffers.push_back(buf);
  }
  std::vector<std::shared_ptr<Storage>> keep;
  for (auto& st : plain) keep.insert(keep.end(), st->storages.begin(), st->storages.end());
  ExecOptions options;
  options.outputs.assign(outputs.begin(), outputs.end());
  program.run(outs, find_storage, std::move(options));
  for (size_t i = 0; i < plain.size(); ++i) {
    UOp view = buffers[i].reshape(low.roots[i].shape());
    plain[i]->uop = low.axes[i] ? view.multi(low.axes[i]) : view;
    plain[i]->storages = {outputs[i]};
  }
}

}  // namespace

void realize_states(const std::vector<StatePtr>& states, bool views) {
  GraphUse use;
  std::lock_guard<std::recursive_mutex> lock(realize_mutex());
  std::vector<StatePtr> todo;
  for (const StatePtr& st : states) check_has_memory(*st, "realize");
  for (const StatePtr& st : states)
    if (!is_realized(*st)) todo.push_back(st);
  if (todo.empty()) return;
  AllreduceSettings settings = current_settings();
  if (todo.size() > 1) run_assigns_together(todo, settings);

  // assignments write in place, once, before anything reads their result
  std::vector<StatePtr> plain;
  for (auto& st : todo) {
    auto keep = st->storages;  // alive while settling, which may replace st->storages
    st->uop = settle_assigns(st, settings);
    if (is_buffer_view(st->uop)) {  // an assignment's result: it holds its destination and nothing more
      st->storages = {find_storage(buffer_id_of(st->uop))};
      continue;
    }
    if (std::optional<UOp> view = views ? as_buffer_view(st->uop, settings) : std::nullopt) {
      st->uop = *view;  // no kernel: the range of the buffer, which the state keeps alive
      st->storages = {find_storage(buffer_id_of(*view))};
      st->borrowed = true;
      continue;
    }
    plain.push_back(st);
  }
  // a later state's assignment realizes the live readers of its destination's old contents first
  // (before_write): a state listed earlier may be one, and is not computed again from the new contents
  std::erase_if(plain, [](const StatePtr& st) { return is_realized(*st); });
  if (!plain.empty()) run_fresh(plain, settings);
}

UOp with_run_assigns_settled(const UOp& root) {
  std::unordered_map<const detail::Node*, UOp> sub;
  {
    std::lock_guard<std::mutex> lock(assign_log().mu);
    if (assign_log().dest.empty()) return root;
    for (const UOp& u : root.graph().toposort({root}))
      if (u.op() == Ops::ASSIGN)
        if (auto it = assign_log().dest.find(u.node()); it != assign_log().dest.end())
          sub.emplace(u.node(), it->second);
  }
  return sub.empty() ? root : substitute(root, sub);
}

void own(const StatePtr& st) {
  GraphUse use;
  check_has_memory(*st, "write");
  std::lock_guard<std::recursive_mutex> lock(realize_mutex());
  if (st->borrowed) {
    copy_out(st);
  } else if (!is_realized(*st)) {
    realize_states({st}, false);
  }
}

std::vector<UOp> engine_roots() {
  std::vector<UOp> roots;
  {
    auto& r = engine_records();
    std::lock_guard<std::mutex> lock(r.mu);
    r.prune();
    for (const auto& w : r.live)
      if (auto st = w.lock(); st && st->uop.valid()) roots.push_back(st->uop);
  }
  // an assignment's record lives while a live graph still holds the assignment
  std::lock_guard<std::mutex> lock(assign_log().mu);
  auto& dest = assign_log().dest;
  if (dest.empty()) return roots;
  std::unordered_set<const detail::Node*> seen, held;
  std::vector<const detail::Node*> stack;
  for (const UOp& u : roots)
    if (seen.insert(u.node()).second) stack.push_back(u.node());
  while (!stack.empty()) {
    UOp u(stack.back());
    stack.pop_back();
    if (u.op() == Ops::ASSIGN && dest.count(u.node())) held.insert(u.node());
    for (const UOp& x : u.src())
      if (seen.insert(x.node()).second) stack.push_back(x.node());
  }
  std::erase_if(dest, [&](const auto& kv) { return !held.count(kv.first); });
  for (const auto& [assign, view] : dest) roots.push_back(view);
  return roots;
}

EngineCounts engine_counts() {
  EngineCounts c;
  {
    auto& r = engine_records();
    std::lock_guard<std::mutex> lock(r.mu);
    for (const auto& [id, w] : r.storages) c.storages += w.expired() ? 0 : 1;
    for (const auto& w : r.live) c.states += w.expired() ? 0 : 1;
  }
  std::lock_guard<std::mutex> lock(assign_log().mu);
  c.assignments = assign_log().dest.size();
  return c;
}

}  // namespace ringrt
