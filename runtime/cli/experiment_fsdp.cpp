// FSDP's sharded steps (experiment.sharding: shard_grad_op | full_shard; reference: PyTorch
// FullyShardedDataParallel and its ShardingStrategy, Zhao et al. 2023 "PyTorch FSDP"; ZeRO stage 3).
// experiment.buckets are the FSDP units' flat parameters, listed in backward order as DDP's buckets
// are, the last one the root unit (with a per-block wrap policy: the embeddings and the final norm).
// Each unit's flat parameter is padded with zeros to a multiple of the device count (as FSDP pads) and
// stays sharded: device d holds part d. The gradients are written from the host each step (timed apart,
// as DDP's buckets: ringrt runs the communication, not the model). One step, communication only:
//   forward, root first:        allgather every unit's parameters (freed after use);
//   backward, in list order:    full_shard: allgather the unit's parameters again (not the root's:
//                               FSDP keeps the root's after forward); then reduce-scatter its gradients
//                               into the device's gradient shard.
// shard_grad_op keeps the gathered parameters from forward to backward, so it gathers once.
// Simplifications: no compute, so no overlap of a unit's gather with the previous unit's compute
// (FSDP's prefetch); collectives run one after another and each is timed alone. The optimizer step is
// local to the shards and communicates nothing. Memory per device: every unit's full gradient (the
// host writes land there), the parameter and gradient shards, one gathered unit at a time.
#include <algorithm>
#include <cstring>
#include <optional>

#include "runtime/cli/experiment_check.hpp"
#include "runtime/cli/memory_budget.hpp"

namespace ringrt {
namespace {

// One collective of a step: its kind, phase and unit (index in experiment.buckets).
struct StepCollective {
  Collective kind;    // allgather | reduce_scatter
  std::string phase;  // fwd | bwd
  size_t unit = 0;
};

std::vector<StepCollective> step_plan(const ExperimentConfig& cfg) {
  size_t units = cfg.counts.size(), root = units - 1;
  std::vector<StepCollective> plan;
  for (size_t u = units; u-- > 0;) plan.push_back({Collective::allgather, "fwd", u});
  for (size_t u = 0; u < units; ++u) {
    if (cfg.sharding == "full_shard" && u != root) plan.push_back({Collective::allgather, "bwd", u});
    plan.push_back({Collective::reduce_scatter, "bwd", u});
  }
  return plan;
}

// One FSDP unit on the devices.
struct Unit {
  int64_t count;                      // elements of the flat parameter, padded to a multiple of ndev
  HostBuffer params_host;             // (count): the parameters, zero-padded
  Tensor params;                      // (count) sharded on axis 0: device d holds part d
  std::vector<HostBuffer> grad_rows;  // ndev + 1 gradient rows (bucket_rows), each (count), zero-padded
  Tensor grads;                       // (ndev * count) sharded on axis 0: device d's whole gradient
};

// input_row(cfg, count_padded, r) as a flat (count_padded) buffer whose elements from `count` on are zero.
HostBuffer padded_row(const ExperimentConfig& cfg, int64_t count, int64_t count_padded, int64_t r) {
  HostBuffer row = input_row(cfg, count_padded, r);
  row.shape = {count_padded};
  size_t item = static_cast<size_t>(itemsize(cfg.dtype));
  std::fill(row.bytes.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(count) * item), row.bytes.end(),
            std::byte{0});
  return row;
}

// The parameters of unit u (input data of a device index no gradient row uses) and its zero gradients,
// placed on the devices.
Unit make_unit(const ExperimentConfig& cfg, size_t u, int64_t count) {
  int64_t n = static_cast<int64_t>(cfg.devices.size()), count_padded = collective_count(cfg, count);
  HostBuffer params_host = padded_row(cfg, count, count_padded, n + 1 + static_cast<int64_t>(u));
  int64_t part = count_padded / n, item = itemsize(cfg.dtype);
  std::vector<HostBuffer> parts;
  for (int64_t d = 0; d < n; ++d) {
    HostBuffer p(cfg.dtype, {part});
    std::memcpy(p.bytes.data(), params_host.bytes.data() + d * part * item, static_cast<size_t>(part * item));
    parts.push_back(std::move(p));
  }
  Tensor params = Tensor::from_shards(std::move(parts), cfg.devices, 0);
  params.realize();
  std::vector<HostBuffer> rows;
  for (int64_t r = 0; r <= n; ++r) rows.push_back(padded_row(cfg, count, count_padded, r));
  Tensor grads = Tensor::full({n * count_padded}, 0.0, cfg.dtype, cfg.devices.at(0)).shard(cfg.devices, 0).contiguous();
  grads.realize();  // zeros made on each device, no copy
  return Unit{count_padded, std::move(params_host), std::move(params), std::move(rows), std::move(grads)};
}

// Refuses a run whose gradients, shards, one gathered unit (a checked pipelined step: every gather of
// the step, held until the step has run) and host rows do not fit (check_fits).
void check_units_fit(const ExperimentConfig& cfg, const std::vector<int64_t>& counts) {
  ExperimentConfig scatter = cfg, gather = cfg;
  scatter.collective = Collective::reduce_scatter, gather.collective = Collective::allgather;
  MemoryNeed need = estimate_need(scatter, counts);  // every unit's gradients and their reduce-scatter
  std::vector<int64_t> gathered{*std::max_element(counts.begin(), counts.end())};
  if (cfg.check && times_pipelined(cfg)) {
    gathered.clear();
    for (const StepCollective& c : step_plan(cfg))
      if (c.kind == Collective::allgather) gathered.push_back(counts[c.unit]);
  }
  need.device += estimate_need(gather, gathered).device;
  int64_t all = 0;
  for (int64_t c : counts) all += c;
  int64_t rows = static_cast<int64_t>(cfg.devices.size()) + 2;  // the gradient rows and the parameters
  need.host += rows * all * itemsize(cfg.dtype);
  check_fits(cfg, counts, need);
}

// The stored values of a host buffer, as StoredValue reads them (device d's element i at d * stride + i).
StoredValue stored_in(const HostBuffer& b, int64_t stride) {
  return [&b, stride](int64_t d, int64_t i) { return stored_at(b, d * stride + i); };
}

// Writes every unit's gradient rows of this step into its persistent gradients, and waits for the
// writes (on GPUs they are staged and queued).
void write_gradients(std::vector<Unit>& units, int step, size_t ndev) {
  for (Unit& unit : units) {
    std::vector<HostBuffer> shards(ndev);  // moved in and back out: no host copy
    for (size_t d = 0; d < ndev; ++d) shards[d] = std::move(unit.grad_rows[row_of(d, step, ndev + 1)]);
    unit.grads.write_shards(shards);
    for (size_t d = 0; d < ndev; ++d) unit.grad_rows[row_of(d, step, ndev + 1)] = std::move(shards[d]);
  }
  for (const Unit& unit : units) unit.grads.synchronize();
}

// The lazy collective c of a step: the unit's parameters gathered, or its gradients reduce-scattered.
Tensor step_collective(const ExperimentConfig& cfg, const StepCollective& c, const Unit& unit) {
  return c.kind == Collective::allgather ? unit.params.allgather() : unit.grads.reduce_scatter(cfg.op, 0);
}

// #wrong of the realized collective c of step `step`, from the host data: the gathered parameters, or
// the reduction of the gradient rows that step wrote, each device's part.
// The step's collective against its host reference: the wrong elements over every rank; the wire's errors of
// a reduce_scatter (allreduce.wire) into *errors.
int64_t check_step_collective(const ExperimentConfig& cfg, const StepCollective& c, const Unit& unit, int step,
                              const Tensor& got, ErrorStats* errors) {
  size_t ndev = cfg.devices.size();
  if (c.kind == Collective::allgather)
    return check_result(cfg, got,
                        collective_reference(cfg, Collective::allgather, unit.count,
                                             stored_in(unit.params_host, unit.count / static_cast<int64_t>(ndev))));
  return check_result(
      cfg, got, collective_reference(cfg, Collective::reduce_scatter, unit.count, stored_rows(unit.grad_rows, step)),
      kCheckChunk, errors);
}

}  // namespace

size_t fsdp_collectives_per_step(const ExperimentConfig& cfg) { return step_plan(cfg).size(); }

void run_fsdp_steps(const ExperimentConfig& cfg, const Tick& tick, const FinishRow& finish_row,
                    ExperimentResult& result) {
  size_t ndev = cfg.devices.size();
  std::vector<int64_t> counts;
  for (int64_t c : cfg.counts) counts.push_back(collective_count(cfg, c));  // padded to the devices
  check_units_fit(cfg, counts);
  std::vector<Unit> units;
  for (size_t u = 0; u < cfg.counts.size(); ++u) units.push_back(make_unit(cfg, u, cfg.counts[u]));
  std::vector<StepCollective> plan = step_plan(cfg);
  std::vector<int64_t> wrong(plan.size(), -1);
  std::vector<ErrorStats> errors(plan.size());                   // the wire's (allreduce.wire): reduce_scatter rows
  std::vector<std::optional<Tensor>> grad_shards(units.size());  // the gradient shards, kept as FSDP keeps them
  // The last step's results, checked once it has run: a pipelined step is not waited for collective by
  // collective (a latency step's are checked as they come: one gathered unit held at a time)
  std::vector<std::optional<Tensor>> held;
  StepTimer timer(cfg, plan.size(), tick);
  double write_us = 0;
  int writes = 0, last = timer.steps() - 1;
  for (int step = 0; step <= last; ++step) {
    auto write_start = Clock::now();
    write_gradients(units, step, ndev);
    if (timer.timed(step)) write_us += micros(Clock::now() - write_start), ++writes;
    bool hold = step == last && cfg.check && timer.pipelined(step);
    timer.begin(step);
    for (size_t i = 0; i < plan.size(); ++i) {
      const Unit& unit = units[plan[i].unit];
      Tensor y = step_collective(cfg, plan[i], unit);
      timer.realize(i, y);
      if (hold) held.push_back(y);
      if (step == last && cfg.check && !hold) wrong[i] = check_step_collective(cfg, plan[i], unit, step, y, &errors[i]);
      if (plan[i].kind == Collective::reduce_scatter) grad_shards[plan[i].unit] = y;
    }
    timer.end();
  }
  for (size_t i = 0; i < held.size(); ++i) {  // not timed
    wrong[i] = check_step_collective(cfg, plan[i], units[plan[i].unit], last, *held[i], &errors[i]);
    held[i].reset();  // each gathered unit freed once checked
  }
  std::vector<ResultRow> rows;
  for (size_t i = 0; i < plan.size(); ++i) {
    const Unit& unit = units[plan[i].unit];
    ResultRow row = make_row(cfg, plan[i].kind, unit.count, step_collective(cfg, plan[i], unit), timer.collective(i));
    row.phase = plan[i].phase;
    row.bucket = static_cast<int64_t>(plan[i].unit);
    row.wrong = wrong[i];
    if (wire_applies(cfg, row.collective) && wrong[i] >= 0)  // every rank's devices
      row.max_abs_err = max_over_ranks(errors[i].max_abs), row.max_rel_err = max_over_ranks(errors[i].max_rel);
    rows.push_back(row);
    finish_row(std::move(row));
  }
  result.step = step_summary(cfg, rows, static_cast<int64_t>(units.size()), timer.step());
  result.step->write_us = write_us / writes;
}

}  // namespace ringrt
