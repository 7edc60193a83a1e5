// The umbrella header of ringrt's public C++ API (installed as <ringrt/ringrt.hpp>).
#pragma once

#include "rewrite/dtype.hpp"
#include "rewrite/errors.hpp"
#include "rewrite/interpreter.hpp"
#include "rewrite/ops.hpp"
#include "rewrite/pattern.hpp"
#include "rewrite/rewrite.hpp"
#include "rewrite/settings.hpp"
#include "rewrite/uop.hpp"
#include "runtime/api/tensor.hpp"
#include "runtime/device/memory.hpp"
