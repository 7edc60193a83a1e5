// Links against an installed ringrt through find_package(ringrt CONFIG) and <ringrt/ringrt.hpp>.
#include <ringrt/ringrt.hpp>

#include <cstdio>
#include <string>
#include <vector>

int main() {
  const std::vector<std::string> expected = {"CPU:0", "CPU:1", "CPU:2"};
  const std::vector<std::string> devices = ringrt::cpu_devices(3);
  if (devices != expected) {
    std::fprintf(stderr, "consumer: ringrt::cpu_devices(3) returned %zu devices, not CPU:0..CPU:2\n", devices.size());
    return 1;
  }
  std::printf("consumer: ok\n");
  return 0;
}
