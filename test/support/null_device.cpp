// The null device backend (test/support/null_device.hpp).
#include "test/support/null_device.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>

#include "core/errors.hpp"
#include "runtime/device/device.hpp"

namespace ringrt::test {

namespace {

constexpr int kMaxNullDevices = 16;

struct Log {
  std::mutex mu;
  std::vector<NullWork> work;
};

Log& log() {
  static Log l;
  return l;
}

void record(NullWork w) {
  std::lock_guard<std::mutex> lock(log().mu);
  log().work.push_back(std::move(w));
}

Event done_event() {
  Event e;
  e.set_done();
  return e;
}

// The kernel IR, uncompiled.
class NullKernel : public CompiledKernel {
 public:
  explicit NullKernel(codegen::Kernel k) : kernel_(std::move(k)) {}
  const codegen::Kernel& kernel() const override { return kernel_; }

 private:
  codegen::Kernel kernel_;
};

class NullDevice : public Device {
 public:
  explicit NullDevice(int index) : name_(fmt::format("NULL:{}", index)) {}
  const std::string& name() const override { return name_; }

  void* allocate(size_t bytes) override {
    void* p = std::calloc(bytes ? bytes : 1, 1);
    if (!p) throw DeviceError(fmt::format("{}: cannot allocate {} bytes", name_, bytes));
    return p;
  }
  void free(void* ptr, size_t) override { std::free(ptr); }
  void copy_in(void* dst, const void* host, size_t bytes) override { std::memcpy(dst, host, bytes); }
  void copy_out(void* host, const void* src, size_t bytes) override { std::memcpy(host, src, bytes); }

  std::shared_ptr<CompiledKernel> compile(const codegen::Kernel& kernel) override {
    return std::make_shared<NullKernel>(kernel);
  }
  Event launch(const CompiledKernel& k, std::vector<void*>, int32_t, std::vector<Event> after) override {
    for (const Event& e : after) e.wait_for(std::chrono::hours(1));  // rethrows an error of what it waits for
    record({NullWork::Kind::launch, name_, "", k.kernel().name, 0});
    return done_event();
  }
  Event copy_from(Device& from, const void*, void*, size_t bytes, std::vector<Event> after) override {
    for (const Event& e : after) e.wait_for(std::chrono::hours(1));
    record({NullWork::Kind::copy, name_, from.name(), "", bytes});
    return done_event();
  }
  Event submit(std::function<void()> fn, std::vector<Event> after) override {
    for (const Event& e : after) e.wait_for(std::chrono::hours(1));
    Event e;
    try {
      fn();
      e.set_done();
    } catch (...) {
      e.set_done(std::current_exception());
    }
    return e;
  }
  void synchronize() override {}

 private:
  std::string name_;
};

}  // namespace

std::vector<std::string> null_devices(int n) {
  if (n < 1 || n > kMaxNullDevices)
    throw DeviceError(fmt::format("null_devices({}): between 1 and {} devices", n, kMaxNullDevices));
  static std::once_flag registered;
  std::call_once(registered, [] {
    register_backend(Backend{"NULL", [] { return kMaxNullDevices; },
                             [](int index) -> std::unique_ptr<Device> { return std::make_unique<NullDevice>(index); }});
  });
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.push_back(fmt::format("NULL:{}", i));
  return names;
}

std::vector<NullWork> null_log() {
  std::lock_guard<std::mutex> lock(log().mu);
  return log().work;
}

void clear_null_log() {
  std::lock_guard<std::mutex> lock(log().mu);
  log().work.clear();
}

}  // namespace ringrt::test
