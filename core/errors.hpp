// The one error family of ringrt. User errors (UserError: ConfigError, ShapeError, DeviceError,
// IOError, ResourceError) say what to change in the input; InternalError is a bug in ringrt; CompileError and
// TimeoutError come from the toolchain and the executor. Every error is a std::runtime_error, so a
// caller can catch them all at once. The `ringrt` program exits 2 for a UserError, 128 + the signal
// for Interrupted, 3 for the rest.
#pragma once

#include <stdexcept>
#include <string>

namespace ringrt {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Bad input: a request that cannot be served as asked. Catch this to tell users from bugs.
struct UserError : Error {
  using Error::Error;
};
// A bad YAML file, flag or environment value: the message names the file, line, column and key.
struct ConfigError : UserError {
  using UserError::UserError;
};
// An impossible shape, axis or shard: the message names the op, the shapes and the axis.
struct ShapeError : UserError {
  using UserError::UserError;
};
// An unknown device, or a failing device call: the message names the device and the call.
struct DeviceError : UserError {
  using UserError::UserError;
};
// A file or folder that cannot be read or written: the message names the path and the system's reason.
struct IOError : UserError {
  using UserError::UserError;
};
// A run larger than the machine's memory or the process limits allow (runtime/cli/memory_budget.hpp
// check_fits): the message gives what is needed and what is available.
struct ResourceError : UserError {
  using UserError::UserError;
};
// A kernel that did not compile: the message carries the kernel name and the compiler log.
struct CompileError : Error {
  using Error::Error;
};
// A schedule item that never completed: the message names the item and the device.
struct TimeoutError : Error {
  using Error::Error;
};
// Work given up because a stop was requested (core/interrupt.hpp; the `ringrt` program on SIGINT or
// SIGTERM): a compile whose compiler was killed. Neither bad input nor a bug.
struct Interrupted : Error {
  using Error::Error;
};
// A broken invariant inside ringrt (a bug, not bad input).
struct InternalError : Error {
  using Error::Error;
};

}  // namespace ringrt
