// Trace (runtime/api/trace.hpp) on cpu devices: a ring allreduce records exactly the schedule's kernel
// launches and copies, with their item indices; times are ordered (each event's end >= start, one
// queue's events never overlap, an item starts after the items it waited for end); the cap counts what
// it drops; nothing is recorded without a recording Trace; the Chrome JSON names every queue.
#include <boost/test/unit_test.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "runtime/api/ringrt.hpp"
#include "runtime/device/device.hpp"
#include "test/support/runtime_switches.hpp"

BOOST_AUTO_TEST_SUITE(test_trace)

using namespace ringrt;
using ringrt::test::set_switches;

namespace {

// Ring allreduce forced, peer reads and peer writes off (so every copy runs as a copy) for the scope.
struct RingScope {
  RuntimeParams saved = runtime_params();
  ScopedSettings settings{[] {
    AllreduceSettings s;
    s.ring = 2;
    s.all2all = 0;
    return s;
  }()};
  RingScope() {
    RuntimeParams p = saved;
    p.peer_reads = false;
    p.peer_writes = false;
    set_switches(p);
  }
  ~RingScope() { set_switches(saved); }
};

// The allreduce (sum over axis 0) of a (3, 3000) tensor sharded over CPU:0..2; its input realized.
Tensor ring_sum() {
  Tensor x = Tensor::arange(9000).reshape({3, 3000}).contiguous().shard(cpu_devices(3), 0);
  x.realize();
  return x.sum({0});
}

// "(CPU:0, CPU:1)" -> {"CPU:0", "CPU:1"}; "CPU:2" -> {"CPU:2"}.
std::vector<std::string> device_list(const std::string& d) {
  if (d.empty() || d.front() != '(') return {d};
  std::vector<std::string> out;
  std::string cur;
  for (char c : d.substr(1, d.size() - 2)) {
    if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

// (item, kind, queue, name, src, dst, bytes): what one launch or copy is, without its times.
using Work = std::tuple<size_t, std::string, std::string, std::string, std::string, std::string, int64_t>;

// What the schedule says runs: each kernel item once per device of its tuple (output bytes: numel * 4,
// float32), each non-empty copy item (item indices: those no kernel item has, in order) on its
// destination's queue.
std::multiset<Work> expected_work(const Schedule& s) {
  std::multiset<Work> want;
  std::set<size_t> kernel_items;
  for (const KernelItem& k : s.kernel_items) {
    kernel_items.insert(k.item);
    for (const std::string& dev : device_list(k.device))
      want.insert({k.item, "kernel", dev, k.name, "", "", k.numel * 4});
  }
  std::vector<CopyItem> copies = s.copies();
  size_t c = 0;
  for (size_t i = 0; c < copies.size(); ++i) {
    if (kernel_items.count(i)) continue;
    const CopyItem& copy = copies[c++];
    if (copy.bytes > 0) want.insert({i, "copy", copy.dst, "copy", copy.src, copy.dst, copy.bytes});
  }
  return want;
}

std::multiset<Work> recorded_work(const std::vector<TraceEvent>& events) {
  std::multiset<Work> got;
  for (const TraceEvent& e : events)
    got.insert({e.item, e.kind == TraceEvent::Kind::copy ? "copy" : "kernel", e.queue, e.name, e.src, e.dst, e.bytes});
  return got;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(trace)

BOOST_AUTO_TEST_CASE(ring_allreduce_records_the_schedule_in_order) {
  RingScope scope;
  Tensor y = ring_sum();
  Schedule s = y.schedule();
  BOOST_TEST(s.algorithms == std::vector<std::string>{"ring"}, boost::test_tools::per_element());
  std::multiset<Work> want = expected_work(s);
  BOOST_TEST(want.size() > 6u);
  Trace trace;
  y.realize();
  trace.stop();
  std::vector<TraceEvent> events = trace.events();
  BOOST_TEST((recorded_work(events) == want));
  BOOST_TEST(trace.dropped() == 0u);
  BOOST_TEST(trace.untimed() == 0u);
  std::map<std::string, std::vector<const TraceEvent*>> by_queue;
  size_t copies_after_work = 0;
  for (const TraceEvent& e : events) {
    BOOST_TEST(e.run == 1u);
    BOOST_TEST(e.start_ns >= 0);
    BOOST_TEST(e.end_ns >= e.start_ns);
    by_queue[e.queue].push_back(&e);
    // after every item it waited for: those ended before it started (on every device they ran on)
    for (size_t d : e.deps) {
      BOOST_TEST(d < e.item);
      for (const TraceEvent& dep : events)
        if (dep.item == d)
          BOOST_TEST(dep.end_ns <= e.start_ns, "item " << e.item << " starts before dep " << d << " ends");
    }
    if (e.kind == TraceEvent::Kind::copy && !e.deps.empty()) ++copies_after_work;
  }
  BOOST_TEST(copies_after_work > 0u);  // the ring's later steps copy what earlier ones computed
  BOOST_TEST(by_queue.size() == 3u);
  for (auto& [queue, list] : by_queue) {  // one in-order queue per device: no overlap
    std::sort(list.begin(), list.end(), [](auto* a, auto* b) { return a->start_ns < b->start_ns; });
    for (size_t i = 1; i < list.size(); ++i)
      BOOST_TEST(list[i - 1]->end_ns <= list[i]->start_ns,
                 queue << ": items " << list[i - 1]->item << " and " << list[i]->item << " overlap");
  }
  // the values are right all the same: column j sums j, 3000 + j, 6000 + j
  std::vector<Tensor> shards = y.shards();
  BOOST_TEST(shards.size() == 3u);
  for (const Tensor& t : shards) {
    std::vector<float> v = t.to_vector<float>();
    for (size_t j : {0, 1, 2999}) BOOST_TEST(v.at(j) == static_cast<float>(3 * j + 9000));
  }
}

BOOST_AUTO_TEST_CASE(the_cap_counts_what_it_drops) {
  RingScope scope;
  Tensor y = ring_sum();
  size_t total = expected_work(y.schedule()).size();
  Trace trace(5);
  y.realize();
  BOOST_TEST(trace.events().size() == 5u);
  BOOST_TEST(trace.dropped() == total - 5);
  auto j = nlohmann::json::parse(trace.chrome_json());
  BOOST_TEST(j["metadata"]["dropped"].get<size_t>() == total - 5);
  BOOST_TEST(j["metadata"]["max_events"].get<size_t>() == 5u);
  BOOST_TEST(j["metadata"]["events"].get<size_t>() == 5u);
}

BOOST_AUTO_TEST_CASE(nothing_is_recorded_without_a_recording_trace) {
  RingScope scope;
  Tensor y = ring_sum();
  y.realize();  // no Trace: nothing stamped or kept
  BOOST_TEST(!trace_timing());
  Trace trace;
  BOOST_TEST(trace.events().empty());
  trace.pause();
  BOOST_TEST(!trace_timing());
  ring_sum().realize();
  BOOST_TEST(trace.events().empty());
  trace.resume();
  Tensor z = ring_sum();  // its input realized while recording: one more run
  z.realize();
  BOOST_TEST(!trace.events().empty());
  BOOST_CHECK_THROW(Trace second, ConfigError);
  BOOST_CHECK_THROW(Trace(0), ConfigError);
}

BOOST_AUTO_TEST_CASE(chrome_json_has_one_named_track_per_queue) {
  RingScope scope;
  Tensor y = ring_sum();
  Trace trace;
  y.realize();
  std::vector<TraceEvent> events = trace.events();
  auto j = nlohmann::json::parse(trace.chrome_json());
  BOOST_TEST(j["metadata"]["ringrt_trace"].get<int>() == 1);
  BOOST_TEST(j["metadata"]["events"].get<size_t>() == events.size());
  std::map<int, std::string> names;  // tid -> thread_name
  size_t complete = 0, kernels = 0, copies = 0;
  for (const auto& e : j["traceEvents"]) {
    BOOST_TEST(e["pid"].get<int>() == 0);
    if (e["ph"] == "M" && e["name"] == "thread_name") names[e["tid"].get<int>()] = e["args"]["name"];
  }
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const TraceEvent& want = events.at(complete++);
    BOOST_TEST(names.at(e["tid"].get<int>()) == want.queue);
    BOOST_TEST(e["args"]["item"].get<size_t>() == want.item);
    BOOST_TEST(e["args"]["bytes"].get<int64_t>() == want.bytes);
    BOOST_TEST(e["dur"].get<double>() >= 0.0);
    BOOST_TEST(e["ts"].get<double>() == static_cast<double>(want.start_ns) / 1000.0);
    if (e["args"]["kind"] == "copy") {
      ++copies;
      BOOST_TEST(e["args"]["src"].get<std::string>() == want.src);
      BOOST_TEST(e["args"]["dst"].get<std::string>() == want.dst);
    } else {
      ++kernels;
      BOOST_TEST(e["args"]["kernel"].get<std::string>() == want.name);
    }
  }
  BOOST_TEST(complete == events.size());
  BOOST_TEST(kernels > 0u);
  BOOST_TEST(copies > 0u);
  BOOST_TEST(names.size() == 3u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
