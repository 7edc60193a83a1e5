// How the experiment runner times its calls (experiment.timing, run_experiment in experiment.hpp), as
// nccl-tests times them. On GPUs realize() returns once the work is enqueued, so a host clock around it
// times the enqueue only: the latency mode waits for every call (Tensor::synchronize) inside the timed
// region, and the pipelined mode enqueues the timed calls back to back and reads the time on the
// devices' clocks (DeviceClock), from a marker before the first to one after the last. On the cpu backend
// realize() runs the work before it returns, so both modes measure the calls run one after another.
// Neither times the warm-up: it is waited for (ringrt::synchronize) before the first timed call.
#include <algorithm>
#include <numeric>

#include "runtime/cli/experiment_check.hpp"

namespace ringrt {

double median_of(std::vector<double> values) {
  if (values.empty()) return 0.0;
  size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  double lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

bool times_latency(const ExperimentConfig& cfg) { return cfg.timing != "pipelined"; }
bool times_pipelined(const ExperimentConfig& cfg) { return cfg.timing != "latency"; }

int64_t realizes_per_row(const ExperimentConfig& cfg) {
  bool sweep = cfg.form != SweepForm::buckets;  // timed_blocks: sweeps only
  int64_t blocks = times_pipelined(cfg) ? (sweep ? std::max(1, cfg.timed_blocks) : 1) : 0;
  return cfg.warmup + int64_t{cfg.iters} * ((times_latency(cfg) ? 1 : 0) + blocks);
}

std::vector<std::string> clock_devices(const ExperimentConfig& cfg) {
  std::vector<std::string> out;
  std::copy_if(cfg.devices.begin(), cfg.devices.end(), std::back_inserter(out),
               [](const std::string& d) { return is_local_device(d); });
  return out;
}

RowTimes time_calls(const ExperimentConfig& cfg, const std::function<Tensor()>& make, Tensor& y, const Tick& tick) {
  int64_t calls = realizes_per_row(cfg), call = 0;
  // one call: its host time, from before realize() to after it (and its wait, with `wait`)
  auto one = [&](bool wait) {
    y = make();
    bool last = ++call == calls;
    if (last) tick.last(true);
    auto t0 = Clock::now();
    y.realize();
    if (wait) y.synchronize();
    double us = micros(Clock::now() - t0);
    if (last) tick.last(false);
    tick();
    return us;
  };
  for (int it = 0; it < cfg.warmup; ++it) one(false);
  synchronize();  // the warm-up has run: no timed call waits for it
  RowTimes times;
  if (times_latency(cfg)) {
    double total = 0;
    for (int it = 0; it < cfg.iters; ++it) total += one(true);
    times.latency_us = total / cfg.iters;
  }
  if (times_pipelined(cfg)) {
    std::vector<double> means;  // per block: device seconds over the block / iters, in microseconds
    for (int b = 0; b < std::max(1, cfg.timed_blocks); ++b) {
      synchronize();  // the queues idle when the clock starts: it times this block alone
      DeviceClock clock(clock_devices(cfg));
      for (int it = 0; it < cfg.iters; ++it) one(false);
      means.push_back(clock.stop() * 1e6 / cfg.iters);
    }
    times.pipelined_us = median_of(std::move(means));
  }
  return times;
}

StepTimer::StepTimer(const ExperimentConfig& cfg, size_t collectives, const Tick& tick)
    : cfg_(cfg), tick_(tick), latency_us_(collectives, 0.0) {}

int StepTimer::steps() const {
  return cfg_.warmup + cfg_.iters * ((times_latency(cfg_) ? 1 : 0) + (times_pipelined(cfg_) ? 1 : 0));
}

bool StepTimer::timed(int step) const { return step >= cfg_.warmup; }

bool StepTimer::pipelined(int step) const {
  return timed(step) && (!times_latency(cfg_) || step >= cfg_.warmup + cfg_.iters);
}

void StepTimer::begin(int step) {
  step_ = step;
  if (step == cfg_.warmup) synchronize();  // the warm-up steps have run: no timed collective waits for them
  if (!pipelined(step)) return;
  synchronize();  // the host writes and the steps before: the clock times this step's collectives alone
  clock_.emplace(clock_devices(cfg_));
}

void StepTimer::realize(size_t i, Tensor& y) {
  bool last = step_ == steps() - 1, latency = timed(step_) && !pipelined(step_);
  if (last) tick_.last(true);
  auto t0 = Clock::now();
  y.realize();
  if (latency) {
    y.synchronize();
    latency_us_.at(i) += micros(Clock::now() - t0);
  }
  if (last) tick_.last(false);
  tick_();
}

void StepTimer::realize_all(std::vector<Tensor>& ys) {
  // the last warm-up step before pipelined steps realizes the buckets together, as those will: their one
  // program is built there, not inside the first pipelined step's clock (with one warm-up step only, the
  // buckets' own programs, which latency steps and the checks use, come first)
  if (step_ == cfg_.warmup - 1 && cfg_.warmup >= 2 && times_pipelined(cfg_)) {
    Tensor::realize_all(ys);
    for (size_t i = 0; i < ys.size(); ++i) tick_();
    return;
  }
  if (!pipelined(step_)) {
    for (size_t i = 0; i < ys.size(); ++i) realize(i, ys[i]);
    return;
  }
  bool last = step_ == steps() - 1;
  if (last) tick_.last(true);
  Tensor::realize_all(ys);
  if (last) tick_.last(false);
  for (size_t i = 0; i < ys.size(); ++i) tick_();
}

void StepTimer::end() {
  if (!clock_) return;
  pipelined_us_ += clock_->stop() * 1e6;
  clock_.reset();
}

RowTimes StepTimer::collective(size_t i) const {
  RowTimes t;
  if (times_latency(cfg_)) t.latency_us = latency_us_.at(i) / cfg_.iters;
  return t;
}

RowTimes StepTimer::step() const {
  RowTimes t;
  if (times_latency(cfg_)) t.latency_us = std::accumulate(latency_us_.begin(), latency_us_.end(), 0.0) / cfg_.iters;
  if (times_pipelined(cfg_)) t.pipelined_us = pipelined_us_ / cfg_.iters;
  return t;
}

}  // namespace ringrt
