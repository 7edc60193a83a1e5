// The cpu backend: virtual devices in one process, each with its own memory and an in-order queue
// (a worker thread). Kernels are C++ compiled by the host compiler and run on TBB; a peer copy is a
// memcpy on the destination's queue.
#pragma once

#include <memory>
#include <string>

#include "runtime/device/device.hpp"

namespace ringrt {

std::unique_ptr<Device> make_cpu_device(const std::string& name);
// Registers the "CPU" backend with the device registry (called by register_builtin_backends).
void register_cpu_backend();

}  // namespace ringrt
