// The umbrella header of ringrt's public C++ API (installed as <ringrt/ringrt.hpp>): Tensor and
// Schedule (runtime/api/tensor.hpp), the Trace timeline (runtime/api/trace.hpp), references and the rules results
// are checked by (runtime/api/reference.hpp), the allreduce settings
// (rewrite/settings.hpp), the errors (rewrite/errors.hpp), dtypes, shapes and host buffers, the device lists
// (runtime/device/devices.hpp) and memory statistics (runtime/device/memory.hpp). Only these headers are installed; the
// IR, the code generator and the engine stay internal (in-tree code reaches them through runtime/engine/internal.hpp).
#pragma once

#include "rewrite/dtype.hpp"
#include "rewrite/errors.hpp"
#include "rewrite/host_buffer.hpp"
#include "rewrite/ops.hpp"
#include "rewrite/settings.hpp"
#include "rewrite/shape.hpp"
#include "runtime/api/reference.hpp"
#include "runtime/api/tensor.hpp"
#include "runtime/api/trace.hpp"
#include "runtime/device/devices.hpp"
#include "runtime/device/memory.hpp"
