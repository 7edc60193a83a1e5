// A fixture of the test lint_includes_fails: a core header that includes the API, a room above it.
#pragma once
#include "runtime/api/tensor.hpp"
