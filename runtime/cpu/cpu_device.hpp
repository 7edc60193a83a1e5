// The cpu backend: virtual devices in one process, each with its own memory and an in-order queue
// (a worker thread). Kernels are C++ compiled by the host compiler and run on TBB; a peer copy is a
// memcpy on the destination's queue.
#pragma once

#include <memory>
#include <string>

#include "runtime/device.hpp"

namespace ringrt {

std::unique_ptr<Device> make_cpu_device(const std::string& name);

}  // namespace ringrt
