// The experiment runner. Design: plan apart from execution and checking. For every count the input is
// built and realized first (its copies to the devices are not timed); each iteration builds the lazy
// collective and realizes it, timed in the modes of experiment.timing (experiment_timing.cpp: latency
// waits for each call, pipelined enqueues them back to back under a DeviceClock); the last iteration's
// result is checked on every device against a reference the host computes in double (int64 for
// integers, wrapped to the type's width like the devices do). Gradient buckets (experiment.buckets)
// run steps: by default (experiment.in_place) persistent buckets take fresh host data each step
// (write_shards, waited for and timed apart) and are allreduced in place; out of place, fixed inputs are
// reduced into new tensors. Sharded buckets (experiment.sharding) are FSDP's steps: experiment_fsdp.cpp.
#include "runtime/cli/experiment.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <string_view>

#include "core/errors.hpp"
#include "core/hash.hpp"
#include "core/interrupt.hpp"
#include "core/wire_format.hpp"
#include "runtime/api/host_loop.hpp"
#include "runtime/cli/experiment_check.hpp"
#include "runtime/cli/memory_budget.hpp"

namespace ringrt {
namespace {
// Small integers keep every partial result exact in the type: integers and 16-bit floats.
bool small_integer_data(DType dt) { return !is_float(dt) || itemsize(dt) == 2; }

// Device d's input element i as stored in the dtype (input_value rounded or wrapped, as the input data).
StoredValue stored_input(const ExperimentConfig& cfg) {
  auto one = std::make_shared<HostBuffer>(cfg.dtype, Shape{1});
  return [&cfg, one](int64_t d, int64_t i) {
    one->set(0, input_value(cfg.dtype, cfg.op, d, i));
    return stored_at(*one, 0);
  };
}

// The elements of each device's result: reduce_scatter's chunk, else count.
int64_t result_numel(const ExperimentConfig& cfg, Collective k, int64_t count) {
  return k == Collective::reduce_scatter ? count / static_cast<int64_t>(cfg.devices.size()) : count;
}

// The reference of a collective over the wire (allreduce.wire): each element within the wire's bound of the
// exact reduction (core/wire_format.hpp sum_error_bound; n crossings, 2n with device groups: the hierarchical
// forms), plus the rounding of the result to its dtype; the values compared in double.
void widen_for_wire(const ExperimentConfig& cfg, Collective collective, int64_t count, size_t d, int64_t first,
                    const StoredValue& value, Reference& ref) {
  WireFormat w = parse_wire_format(cfg.settings.wire);
  auto n = static_cast<int64_t>(cfg.devices.size());
  int64_t crossings = cfg.settings.groups.empty() ? n : 2 * n;
  int64_t at = collective == Collective::reduce_scatter ? static_cast<int64_t>(d) * (count / n) + first : first;
  int64_t len = ref.exact.numel();
  if (ref.value.empty())
    for (int64_t k = 0; k < len; ++k) ref.value.push_back(ref.exact.get(k));
  ref.tolerance.resize(static_cast<size_t>(len), 0.0);
  std::vector<double> abs_sum(static_cast<size_t>(len), 0.0);
  double largest = 0;
  for (int64_t k = 0; k < len; ++k) {  // the bound's magnitude: sum |x_i| (sum), |prod x_i| (prod), max |x_i|
    double& m = abs_sum[static_cast<size_t>(k)];
    for (int64_t dev = 0; dev < n; ++dev)
      m = cfg.op == ReduceOp::sum ? m + std::abs(value(dev, at + k)) : std::max(m, std::abs(value(dev, at + k)));
    if (cfg.op == ReduceOp::prod) m = std::abs(ref.value[static_cast<size_t>(k)]);
    largest = std::max(largest, m);
  }
  // FP8: the largest block scale a crossing value meets, from the range's largest partial sum (<= sum |x|)
  double scale_max = w == WireFormat::bfloat16 ? 1.0 : 2 * largest / element_format(w).max;
  for (int64_t k = 0; k < len; ++k) {
    auto i = static_cast<size_t>(k);
    double bound =
        sum_error_bound(w, crossings, abs_sum[i], std::max(scale_max, std::ldexp(1.0, wire_min_scale_exponent(w)))) +
        epsilon(cfg.dtype) / 2 * std::abs(ref.value[i]);
    ref.tolerance[i] = std::max(ref.tolerance[i], bound);
  }
  ref.bitwise = false;
}

// The largest absolute and relative error of got's finite elements against want's values (check_result).
void add_errors(const Reference& want, const HostBuffer& got, ErrorStats& errors) {
  for (int64_t k = 0; k < got.numel(); ++k) {
    double v = want.value.empty() ? want.exact.get(k) : want.value[static_cast<size_t>(k)], g = got.get(k);
    if (!std::isfinite(v) || !std::isfinite(g)) continue;
    double err = std::abs(g - v);
    errors.max_abs = std::max(errors.max_abs, err);
    if (v != 0) errors.max_rel = std::max(errors.max_rel, err / std::abs(v));
  }
}

bool corrupt_for_tests() {  // test-only: see run_experiment's comment
  const char* v = std::getenv("RINGRT_TEST_CORRUPT");
  return v != nullptr && std::string_view(v) == "1";
}

}  // namespace

double micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

double input_value(DType dt, ReduceOp op, int64_t d, int64_t i) {
  uint64_t h = splitmix64(static_cast<uint64_t>(i) * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(d) + 1);
  if (op == ReduceOp::prod) {
    if (!small_integer_data(dt)) return 0.75 + static_cast<double>(h % 1001) / 2000.0;
    if (is_unsigned(dt)) return h % 2 ? 2 : 1;
    return h % 3 == 0 ? 1 : h % 3 == 1 ? -1 : 2;
  }
  if (small_integer_data(dt)) return is_unsigned(dt) ? static_cast<double>(h % 5) : static_cast<double>(h % 9) - 4;
  return (static_cast<double>(h % 20001) - 10000.0) / 3000.0;  // not exact in binary: rounding happens
}

// Device d's input data: a (1, count) row of input_value, rounded or wrapped into the dtype.
HostBuffer input_row(const ExperimentConfig& cfg, int64_t count, int64_t d) {
  HostBuffer row(cfg.dtype, {1, count});
  for (int64_t i = 0; i < count; ++i) {
    stop_if_interrupted(i, "making the input");
    row.set(i, input_value(cfg.dtype, cfg.op, d, i));
  }
  return row;
}

ReferenceFor collective_reference(const ExperimentConfig& cfg, Collective collective, int64_t count,
                                  StoredValue value) {
  // every device gets the same value: one range made serves them all
  bool same = collective == Collective::allreduce || collective == Collective::reduce ||
              collective == Collective::allgather || collective == Collective::broadcast;
  struct Last {
    size_t device = 0;
    int64_t first = -1, count = -1;
    Reference ref;
  };
  auto last = std::make_shared<Last>();
  ReferenceFor out;
  out.numel = result_numel(cfg, collective, count);
  out.range = [&cfg, collective, count, value = std::move(value), last, same](size_t d, int64_t first,
                                                                              int64_t len) -> const Reference& {
    if (last->first != first || last->count != len || (!same && last->device != d)) {
      last->first = -1;  // not valid while it is remade (collective_reference may throw Interrupted)
      last->ref = ringrt::collective_reference(collective_name(collective), cfg.dtype, cfg.op,
                                               static_cast<int64_t>(cfg.devices.size()), cfg.root, count,
                                               static_cast<int64_t>(d), first, len, value);
      if (wire_applies(cfg, collective)) widen_for_wire(cfg, collective, count, d, first, value, last->ref);
      last->device = d;
      last->first = first;
      last->count = len;
    }
    return last->ref;
  };
  return out;
}

ReferenceFor collective_reference(const ExperimentConfig& cfg, int64_t count) {
  return collective_reference(cfg, cfg.collective, count, stored_input(cfg));
}

int64_t check_result(const ExperimentConfig& cfg, const Tensor& result, const ReferenceFor& ref, int64_t chunk,
                     ErrorStats* errors) {
  std::vector<std::string> devs = result.devices();
  auto index = [&](const std::string& name) {
    return static_cast<size_t>(std::find(cfg.devices.begin(), cfg.devices.end(), name) - cfg.devices.begin());
  };
  struct Seen {
    int64_t elements = 0, wrong = 0;
  };
  std::map<std::string, Seen> seen;  // per local device with a result
  bool corrupt = corrupt_for_tests();
  result.read_local_shards(chunk, [&](const std::string& dev, int64_t first, const HostBuffer& part) {
    Seen& s = seen[dev];
    s.elements += part.numel();
    if (first + part.numel() > ref.numel) return;  // a result larger than expected: all wrong, below
    const Reference& want = ref.range(index(dev), first, part.numel());
    if (corrupt && first == 0 && dev == devs.back()) {  // test-only: see run_experiment's comment
      HostBuffer got = part;
      // a change no rounding hides: +1 is lost on a 16-bit float of 2048 or more; so is x + |x| near 0
      double v = is_float(got.dtype) ? got.get(0) : 0.0;
      is_float(got.dtype) ? got.set(0, v + std::max(1.0, std::abs(v))) : got.set_int(0, got.get_int(0) + 1);
      s.wrong += count_wrong(want, got);
    } else {
      s.wrong += count_wrong(want, part);
    }
    if (errors) add_errors(want, part, *errors);
  });
  int64_t wrong = 0;
  for (const auto& [dev, s] : seen) wrong += s.elements == ref.numel ? s.wrong : ref.numel;
  auto local = std::count_if(devs.begin(), devs.end(), [](const std::string& d) { return is_local_device(d); });
  if (ref.numel > 0 && static_cast<int64_t>(seen.size()) != local)  // a device without a result
    wrong += ref.numel;
  return sum_over_ranks(wrong);
}

bool wire_applies(const ExperimentConfig& cfg, Collective collective) {
  return cfg.settings.wire != "native" && collective_reduces(collective);
}

double bus_bytes(const ExperimentConfig& cfg, Collective collective, int64_t count) {
  int64_t bytes = wire_applies(cfg, collective)
                      ? wire_bytes(parse_wire_format(cfg.settings.wire), count, itemsize(cfg.dtype))
                      : count * itemsize(cfg.dtype);
  return static_cast<double>(bytes) * busbw_factor(collective, cfg.devices.size());
}

void check_row(const ExperimentConfig& cfg, ResultRow& row, const Tensor& result, const ReferenceFor& ref) {
  ErrorStats errors;
  row.wrong = check_result(cfg, result, ref, kCheckChunk, &errors);
  if (wire_applies(cfg, row.collective))  // every rank's devices
    row.max_abs_err = max_over_ranks(errors.max_abs), row.max_rel_err = max_over_ranks(errors.max_rel);
}

double busbw_factor(Collective collective, size_t ndev) {
  double n = static_cast<double>(ndev);
  if (ndev == 0) return 0.0;
  if (collective == Collective::broadcast || collective == Collective::reduce) return 1.0;
  return (collective == Collective::allreduce ? 2.0 : 1.0) * (n - 1) / n;
}

namespace {
// The time us of a call (step) moving bytes per device, bus_bytes weighted by the busbw factors.
Timed timed_of(double us, double bytes, double bus_bytes) {
  return {us, us > 0 ? bytes / us / 1e3 : 0.0, us > 0 ? bus_bytes / us / 1e3 : 0.0};
}
}  // namespace

ResultRow make_row(const ExperimentConfig& cfg, Collective collective, int64_t count, const Tensor& lazy,
                   const RowTimes& times) {
  ResultRow row;
  row.collective = collective;
  row.count = count;
  row.bytes = count * itemsize(cfg.dtype);
  row.type = std::string(dtype_name(cfg.dtype));
  row.redop = collective_reduces(collective) ? cfg.op_name : "none";  // as rccl-tests prints it
  std::vector<std::string> algos = lazy.algorithms();                 // no planning
  row.algo = algos.empty() ? "-" : fmt::format("{}", fmt::join(algos, "+"));
  double bytes = static_cast<double>(row.bytes), bus = bus_bytes(cfg, collective, count);
  std::optional<double> us = times.latency_us ? times.latency_us : times.pipelined_us;
  Timed main = timed_of(us.value_or(0.0), bytes, bus);
  row.time_us = main.time_us, row.algbw = main.algbw, row.busbw = main.busbw;
  row.timing = cfg.timing;
  row.timed = us.has_value();
  if (cfg.check && cfg.settings.wire != "native")  // the table's error columns: N/A until check_row measures them
    row.max_abs_err = row.max_rel_err = std::numeric_limits<double>::quiet_NaN();
  if (times.pipelined_us) row.pipelined = timed_of(*times.pipelined_us, bytes, bus);
  return row;
}

StepSummary step_summary(const ExperimentConfig& cfg, const std::vector<ResultRow>& rows, int64_t buckets,
                         const RowTimes& step) {
  StepSummary summary;
  double bus = 0;  // each row's bytes (that cross) weighted by its collective's busbw factor
  for (const ResultRow& r : rows) {
    summary.bytes += r.bytes;
    bus += bus_bytes(cfg, r.collective, r.count);
  }
  summary.buckets = buckets;
  summary.collectives = static_cast<int64_t>(rows.size());
  double bytes = static_cast<double>(summary.bytes);
  Timed main = timed_of(step.latency_us ? *step.latency_us : step.pipelined_us.value_or(0.0), bytes, bus);
  summary.time_us = main.time_us, summary.algbw = main.algbw, summary.busbw = main.busbw;
  summary.timing = cfg.timing;
  if (step.pipelined_us) summary.pipelined = timed_of(*step.pipelined_us, bytes, bus);
  return summary;
}

std::vector<HostBuffer> bucket_rows(const ExperimentConfig& cfg, int64_t count) {
  std::vector<HostBuffer> rows;
  for (int64_t r = 0; r <= static_cast<int64_t>(cfg.devices.size()); ++r) rows.push_back(input_row(cfg, count, r));
  return rows;
}

size_t row_of(size_t d, int step, size_t nrows) { return (d + static_cast<size_t>(step)) % nrows; }

double stored_at(const HostBuffer& b, int64_t i) {
  return is_float(b.dtype) ? b.get(i) : static_cast<double>(b.get_int(i));
}

StoredValue stored_rows(const std::vector<HostBuffer>& rows, int step) {
  return [&rows, step](int64_t d, int64_t i) {
    return stored_at(rows[row_of(static_cast<size_t>(d), step, rows.size())], i);
  };
}

namespace {

// Gradient buckets out of place (experiment.in_place: false): fixed inputs, and one step reduces every
// bucket once into a new tensor, in order (as DDP launches them).
void run_buckets_out_of_place(const ExperimentConfig& cfg, const std::vector<int64_t>& counts, const Tick& tick,
                              const FinishRow& finish_row, ExperimentResult& result) {
  check_fits(cfg, counts);  // every bucket is held at once
  std::vector<Tensor> inputs, outputs;
  for (int64_t count : counts) {
    inputs.push_back(make_allreduce_input(cfg, count));
    tick.poll();
  }
  StepTimer timer(cfg, counts.size(), tick);
  for (int step = 0; step < timer.steps(); ++step) {
    outputs.clear();
    timer.begin(step);
    for (size_t b = 0; b < inputs.size(); ++b) outputs.push_back(allreduce_of(cfg, inputs[b]));
    timer.realize_all(outputs);
    timer.end();
  }
  std::vector<ResultRow> rows;
  for (size_t b = 0; b < inputs.size(); ++b) {
    ResultRow row = make_row(cfg, Collective::allreduce, counts[b], allreduce_of(cfg, inputs[b]), timer.collective(b));
    row.bucket = static_cast<int64_t>(b);
    if (cfg.check) check_row(cfg, row, outputs[b], collective_reference(cfg, counts[b]));
    tick.poll();
    rows.push_back(row);
    finish_row(std::move(row));
  }
  result.step = step_summary(cfg, rows, static_cast<int64_t>(rows.size()), timer.step());
}

// Gradient buckets in place (experiment.in_place, DDP's form): one persistent (ndev, count) tensor per
// bucket, sharded on axis 0. Every step writes each device's fresh gradients into every bucket
// (Tensor::write_shards, waited for and timed apart as write_us), then allreduces each bucket in place,
// in order (allreduce_in_place + realize, timed per bucket and per step: StepTimer). The host data is
// made before timing; the last step's buckets are checked against the host reduction of the rows that
// step wrote.
void run_buckets_in_place(const ExperimentConfig& cfg, const std::vector<int64_t>& counts, const Tick& tick,
                          const FinishRow& finish_row, ExperimentResult& result) {
  check_fits(cfg, counts);  // every bucket is held at once
  size_t ndev = cfg.devices.size();
  std::vector<std::vector<HostBuffer>> rows;
  std::vector<Tensor> buckets;
  for (int64_t count : counts) {
    rows.push_back(bucket_rows(cfg, count));
    buckets.push_back(Tensor::full({static_cast<int64_t>(ndev), count}, 0.0, cfg.dtype, cfg.devices.at(0))
                          .shard(cfg.devices, 0)
                          .contiguous()
                          .realize());  // zeros made on each device, no copy
    tick.poll();
  }
  StepTimer timer(cfg, counts.size(), tick);
  double write_us = 0;  // the writes of the timed steps, each waited for (on GPUs they are queued)
  int writes = 0;
  int last = timer.steps() - 1;
  for (int step = 0; step <= last; ++step) {
    auto write_start = Clock::now();
    for (size_t b = 0; b < buckets.size(); ++b) {
      std::vector<HostBuffer> shards(ndev);  // moved in and back out: no host copy
      for (size_t d = 0; d < ndev; ++d) shards[d] = std::move(rows[b][row_of(d, step, ndev + 1)]);
      buckets[b].write_shards(shards);
      for (size_t d = 0; d < ndev; ++d) rows[b][row_of(d, step, ndev + 1)] = std::move(shards[d]);
    }
    for (const Tensor& bucket : buckets) bucket.synchronize();
    if (timer.timed(step)) write_us += micros(Clock::now() - write_start), ++writes;
    timer.begin(step);
    std::vector<Tensor> ys;
    for (Tensor& bucket : buckets) ys.push_back(bucket.allreduce_in_place(cfg.op));
    timer.realize_all(ys);
    timer.end();
  }
  std::vector<ResultRow> rows_out;
  for (size_t b = 0; b < buckets.size(); ++b) {
    ResultRow row = make_row(cfg, Collective::allreduce, counts[b], allreduce_of(cfg, buckets[b]), timer.collective(b));
    row.bucket = static_cast<int64_t>(b);
    if (cfg.check) {  // the reference from the host rows the last step wrote, never from the devices
      check_row(cfg, row, buckets[b],
                collective_reference(cfg, Collective::allreduce, counts[b], stored_rows(rows[b], last)));
    }
    tick.poll();
    rows_out.push_back(row);
    finish_row(std::move(row));
  }
  result.step = step_summary(cfg, rows_out, static_cast<int64_t>(rows_out.size()), timer.step());
  result.step->write_us = write_us / writes;
}

// The sweep of counts: for each, `warmup` untimed and `iters` timed allreduces, then its row. Every
// count's estimated memory is checked before the first one runs, and again just before it runs (what
// the earlier counts left behind counts then): one that does not fit is refused before anything of it
// is allocated (check_fits: ResourceError); each count's tensors are gone before the next one starts.
void run_counts(const ExperimentConfig& cfg, const std::vector<int64_t>& counts, const Tick& tick,
                const FinishRow& finish_row) {
  std::vector<MemoryNeed> needs;  // planned once per count; checked now and again when its turn comes
  for (int64_t count : counts) {
    needs.push_back(estimate_need(cfg, {collective_count(cfg, count)}));
    check_fits(cfg, {count}, needs.back());
  }
  for (size_t c = 0; c < counts.size(); ++c) {
    int64_t count = collective_count(cfg, counts[c]);
    check_fits(cfg, {count}, needs[c]);
    Tensor x = make_collective_input(cfg, count), y = x;
    auto call = [&] { return run_collective(cfg, x); };
    RowTimes times = time_calls(cfg, call, y, tick);
    ResultRow row = make_row(cfg, cfg.collective, count, run_collective(cfg, x), times);
    // the reference starts from the host data again, not from anything the devices computed
    if (cfg.check) check_row(cfg, row, y, collective_reference(cfg, count));
    finish_row(std::move(row));
  }
}

}  // namespace

int64_t ExperimentResult::wrong() const {
  int64_t w = 0;
  for (const ResultRow& r : rows) w += std::max<int64_t>(r.wrong, 0);
  return w;
}

Tensor make_allreduce_input(const ExperimentConfig& cfg, int64_t count) {
  // each device's row goes straight to it (no whole copy on the first device to shard from)
  std::vector<HostBuffer> rows;
  for (int64_t d = 0; d < static_cast<int64_t>(cfg.devices.size()); ++d) rows.push_back(input_row(cfg, count, d));
  Tensor x = Tensor::from_shards(std::move(rows), cfg.devices, 0);
  x.realize();
  return x;
}

Tensor allreduce_input_placeholder(const ExperimentConfig& cfg, int64_t count) {
  return Tensor::placeholder({static_cast<int64_t>(cfg.devices.size()), count}, cfg.dtype, cfg.devices, 0);
}

Tensor allreduce_of(const ExperimentConfig& cfg, const Tensor& input) { return input.reduce(cfg.op, {0}); }

bool collective_reduces(Collective collective) {
  return collective == Collective::allreduce || collective == Collective::reduce_scatter ||
         collective == Collective::reduce;
}

int64_t collective_count(const ExperimentConfig& cfg, int64_t count) {
  Collective k = cfg.collective;
  if (k != Collective::reduce_scatter && k != Collective::allgather && k != Collective::alltoall) return count;
  int64_t n = static_cast<int64_t>(cfg.devices.size());
  if (cfg.sharding != "no_shard") return (count + n - 1) / n * n;  // FSDP pads its flat parameters up
  return std::max(n, count / n * n);
}

namespace {
// Device d's input rows for cfg.collective: a (1, count) row (allreduce, broadcast, reduce), a flat
// (count) buffer (reduce_scatter, alltoall) or its (count / n) shard (allgather).
Shape collective_local_shape(const ExperimentConfig& cfg, int64_t count) {
  Collective k = cfg.collective;
  if (k == Collective::reduce_scatter || k == Collective::alltoall) return {count};
  if (k == Collective::allgather) return {count / static_cast<int64_t>(cfg.devices.size())};
  return {1, count};
}
}  // namespace

Tensor make_collective_input(const ExperimentConfig& cfg, int64_t count) {
  Shape local = collective_local_shape(cfg, count);
  std::vector<HostBuffer> rows;
  for (int64_t d = 0; d < static_cast<int64_t>(cfg.devices.size()); ++d) {
    rows.push_back(input_row(cfg, prod(local), d));
    rows.back().shape = local;
  }
  Tensor x = Tensor::from_shards(std::move(rows), cfg.devices, 0);
  x.realize();
  return x;
}

Tensor collective_input_placeholder(const ExperimentConfig& cfg, int64_t count) {
  Shape shape = collective_local_shape(cfg, count);
  shape[0] *= static_cast<int64_t>(cfg.devices.size());
  return Tensor::placeholder(shape, cfg.dtype, cfg.devices, 0);
}

Tensor run_collective(const ExperimentConfig& cfg, const Tensor& input) {
  switch (cfg.collective) {
    case Collective::reduce_scatter:
      return input.reduce_scatter(cfg.op, 0);
    case Collective::allgather:
      return input.allgather();
    case Collective::alltoall:
      return input.alltoall();
    case Collective::broadcast:
      return input.broadcast(cfg.root, cfg.devices);
    case Collective::reduce:
      return input.reduce_to(cfg.root, cfg.op);
    case Collective::allreduce:
      break;
  }
  return allreduce_of(cfg, input);
}

ExperimentResult run_experiment(const ExperimentConfig& cfg, const ExperimentObserver& observer) {
  ScopedSettings scope(cfg.settings);
  ExperimentResult result;
  std::vector<int64_t> counts = cfg.sweep_counts();
  bool sharded = cfg.form == SweepForm::buckets && cfg.sharding != "no_shard";  // FSDP steps
  result.planned = sharded ? fsdp_collectives_per_step(cfg) : counts.size();    // the rows
  int64_t total = realizes_per_row(cfg) * static_cast<int64_t>(result.planned), done = 0;
  struct Stop {};  // thrown by check_stop when observer.stop asks for it
  auto check_stop = [&] {
    if (observer.stop && observer.stop()) throw Stop{};
  };
  Tick tick{[&] {
              if (observer.progress) observer.progress(++done, total);
              check_stop();
            },
            observer.last_iteration, check_stop};
  auto finish_row = [&](ResultRow row) {
    if (observer.row) observer.row(row);
    result.rows.push_back(std::move(row));
  };
  try {
    check_stop();
    if (cfg.form != SweepForm::buckets) {
      run_counts(cfg, counts, tick, finish_row);
    } else if (sharded) {  // FSDP units: gathers and reduce-scatters (experiment_fsdp.cpp)
      run_fsdp_steps(cfg, tick, finish_row, result);
    } else if (cfg.in_place) {  // gradient buckets: one step allreduces every bucket once, in order (as DDP)
      run_buckets_in_place(cfg, counts, tick, finish_row, result);
    } else {
      run_buckets_out_of_place(cfg, counts, tick, finish_row, result);
    }
    check_stop();  // a stop asked for during the last row's check still stops the run (rows all kept)
  } catch (const Stop&) {
    result.stopped = true;
  } catch (const Interrupted&) {  // a compile killed, or a row's host loop left, on a stop request
    result.stopped = true;
  }
  return result;
}

}  // namespace ringrt
