// Helpers of the hip backend's tests (test/gpu/test_hip_device.cpp): waits, byte
// patterns, running a kernel on a device against the interpreter, hand-written graphs with data,
// reading a code object's kernel-argument metadata, and child processes with logical HIP devices. Included where HIP is
// built (RINGRT_HAVE_HIP).
#pragma once

#include <fmt/format.h>

#include <atomic>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "codegen/kernel.hpp"
#include "codegen/render.hpp"
#include "rewrite/interpreter.hpp"
#include "runtime/api/tensor.hpp"
#include "runtime/device/device.hpp"
#include "runtime/hip/hip_check.hpp"
#include "runtime/hip/hip_device.hpp"
#include "test/support/checks.hpp"
#include "testing/devices.hpp"  // ringrt::testing::needs({"HIP", n}): the cases that need n HIP devices

namespace hip_test {

using namespace std::chrono_literals;
using ringrt::Device;
using ringrt::DType;
using ringrt::Event;
using ringrt::HostBuffer;
using ringrt::UOp;
namespace codegen = ringrt::codegen;

constexpr auto kWait = 120s;  // generous: the first launch on a GPU includes hipRTC compiles
// The device node of this platform's GPU driver: without it there is no GPU to find (none for the
// simulated GPUs of runtime/hip/sim/, which need no driver).
#if defined(RINGRT_GPU_SIM)
constexpr const char* kDriverNode = nullptr;
#elif defined(RINGRT_GPU_NVIDIA)
constexpr const char* kDriverNode = "/dev/nvidiactl";  // NVIDIA's control node
#else
constexpr const char* kDriverNode = "/dev/kfd";  // AMD's kernel fusion driver
#endif

// Host work that blocks a device's queue until release() (or `limit` passes, so that a test which
// fails to release it still ends).
class Blocker {
 public:
  Blocker(Device& dev, std::chrono::seconds limit = std::chrono::seconds(20)) {
    auto state = state_;
    done_ = dev.submit(
        [state, limit] {
          state->started = true;
          auto until = std::chrono::steady_clock::now() + limit;
          while (!state->released && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
        },
        {});
  }
  ~Blocker() { release(); }
  void release() { state_->released = true; }
  bool released() const { return state_->released; }
  const Event& done() const { return done_; }

 private:
  struct State {
    std::atomic<bool> started{false}, released{false};
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
  Event done_;
};

inline void wait(const Event& e, const char* what) {
  BOOST_REQUIRE_MESSAGE(e.wait_for(kWait), what << " did not complete");
}

inline std::vector<unsigned char> pattern(size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>((i * 131 + seed * 17 + (i >> 9)) & 0xff);
  return v;
}

// Runs kernel k on dev with _device_num = d: uploads its inputs (lookup's data for device d, or the one
// copy), launches, and returns the output. The output starts as 0xab bytes, so a missed write shows.
inline HostBuffer run_on(Device& dev, const codegen::Kernel& k, const ringrt::BufferLookup& lookup, int d) {
  auto ck = dev.compile(k);
  HostBuffer out(k.dtype, k.shape);
  std::fill(out.bytes.begin(), out.bytes.end(), std::byte{0xab});
  std::vector<std::pair<void*, size_t>> blocks;
  void* o = dev.allocate(out.bytes.size());
  blocks.push_back({o, out.bytes.size()});
  dev.copy_in(o, out.bytes.data(), out.bytes.size());
  std::vector<void*> bufs{o};
  for (const auto& in : k.inputs) {
    const std::vector<HostBuffer>* data = lookup(in.buffer_id);
    BOOST_REQUIRE_MESSAGE(data && !data->empty(), "no data for buffer " << in.buffer_id);
    const HostBuffer& h = (*data)[data->size() == 1 ? 0 : static_cast<size_t>(d)];
    void* p = dev.allocate(h.bytes.size());
    dev.copy_in(p, h.bytes.data(), h.bytes.size());
    blocks.push_back({p, h.bytes.size()});
    bufs.push_back(p);
  }
  wait(dev.launch(*ck, bufs, d, {}), "the launch");
  dev.copy_out(out.bytes.data(), o, out.bytes.size());
  for (auto [p, n] : blocks) dev.free(p, n);
  return out;
}

// Lowers ast, runs it on dev for every device number in [0, ndev) and compares the bytes with the
// interpreter's.
inline void check_kernel(Device& dev, const UOp& ast, const ringrt::BufferLookup& lookup, int ndev,
                         const std::string& label) {
  codegen::Kernel k = codegen::lower_kernel(ast);
  std::vector<HostBuffer> want = ringrt::Interpreter(lookup).evaluate(ast);
  for (int d = 0; d < ndev; ++d) {
    HostBuffer got = run_on(dev, k, lookup, d);
    const HostBuffer& w = want[want.size() == 1 ? 0 : static_cast<size_t>(d)];
    if (got.bytes == w.bytes) continue;
    int64_t bad = 0;
    while (bad < got.numel() && ringrt::test::same_element(got, w, bad)) ++bad;
    if (bad == got.numel()) continue;
    BOOST_ERROR(label << ", _device_num " << d << ": element " << bad << " of " << got.numel() << " is " << got.get(bad)
                      << ", the interpreter says " << w.get(bad) << "\n"
                      << ringrt::print_graph(ast) << k.dump() << codegen::render_hip(k));
    return;
  }
}

// Buffers of a hand-written graph and their data.
struct Graph {
  ringrt::UOpGraph g;
  std::map<int64_t, std::vector<HostBuffer>> data;

  UOp buffer(const ringrt::DeviceSpec& dev, DType dt, int64_t n, int ndev) {
    UOp b = ringrt::new_buffer(dev, n, dt, &g);
    auto& v = data[std::get<ringrt::BufferArg>(b.arg()).id];
    for (int d = 0; d < ndev; ++d) {
      HostBuffer h(dt, {n});
      for (int64_t i = 0; i < n; ++i) {
        if (ringrt::is_float(dt)) {
          h.set(i, static_cast<double>((i * 7 + d * 3) % 23) * 0.25 - 2.5);
        } else {
          h.set_int(i, (i * 7919 + d * 104729) % 200003 - 100001);
        }
      }
      v.push_back(std::move(h));
    }
    return b;
  }
  ringrt::BufferLookup lookup() const {
    return [this](int64_t id) -> const std::vector<HostBuffer>* {
      auto it = data.find(id);
      return it == data.end() ? nullptr : &it->second;
    };
  }
};

// The GPUs the HIP runtime reports (0 when it reports an error), whatever runtime.hip_logical_devices.
inline int gpu_count() {
  int n = 0;
  if (hipGetDeviceCount(&n) != hipSuccess) {
    (void)hipGetLastError();
    return 0;
  }
  return n;
}

// The llvm-readelf on PATH (under one of its usual names); empty when there is none.
inline std::string find_readelf() {
  for (const char* tool : {"llvm-readelf", "llvm-readelf-15", "llvm-readelf-14"})
    if (std::system(fmt::format("command -v {} >/dev/null 2>&1", tool).c_str()) == 0) return tool;
  return {};
}

// `readelf --notes` of a code object: its AMDGPU metadata as YAML (and readelf's errors).
inline std::string read_notes(const std::string& readelf, const std::filesystem::path& object) {
  std::string cmd = fmt::format("{} --notes '{}' 2>&1", readelf, object.string());
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  BOOST_REQUIRE(pipe);
  std::string notes;
  char chunk[4096];
  for (size_t got; (got = std::fread(chunk, 1, sizeof chunk, pipe.get())) > 0;) notes.append(chunk, got);
  return notes;
}

// The kernel arguments' offsets and sizes and the kernarg segment size in read_notes's YAML: one map
// per argument, keys sorted (.offset before .size); hidden arguments, if any, last.
struct ArgLayout {
  std::vector<size_t> offsets, sizes;
  size_t segment = 0;
};
inline ArgLayout kernel_arg_layout(const std::string& notes) {
  static const std::regex kField(R"(\n\s*(?:- )?\.(offset|size|kernarg_segment_size):\s+(\d+))");
  ArgLayout layout;
  for (std::sregex_iterator it(notes.begin(), notes.end(), kField), end; it != end; ++it) {
    size_t v = std::stoul((*it)[2]);
    std::string key = (*it)[1];
    if (key == "offset") {
      layout.offsets.push_back(v);
    } else if (key == "size") {
      layout.sizes.push_back(v);
    } else {
      layout.segment = v;
    }
  }
  return layout;
}

// Runs the current case again in a child process whose environment variable `name` is `value` (what is
// read once per process: the HIP devices, fixed at the first enumeration; the simulated GPUs'
// settings); true in the child, which goes on with the case, false in the parent, which is done once
// the child passed.
inline bool in_child_with(const char* name, const std::string& value) {
  if (ringrt::test::in_child()) return true;
  std::optional<std::string> old;
  if (const char* v = std::getenv(name)) old = v;
  setenv(name, value.c_str(), 1);
  ringrt::test::check_current_case_in_child();
  old ? setenv(name, old->c_str(), 1) : unsetenv(name);
  return false;
}
inline bool in_child_with_logical_devices(const std::string& value) {
  return in_child_with("RINGRT_HIP_LOGICAL_DEVICES", value);
}

// A (2, cols) float32 tensor, row r, column c holding scale * (r * 1000 + c), sharded over HIP:0 and
// HIP:1 on axis 0, realized and waited for.
inline ringrt::Tensor two_device_rows(int64_t cols, float scale) {
  std::vector<float> v;
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t c = 0; c < cols; ++c) v.push_back(scale * static_cast<float>(r * 1000 + c));
  ringrt::Tensor x = ringrt::Tensor::from_vector(v, {2, cols}).shard({"HIP:0", "HIP:1"}, 0);
  x.realize();
  ringrt::synchronize();
  return x;
}

}  // namespace hip_test
