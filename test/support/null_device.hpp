// A null device backend for planning tests: devices "NULL:0".."NULL:n-1" that record every kernel
// launch and device-to-device copy and run nothing. compile() wraps the kernel IR without calling a
// compiler, launch() and copy_from() complete at once; memory is zeroed host memory, so copy_in and
// copy_out work (a tensor's host data reaches the device), but no kernel computes anything: values
// read back from a null device are meaningless. Use it where a test realizes tensors only to inspect
// or count what a schedule runs (celerity's dry-run executor); tests of values run on CPU devices.
//
// Thread-safety: every method may be called from any thread; the log is guarded by a mutex.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ringrt::test {

// What a null device was asked to run, in submission order.
struct NullWork {
  enum class Kind { launch, copy };
  Kind kind;
  std::string device;  // the device it ran on: the launch's device, the copy's destination
  std::string from;    // copy: the source device; launch: empty
  std::string kernel;  // launch: the kernel's name; copy: empty
  size_t bytes = 0;    // copy: bytes copied; launch: 0
};

// The devices NULL:0 .. NULL:n-1 (1 <= n <= 16), registering the "NULL" backend on first use.
std::vector<std::string> null_devices(int n);
// Everything the null devices were asked to run since the last clear_null_log(), in order.
std::vector<NullWork> null_log();
void clear_null_log();

}  // namespace ringrt::test
