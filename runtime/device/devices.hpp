// The device lists of the public API: which devices exist. Device names are "KIND:index".
#pragma once

#include <string>
#include <vector>

namespace ringrt {

// {"CPU:0", ..., "CPU:n-1"}: the cpu backend's virtual devices (CPU:0 .. CPU:n-1 exist from now on).
// Throws DeviceError for n < 1 or n > 1024.
std::vector<std::string> cpu_devices(int n);
// Every HIP GPU ("HIP:0", ...); empty when none is present or the HIP backend is not built. Throws
// DeviceError when the HIP runtime fails for another reason than having no GPU.
std::vector<std::string> hip_devices();

}  // namespace ringrt
