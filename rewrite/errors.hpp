// The one error family of ringrt. User errors (ConfigError, ShapeError, DeviceError) are distinct
// from internal ones (InternalError); CompileError and TimeoutError come from the toolchain and the
// executor. Every error is a std::runtime_error, so a caller can catch them all at once.
#pragma once

#include <stdexcept>
#include <string>

namespace ringrt {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// A bad YAML file, flag or environment value: the message names the file, line, column and key.
struct ConfigError : Error {
  using Error::Error;
};
// An impossible shape, axis or shard: the message names the op, the shapes and the axis.
struct ShapeError : Error {
  using Error::Error;
};
// An unknown device, or a failing device call: the message names the device and the call.
struct DeviceError : Error {
  using Error::Error;
};
// A kernel that did not compile: the message carries the kernel name and the compiler log.
struct CompileError : Error {
  using Error::Error;
};
// A schedule item that never completed: the message names the item and the device.
struct TimeoutError : Error {
  using Error::Error;
};
// A broken invariant inside ringrt (a bug, not bad input).
struct InternalError : Error {
  using Error::Error;
};

}  // namespace ringrt
