// Links against an installed ringrt through find_package(ringrt CONFIG) and <ringrt/ringrt.hpp>, and
// uses it as a user would: shards a tensor over three cpu devices, allreduces it (its schedule holds one
// allreduce) and checks the sums against host arithmetic. It sees the installed public headers only.
#include <cstdio>
#include <ringrt/ringrt.hpp>
#include <string>
#include <vector>

int main() {
  const std::vector<std::string> expected = {"CPU:0", "CPU:1", "CPU:2"};
  const std::vector<std::string> devices = ringrt::cpu_devices(3);
  if (devices != expected) {
    std::fprintf(stderr, "consumer: ringrt::cpu_devices(3) returned %zu devices, not CPU:0..CPU:2\n", devices.size());
    return 1;
  }
  try {
    // rows r = 0, 1, 2 hold r * 10 + column; one row per device; the column sums are 30 + 3 * column
    std::vector<float> data;
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 5; ++c) data.push_back(static_cast<float>(r * 10 + c));
    ringrt::Tensor x = ringrt::Tensor::from_vector(data, {3, 5}).shard(devices, 0);
    ringrt::Tensor total = x.sum({0});  // over the sharded axis: an allreduce
    ringrt::Schedule plan = total.schedule();
    if (plan.algorithms.size() != 1 || plan.kernel_items.empty() || plan.source(0, "cpu").empty()) {
      std::fprintf(stderr, "consumer: the schedule holds %zu allreduces and %zu kernels, expected 1 and some\n",
                   plan.algorithms.size(), plan.kernel_items.size());
      return 1;
    }
    std::vector<float> sums = total.to_vector<float>();
    for (int c = 0; c < 5; ++c)
      if (sums.size() != 5 || sums[static_cast<size_t>(c)] != static_cast<float>(30 + 3 * c)) {
        std::fprintf(stderr, "consumer: column %d sums to %g, expected %d\n", c,
                     sums.size() == 5 ? sums[static_cast<size_t>(c)] : -1.0, 30 + 3 * c);
        return 1;
      }
  } catch (const ringrt::Error& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
  std::printf("consumer: ok\n");
  return 0;
}
