// The device layer (runtime/device/): the registry that resolves names, events (and their backend
// handles), the cpu backend (copies from another backend's memory, copies split across workers, its
// memory cache, a group of launches over several devices) and device queues fed from several threads at
// once (the tsan preset runs these).
#include <algorithm>
#include <atomic>
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "codegen/kernel.hpp"
#include "core/errors.hpp"
#include "core/params_internal.hpp"
#include "runtime/api/tensor.hpp"
#include "runtime/device/device.hpp"
#include "test/support/runtime_switches.hpp"

BOOST_AUTO_TEST_SUITE(test_device)

using namespace ringrt;
using ringrt::test::set_switches;

BOOST_AUTO_TEST_CASE(unknown_device_names_it_and_the_devices_that_exist) {
  cpu_devices(4);
  for (const char* bad : {"CPU:99", "GPU:0", "banana", "", "CPU:-1", "HIP:0"}) {
    BOOST_CHECK_EXCEPTION(device(bad), DeviceError, [&](const DeviceError& e) {
      std::string m = e.what();
      return m.find(std::string("'") + bad + "'") != std::string::npos && m.find("CPU:3") != std::string::npos;
    });
    BOOST_CHECK_THROW(Tensor::arange(4).to(bad), DeviceError);
  }
  BOOST_TEST(device("CPU:2").name() == "CPU:2");
  BOOST_TEST(hip_devices().empty());  // no GPU on the machines this suite runs on
}

BOOST_AUTO_TEST_CASE(unknown_device_error_lists_the_devices_that_exist) {
  cpu_devices(4);
  if (hip_devices().empty()) {
    // Without a GPU HIP:0 is unknown, and the message lists CPU:0..CPU:n-1 and no HIP device.
    BOOST_CHECK_EXCEPTION(device("HIP:0"), DeviceError, [](const DeviceError& e) {
      std::string m = e.what();
      BOOST_TEST_MESSAGE(m);
      return m.find("unknown device 'HIP:0'; the devices are CPU:0, CPU:1, CPU:2, CPU:3") != std::string::npos &&
             m.rfind("HIP:") == m.find("HIP:0");
    });
  }
  BOOST_CHECK_EXCEPTION(device("CPU:4096"), DeviceError, [](const DeviceError& e) {
    return std::string(e.what()).find("'CPU:4096'") != std::string::npos;
  });
}

BOOST_AUTO_TEST_CASE(events_complete_carry_errors_and_native_handles) {
  struct Handle : Event::Native {
    int value = 7;
  };
  Event e;
  BOOST_TEST(!e.done());
  BOOST_TEST(!e.native());
  BOOST_TEST(!e.wait_ready(std::chrono::milliseconds(1)));  // neither done nor a handle yet
  auto h = std::make_shared<Handle>();
  e.set_native(h);
  BOOST_TEST(e.wait_ready(std::chrono::milliseconds(0)));
  BOOST_TEST(!e.done());
  auto got = std::dynamic_pointer_cast<const Handle>(e.native());
  BOOST_REQUIRE(got);
  BOOST_TEST(got->value == 7);
  Event copy = e;  // copies share one state
  BOOST_TEST(!copy.succeeded());
  e.set_done();
  BOOST_TEST(copy.done());
  BOOST_TEST(copy.succeeded());  // done without an error: a wait list may leave it out
  BOOST_TEST(copy.wait_for(std::chrono::milliseconds(0)));

  Event failed;
  std::thread t([failed] { failed.set_done(std::make_exception_ptr(DeviceError("boom"))); });
  BOOST_TEST(failed.wait_ready(std::chrono::hours(1)));  // done counts as ready; does not throw
  t.join();
  BOOST_CHECK_THROW(failed.wait_for(std::chrono::milliseconds(0)), DeviceError);
  BOOST_TEST(failed.done());
  BOOST_TEST(!failed.succeeded());  // its error must reach whoever waits for it
  BOOST_TEST(!failed.native());
  // cpu work carries no native handle
  Event work = device("CPU:0").submit([] {}, {});
  BOOST_TEST(work.wait_for(std::chrono::hours(1)));
  BOOST_TEST(!work.native());
}

namespace {

// A device of another backend whose memory the host cannot read: its "pointers" are offsets into a
// private array, so a cpu device that memcpy'd from one would crash instead of calling copy_out.
class OpaqueDevice : public Device {
 public:
  std::vector<unsigned char> memory = std::vector<unsigned char>(4096);
  std::atomic<int> copy_outs{0};
  const std::string& name() const override { return name_; }
  void* allocate(size_t) override { throw DeviceError("OpaqueDevice: no allocation"); }
  void free(void*, size_t) override {}
  void copy_in(void* dst, const void* host, size_t bytes) override {
    std::memcpy(memory.data() + reinterpret_cast<uintptr_t>(dst), host, bytes);
  }
  void copy_out(void* host, const void* src, size_t bytes) override {
    ++copy_outs;
    std::memcpy(host, memory.data() + reinterpret_cast<uintptr_t>(src), bytes);
  }
  std::shared_ptr<CompiledKernel> compile(const codegen::Kernel&) override { throw DeviceError("no kernels"); }
  Event launch(const CompiledKernel&, std::vector<void*>, int32_t, std::vector<Event>) override {
    throw DeviceError("no kernels");
  }
  Event copy_from(Device&, const void*, void*, size_t, std::vector<Event>) override { throw DeviceError("no copies"); }
  Event submit(std::function<void()> fn, std::vector<Event>) override {
    Event e;
    fn();
    e.set_done();
    return e;
  }
  void synchronize() override {}

 private:
  std::string name_ = "OPAQUE:0";
};

}  // namespace

// DeviceClock (runtime/api/tensor.hpp): markers on the devices' queues; the time is the largest
// per-device elapsed time between them, so it covers work queued on any of the devices in between (a
// host function that sleeps 30 ms on CPU:1), and markers on an idle queue stamp at once.
BOOST_AUTO_TEST_CASE(a_device_clock_covers_the_work_queued_between_its_markers) {
  ringrt::cpu_devices(2);
  ringrt::DeviceClock clock({"CPU:0", "CPU:1"});
  ringrt::Event slept =
      ringrt::device("CPU:1").submit([] { std::this_thread::sleep_for(std::chrono::milliseconds(30)); }, {});
  double seconds = clock.stop();
  BOOST_TEST(slept.done());
  BOOST_TEST(seconds >= 0.030);
  BOOST_TEST(seconds < 60.0);
  ringrt::DeviceClock idle({"CPU:0"});
  BOOST_TEST(idle.stop() >= 0.0);
  BOOST_CHECK_THROW(ringrt::DeviceClock({"CPU:0", "NOPE:3"}), ringrt::DeviceError);
}

BOOST_AUTO_TEST_CASE(cpu_copies_from_another_backend_use_its_copy_out) {
  OpaqueDevice gpu;
  std::vector<unsigned char> data(300);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<unsigned char>(i * 7 + 1);
  gpu.copy_in(reinterpret_cast<void*>(uintptr_t{16}), data.data(), data.size());
  Device& cpu = device("CPU:1");
  auto* dst = static_cast<unsigned char*>(cpu.allocate(data.size()));
  std::atomic<bool> produced{false};
  Event before = cpu.submit([&] { produced = true; }, {});
  Event copied = cpu.copy_from(gpu, reinterpret_cast<const void*>(uintptr_t{16}), dst, data.size(), {before});
  BOOST_REQUIRE(copied.wait_for(std::chrono::hours(1)));
  BOOST_TEST(produced.load());
  BOOST_TEST(gpu.copy_outs.load() == 1);
  BOOST_TEST(std::memcmp(dst, data.data(), data.size()) == 0);
  cpu.free(dst, data.size());
}

// A backend registered at run time: named by kind and index, created once on first use, as many as
// its count says now; a kind registered twice and bad cpu device counts are DeviceErrors.
BOOST_AUTO_TEST_CASE(backends_register_with_the_registry) {
  static std::atomic<int> count{2}, made{0};
  register_backend(Backend{"OPAQUE", [] { return count.load(); },
                           [](int) {
                             ++made;
                             return std::unique_ptr<Device>(new OpaqueDevice);
                           }});
  BOOST_TEST(device_names("OPAQUE") == (std::vector<std::string>{"OPAQUE:0", "OPAQUE:1"}));
  BOOST_TEST(device_names("NOSUCHKIND").empty());
  Device& first = device("OPAQUE:1");
  BOOST_TEST(&device("OPAQUE:1") == &first);
  BOOST_TEST(made.load() == 1);
  BOOST_CHECK_EXCEPTION(device("OPAQUE:2"), DeviceError, [](const DeviceError& e) {
    return std::string(e.what()).find("OPAQUE:1") != std::string::npos;  // the list names the new kind
  });
  count = 3;
  BOOST_CHECK_NO_THROW(device("OPAQUE:2"));
  BOOST_TEST(made.load() == 2);
  BOOST_CHECK_THROW(register_backend(Backend{"OPAQUE", [] { return 1; }, [](int) { return nullptr; }}), DeviceError);
  size_t cpus = device_names("CPU").size();
  BOOST_CHECK_THROW(cpu_devices(0), DeviceError);
  BOOST_CHECK_THROW(cpu_devices(1025), DeviceError);
  BOOST_TEST(device_names("CPU").size() == cpus);  // a refused count raises nothing
  BOOST_TEST(cpu_devices(static_cast<int>(cpus) + 2).size() == cpus + 2);
  BOOST_TEST(device_names("CPU").size() == cpus + 2);
}

BOOST_AUTO_TEST_CASE(cpu_memory_is_reused) {
  Device& d = device("CPU:0");
  void* a = d.allocate(1000);
  d.free(a, 1000);
  void* b = d.allocate(1000);
  BOOST_TEST(a == b);  // the cached block comes back
  d.free(b, 1000);
}

// The freed blocks a cpu device keeps are bounded by its peak use or 64 MiB, whichever is more: 200 sizes of
// about 1 MiB, each allocated and freed in turn (a sweep), leave at most that cached (200 MiB unbounded), and the
// size freed last is reused still.
BOOST_AUTO_TEST_CASE(cpu_cached_blocks_are_bounded) {
  Device& d = device("CPU:0");
  d.reset_peak_memory();
  size_t last = 0;
  void* freed_last = nullptr;
  for (size_t i = 0; i < 200; ++i) {
    last = (size_t{1} << 20) + 64 * i;
    freed_last = d.allocate(last);
    d.free(freed_last, last);
  }
  MemoryStats s = d.memory_stats();
  BOOST_TEST(s.cached <= std::max<int64_t>(s.peak, int64_t{64} << 20));
  BOOST_TEST(s.cached >= static_cast<int64_t>(last));
  void* again = d.allocate(last);
  BOOST_TEST(again == freed_last);
  d.free(again, last);
}

namespace {
// Whether the kernel holds the advice MADV_HUGEPAGE for the mapping that contains p: the "hg" flag of its
// VmFlags line in /proc/self/smaps. nullopt when smaps cannot be read or has no such mapping.
std::optional<bool> huge_page_advised(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  auto at = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(' ') > line.find('-')) {
      inside = lo <= at && at < hi;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return (" " + line.substr(8) + " ").find(" hg ") != std::string::npos;
    }
  }
  return std::nullopt;
}
}  // namespace

// runtime.huge_pages: a buffer of 2 MiB or more starts on a 2 MiB page and is advised as a transparent huge
// page (MADV_HUGEPAGE: the "hg" flag of its mapping, where the kernel has THP); zeroed, and reused from the
// cache like any other. Off, no advice: only 64-byte aligned, its mapping without "hg".
BOOST_AUTO_TEST_CASE(cpu_buffers_from_2_mib_start_on_huge_pages) {
  Device& d = device("CPU:1");
  constexpr size_t kBytes = (size_t{3} << 20) + 100;
  auto* a = static_cast<unsigned char*>(d.allocate(kBytes));
  BOOST_TEST(reinterpret_cast<uintptr_t>(a) % (size_t{2} << 20) == 0u);
  BOOST_TEST((a[0] == 0 && a[kBytes - 1] == 0));
  bool thp = std::filesystem::exists("/sys/kernel/mm/transparent_hugepage/enabled");
  std::optional<bool> advised = huge_page_advised(a);
  BOOST_TEST_REQUIRE(advised.has_value());  // the buffer's mapping is in smaps
  if (thp) BOOST_TEST(*advised);            // the positive control: the check sees the advice
  std::memset(a, 7, kBytes);
  d.free(a, kBytes);
  BOOST_TEST(d.allocate(kBytes) == a);
  d.free(a, kBytes);
  RuntimeParams off = current_runtime_params();
  off.huge_pages = false;
  set_runtime_params(off, {"runtime.huge_pages"});
  void* b = d.allocate(kBytes + 64);  // another size: a fresh block
  BOOST_TEST(reinterpret_cast<uintptr_t>(b) % 64 == 0u);
  BOOST_TEST((huge_page_advised(b) == std::optional<bool>(false)));  // no advice when off
  d.free(b, kBytes + 64);
  reset_runtime_params();
}

// Device queues from several threads at once: each thread passes its own data around the four cpu
// devices with chained copies (each copy waits for the one before, on another device) and checks it
// on the last device with a host function; nothing waits between rounds, so many chains are in flight.
BOOST_AUTO_TEST_CASE(many_copy_chains_in_flight_from_several_threads) {
  auto devs = cpu_devices(4);
  constexpr int kThreads = 6, kRounds = 40;
  constexpr size_t kBytes = 1000;
  std::atomic<int> wrong{0}, checked{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::vector<void*>> buffers;
      std::vector<Event> done;
      for (int r = 0; r < kRounds; ++r) {
        std::vector<void*> bufs;
        for (const auto& d : devs) bufs.push_back(device(d).allocate(kBytes));
        std::vector<unsigned char> data(kBytes, static_cast<unsigned char>(t * kRounds + r));
        device(devs[0]).copy_in(bufs[0], data.data(), kBytes);
        Event prev = device(devs[0]).submit([] {}, {});
        for (size_t d = 1; d < devs.size(); ++d)
          prev = device(devs[d]).copy_from(device(devs[d - 1]), bufs[d - 1], bufs[d], kBytes, {prev});
        void* last = bufs.back();
        done.push_back(device(devs.back())
                           .submit(
                               [&, last, want = data[0]] {
                                 const auto* p = static_cast<const unsigned char*>(last);
                                 for (size_t i = 0; i < kBytes; ++i)
                                   if (p[i] != want) {
                                     ++wrong;
                                     break;
                                   }
                                 ++checked;
                               },
                               {prev}));
        buffers.push_back(std::move(bufs));
      }
      for (const Event& e : done)  // Boost.Test assertions are not thread-safe: count instead
        if (!e.wait_for(std::chrono::hours(1))) ++wrong;
      for (auto& bufs : buffers)
        for (size_t d = 0; d < devs.size(); ++d) device(devs[d]).free(bufs[d], kBytes);
    });
  }
  for (auto& th : threads) th.join();
  BOOST_TEST(checked.load() == kThreads * kRounds);
  BOOST_TEST(wrong.load() == 0);
}

// A cpu copy small enough to run inline is split across TBB workers (runtime.kernel_split): every size
// around the piece boundaries (32 KiB pieces, split from two) and the inline limit copies exactly its
// bytes, split or not, and writes nothing outside its destination.
BOOST_AUTO_TEST_CASE(cpu_copies_split_or_not_copy_exactly_their_bytes) {
  Device& from = device("CPU:0");
  Device& to = device("CPU:1");
  const RuntimeParams before = runtime_params();
  constexpr size_t kPiece = size_t{32} << 10, kGuard = 64;
  for (bool split : {true, false}) {
    RuntimeParams o = before;
    o.kernel_split = split;
    set_switches(o);
    for (size_t bytes : {size_t{1}, 2 * kPiece - 1, 2 * kPiece, 2 * kPiece + 1, 3 * kPiece + 7, size_t{100003},
                         kInlineBytes, kInlineBytes + 1}) {
      BOOST_TEST_CONTEXT("split " << split << ", " << bytes << " bytes") {
        std::vector<unsigned char> data(bytes), got(bytes + 2 * kGuard);
        for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<unsigned char>((i * 2654435761u) >> 13);
        void* src = from.allocate(bytes);
        void* dst = to.allocate(bytes + 2 * kGuard);
        from.copy_in(src, data.data(), bytes);
        std::vector<unsigned char> guard(bytes + 2 * kGuard, 0xA5);
        to.copy_in(dst, guard.data(), guard.size());
        Event e = to.copy_from(from, src, static_cast<char*>(dst) + kGuard, bytes, {});
        BOOST_TEST(e.wait_for(std::chrono::minutes(1)));
        to.copy_out(got.data(), dst, got.size());
        BOOST_TEST(std::memcmp(got.data() + kGuard, data.data(), bytes) == 0);
        BOOST_TEST(std::count(got.begin(), got.begin() + kGuard, 0xA5) == static_cast<long>(kGuard));
        BOOST_TEST(std::count(got.end() - kGuard, got.end(), 0xA5) == static_cast<long>(kGuard));
        from.free(src, bytes);
        to.free(dst, bytes + 2 * kGuard);
      }
    }
  }
  set_switches(before);
}

// Device::launch_group on cpu devices: out[i] = 2 * in[i] + dnum on each device. Run together when every
// device is idle; with one device busy (a task blocked in its queue) that device's launch waits its
// turn while the others run; with one device twice in the group, each launch still runs once.
BOOST_AUTO_TEST_CASE(cpu_launch_group_keeps_each_device_in_order) {
  std::vector<Device*> devs;
  for (const std::string& name : cpu_devices(4)) devs.push_back(&device(name));
  const int64_t n = 20000;  // several TBB pieces per launch (runtime.kernel_split)
  UOpGraph g;
  UOp in = new_buffer(DeviceSpec("CPU:0"), n, DType::float32, &g);
  codegen::Kernel k =
      codegen::lower_kernel(in + in + device_num(4, &g).cast(DType::float32).reshape({1}).expand({n}), "twice");
  std::vector<std::vector<float>> host(4, std::vector<float>(n));
  struct Buffers {
    Device* d;
    float *in, *out;
  };
  std::vector<Buffers> bufs;
  std::vector<std::shared_ptr<CompiledKernel>> compiled;
  for (size_t d = 0; d < 4; ++d) {
    for (int64_t i = 0; i < n; ++i) host[d][static_cast<size_t>(i)] = static_cast<float>(i % 1000) - 7.0f * d;
    Device* dev = devs[d];
    auto* a = static_cast<float*>(dev->allocate(n * sizeof(float)));
    auto* b = static_cast<float*>(dev->allocate(n * sizeof(float)));
    dev->copy_in(a, host[d].data(), n * sizeof(float));
    bufs.push_back({dev, a, b});
    compiled.push_back(dev->compile(k));
  }
  auto check = [&](size_t d, int dnum, const std::string& what) {
    int64_t bad = -1;
    for (int64_t i = 0; i < n && bad < 0; ++i)
      if (bufs[d].out[i] != 2 * host[d][static_cast<size_t>(i)] + static_cast<float>(dnum)) bad = i;
    BOOST_TEST(bad == -1, what << ": device " << d << ", element " << bad);
  };
  auto group = [&](std::vector<size_t> on) {
    std::vector<GroupLaunch> launches;
    for (size_t d : on) {
      std::memset(bufs[d].out, 0, n * sizeof(float));
      launches.push_back({bufs[d].d, compiled[d].get(), {bufs[d].out, bufs[d].in}, static_cast<int32_t>(d)});
    }
    return devs[on[0]]->launch_group(std::move(launches), {});
  };
  for (const Event& e : group({0, 1, 2, 3})) BOOST_TEST(e.wait_for(std::chrono::seconds(60)));
  for (size_t d = 0; d < 4; ++d) check(d, static_cast<int>(d), "all idle");

  std::atomic<bool> go{false};
  Event blocker = devs[2]->submit(
      [&] {
        while (!go.load()) std::this_thread::yield();
      },
      {});
  std::vector<Event> done = group({0, 1, 2, 3});
  for (size_t d : {0, 1, 3}) BOOST_TEST(done[d].wait_for(std::chrono::seconds(60)));
  BOOST_TEST(!done[2].done());  // queued behind the blocked task: nothing of it ran
  BOOST_TEST(bufs[2].out[0] == 0.0f);
  go = true;
  BOOST_TEST(done[2].wait_for(std::chrono::seconds(60)));
  BOOST_TEST(blocker.done());
  for (size_t d = 0; d < 4; ++d) check(d, static_cast<int>(d), "CPU:2 busy");

  std::vector<GroupLaunch> twice;  // CPU:0's kernel on CPU:0's and CPU:1's buffers, both on CPU:0
  for (size_t d : {0, 1}) {
    std::memset(bufs[d].out, 0, n * sizeof(float));
    twice.push_back({devs[0], compiled[0].get(), {bufs[d].out, bufs[d].in}, static_cast<int32_t>(d)});
  }
  for (const Event& e : devs[0]->launch_group(std::move(twice), {})) BOOST_TEST(e.wait_for(std::chrono::seconds(60)));
  for (size_t d : {0, 1}) check(d, static_cast<int>(d), "one device twice");
  for (const Buffers& b : bufs) {
    b.d->free(b.in, n * sizeof(float));
    b.d->free(b.out, n * sizeof(float));
  }
}

BOOST_AUTO_TEST_SUITE_END()
