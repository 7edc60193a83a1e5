#include "runtime/cli/memory_budget.hpp"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/errors.hpp"
#include "runtime/cli/experiment.hpp"
#include "runtime/cli/experiment_check.hpp"

namespace ringrt {
namespace {

// A "Key:   N kB" line of a /proc file, in bytes; nullopt when absent.
std::optional<int64_t> proc_kb(const char* path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) != 0) continue;
    std::istringstream fields(line.substr(key.size() + 1));
    int64_t kb = 0;
    if (fields >> kb) return kb * 1024;
  }
  return std::nullopt;
}

// What is left under resource limit `which` given `used` bytes; nullopt when unlimited or unreadable.
std::optional<int64_t> left_under(int which, std::optional<int64_t> used) {
  rlimit lim{};
  if (::getrlimit(which, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY || !used) return std::nullopt;
  return std::max<int64_t>(0, static_cast<int64_t>(lim.rlim_cur) - *used);
}

// The devices of this process (this rank's, under mpirun) in a device or tuple "(CPU:0, CPU:1)".
int64_t local_devices_of(const std::string& tuple) {
  int64_t n = 0;
  for (size_t start = tuple.front() == '(' ? 1 : 0; start < tuple.size();) {
    size_t end = tuple.find_first_of(",)", start);
    if (end == std::string::npos) end = tuple.size();
    std::string name = tuple.substr(start, end - start);
    name.erase(0, name.find_first_not_of(' '));
    if (!name.empty() && is_local_device(name)) ++n;
    start = end + 1;
  }
  return n;
}

// How many of the run's devices are this process's.
int64_t local_count(const ExperimentConfig& cfg) {
  return std::count_if(cfg.devices.begin(), cfg.devices.end(), [](const std::string& d) { return is_local_device(d); });
}

double gib(int64_t bytes) { return static_cast<double>(bytes) / static_cast<double>(int64_t{1} << 30); }

}  // namespace

std::optional<MemoryAvailable> memory_available() {
  std::optional<MemoryAvailable> best;
  auto consider = [&](std::optional<int64_t> bytes, const char* limit) {
    if (bytes && (!best || *bytes < best->bytes)) best = MemoryAvailable{*bytes, limit};
  };
  consider(proc_kb("/proc/meminfo", "MemAvailable"), "MemAvailable");
  consider(left_under(RLIMIT_AS, proc_kb("/proc/self/status", "VmSize")), "ulimit -v");
  consider(left_under(RLIMIT_DATA, proc_kb("/proc/self/status", "VmData")), "ulimit -d");
  return best;
}

MemoryNeed estimate_need(const ExperimentConfig& cfg, const std::vector<int64_t>& counts) {
  MemoryNeed need;
  need.device_is_host = cfg.backend == "cpu";
  // this process's devices only: under mpirun each rank holds its own devices' memory
  int64_t ndev = static_cast<int64_t>(cfg.devices.size()), size = itemsize(cfg.dtype);
  int64_t local = local_count(cfg);
  // the check's reference per element: the exact value in the dtype, and for floats the value and the
  // tolerance in double (experiment.cpp's Reference), plus the device's range read; kCheckChunk
  // elements at a time (check_result)
  int64_t check_per_element = 2 * size + (is_float(cfg.dtype) ? 16 : 0);
  int64_t staging = 0, check = 0;
  for (int64_t count : counts) {
    Schedule s = run_collective(cfg, collective_input_placeholder(cfg, count)).schedule();
    need.device += local * count * size;  // the input
    for (const CopyItem& c : s.copy_items) need.device += is_local_device(c.dst) ? c.bytes : 0;
    for (const KernelItem& k : s.kernel_items) need.device += local_devices_of(k.device) * k.numel * size;
    staging = std::max(staging, ndev * count * size);
    check = std::max(check, cfg.check ? std::min(count, kCheckChunk) * check_per_element : 0);
  }
  need.host = std::max(staging, check);
  // What the sum above leaves out, measured: at 64 MiB x 4 devices float32 (ulimit -v sweeps) the peak
  // was 2.09 GiB against 1.44 GiB estimated: the cpu allocator's cache of freed blocks by size, buffers
  // of the timed allreduce still held while the next is planned, and the process's own mappings.
  // Until those are modelled, the device buffers count 1.5 times, so a run near the limit is refused
  // up front rather than killed part way.
  need.device += need.device / 2;
  return need;
}

void check_fits(const ExperimentConfig& cfg, const std::vector<int64_t>& counts) {
  check_fits(cfg, counts, estimate_need(cfg, counts));
}

void check_fits(const ExperimentConfig& cfg, const std::vector<int64_t>& counts, const MemoryNeed& need) {
  std::optional<MemoryAvailable> avail = memory_available();
  if (!avail || need.total() <= avail->bytes) return;
  std::string what = counts.size() == 1 ? fmt::format("count {}", counts[0])
                                        : fmt::format("{} buckets of {} elements in all", counts.size(), [&] {
                                            int64_t n = 0;
                                            for (int64_t c : counts) n += c;
                                            return n;
                                          }());
  throw ResourceError(fmt::format(
      "out of host memory: {} x {} devices {} needs about {:.2f} GiB (device buffers {:.2f} GiB{}, host input and "
      "check "
      "{:.2f} GiB), {:.2f} GiB available ({}); refused before allocating: choose smaller {}",
      what, local_count(cfg), dtype_name(cfg.dtype), gib(need.total()), gib(need.device),
      need.device_is_host ? "" : " on the GPUs, not counted here", gib(need.host), gib(avail->bytes), avail->limit,
      cfg.form == SweepForm::sizes    ? "experiment.sizes"
      : cfg.form == SweepForm::counts ? "experiment.counts"
                                      : "experiment.buckets"));
}

}  // namespace ringrt
