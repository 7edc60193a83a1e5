// The umbrella header of ringrt's public C++ API (installed as <ringrt/ringrt.hpp>): Tensor and Schedule
// (runtime/api/tensor.hpp), the Trace timeline (runtime/api/trace.hpp), references and the rules results are
// checked by (runtime/api/reference.hpp), the device lists, ranks and memory statistics (runtime/api/devices.hpp),
// and core's public value types: the allreduce settings and tunables (core/settings.hpp, core/params.hpp), the
// errors, dtypes, shapes, host buffers and ops (core/reduce_op.hpp). Only these headers are installed, under an
// include folder that holds nothing but ringrt/; the IR, the code generator and the engine stay internal (in-tree
// code reaches them through runtime/api/internal.hpp).
#pragma once

#include <ringrt/core/dtype.hpp>
#include <ringrt/core/errors.hpp>
#include <ringrt/core/host_buffer.hpp>
#include <ringrt/core/memory_stats.hpp>
#include <ringrt/core/params.hpp>
#include <ringrt/core/rank_info.hpp>
#include <ringrt/core/reduce_op.hpp>
#include <ringrt/core/settings.hpp>
#include <ringrt/core/shape.hpp>
#include <ringrt/core/trace_event.hpp>
#include <ringrt/runtime/api/devices.hpp>
#include <ringrt/runtime/api/reference.hpp>
#include <ringrt/runtime/api/tensor.hpp>
#include <ringrt/runtime/api/trace.hpp>
