// The Trace recorder and its Chrome trace-event JSON (runtime/api/trace.hpp).
#include "runtime/api/trace.hpp"

#include <fmt/format.h>

#include <cctype>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/files.hpp"
#include "runtime/api/devices.hpp"
#include "runtime/engine/trace_sink.hpp"

namespace ringrt {

struct Trace::State {
  mutable std::mutex mu;  // guards everything below
  size_t max_events = 0;
  std::chrono::steady_clock::time_point origin = std::chrono::steady_clock::now();
  bool recording = true;
  uint64_t runs = 0;
  size_t dropped = 0, untimed = 0;
  std::vector<TraceEvent> events;
};

// The Trace that exists, if any (Trace's friend: its State is private).
class TraceRecorder {
 public:
  static std::mutex mu;  // guards current
  static std::shared_ptr<Trace::State> current;
};
std::mutex TraceRecorder::mu;
std::shared_ptr<Trace::State> TraceRecorder::current;

namespace {

int64_t ns_since(std::chrono::steady_clock::time_point origin, std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t - origin).count();
}

// Queue names in natural order ("CPU:2" before "CPU:10"): digit runs compare as numbers.
bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t i2 = i, j2 = j;
      while (i2 < a.size() && std::isdigit(static_cast<unsigned char>(a[i2]))) ++i2;
      while (j2 < b.size() && std::isdigit(static_cast<unsigned char>(b[j2]))) ++j2;
      std::string x = a.substr(i, i2 - i), y = b.substr(j, j2 - j);
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = i2;
      j = j2;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}
}  // namespace

void record_trace_run(std::vector<TracedWork> work) {
  std::lock_guard<std::mutex> global(TraceRecorder::mu);
  if (!TraceRecorder::current) return;
  auto& s = *TraceRecorder::current;
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.recording) return;
  ++s.runs;
  for (TracedWork& w : work) {
    if (!w.times) {
      ++s.untimed;
      continue;
    }
    if (s.events.size() >= s.max_events) {
      ++s.dropped;
      continue;
    }
    w.event.run = s.runs;
    w.event.start_ns = ns_since(s.origin, w.times->start);
    w.event.end_ns = std::max(w.event.start_ns, ns_since(s.origin, w.times->end));
    s.events.push_back(std::move(w.event));
  }
}

Trace::Trace(size_t max_events) : s_(std::make_shared<State>()) {
  if (max_events == 0) throw ConfigError("a Trace keeps at least one event: max_events is 0");
  s_->max_events = max_events;
  std::lock_guard<std::mutex> global(TraceRecorder::mu);
  if (TraceRecorder::current) throw ConfigError("a Trace exists already: one records at a time per process");
  TraceRecorder::current = s_;
  set_trace_timing(true);
}

Trace::~Trace() {
  std::lock_guard<std::mutex> global(TraceRecorder::mu);
  set_trace_timing(false);
  TraceRecorder::current.reset();
}

void Trace::pause() {
  std::lock_guard<std::mutex> lock(s_->mu);
  s_->recording = false;
  set_trace_timing(false);
}

void Trace::resume() {
  std::lock_guard<std::mutex> lock(s_->mu);
  s_->recording = true;
  set_trace_timing(true);
}

bool Trace::recording() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  return s_->recording;
}

std::vector<TraceEvent> Trace::events() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  return s_->events;
}

size_t Trace::dropped() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  return s_->dropped;
}

size_t Trace::untimed() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  return s_->untimed;
}

size_t Trace::max_events() const { return s_->max_events; }

std::string Trace::chrome_json() const {
  using Json = nlohmann::ordered_json;
  std::lock_guard<std::mutex> lock(s_->mu);
  int pid = rank_info().rank;
  std::map<std::string, int, decltype(&natural_less)> tids(&natural_less);  // one per queue, in natural order
  for (const TraceEvent& e : s_->events) tids.emplace(e.queue, 0);
  int next = 0;
  for (auto& [queue, tid] : tids) tid = next++;
  Json events = Json::array();
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", pid},
                    {"tid", 0},
                    {"args", {{"name", fmt::format("ringrt rank {}", pid)}}}});
  for (const auto& [queue, tid] : tids) {
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", queue}}}});
    events.push_back(
        {{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"sort_index", tid}}}});
  }
  for (const TraceEvent& e : s_->events) {
    bool copy = e.kind == TraceEvent::Kind::copy;
    Json args = {
        {"item", e.item}, {"kind", copy ? "copy" : "kernel"}, {"bytes", e.bytes}, {"run", e.run}, {"deps", e.deps}};
    if (copy) {
      args["src"] = e.src;
      args["dst"] = e.dst;
    } else {
      args["kernel"] = e.name;
    }
    events.push_back({{"name", copy ? fmt::format("copy {} -> {}", e.src, e.dst) : e.name},
                      {"cat", copy ? "copy" : "kernel"},
                      {"ph", "X"},
                      {"pid", pid},
                      {"tid", tids.at(e.queue)},
                      {"ts", static_cast<double>(e.start_ns) / 1000.0},
                      {"dur", static_cast<double>(e.end_ns - e.start_ns) / 1000.0},
                      {"args", std::move(args)}});
  }
  Json j;
  j["traceEvents"] = std::move(events);
  j["displayTimeUnit"] = "ns";
  j["metadata"] = {{"ringrt_trace", 1},
                   {"rank", pid},
                   {"host", rank_info().host_name},
                   {"origin_ns", ns_since({}, s_->origin)},
                   {"events", s_->events.size()},
                   {"dropped", s_->dropped},
                   {"untimed", s_->untimed},
                   {"max_events", s_->max_events}};
  return j.dump() + "\n";
}

void Trace::write_chrome_json(const std::string& path) const { write_file(path, chrome_json()); }

}  // namespace ringrt
