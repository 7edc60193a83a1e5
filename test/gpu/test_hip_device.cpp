// Tests of the hip backend (runtime/hip/hip_device.cpp); label gpu.
//
// Everywhere HIP is built, GPU or not: hip_device_names() neither throws nor aborts (checked in a
// child process) and is empty where there is no /dev/kfd; the registry and make_hip_device report a
// missing GPU as a DeviceError naming it; the check macros' messages; the
// kernel-argument layout, against render_hip's signature and against the argument offsets in the
// metadata of a hipRTC code object (gfx90a, read with llvm-readelf); logical devices' GPUs
// (hip_physical_gpu) and names (none without a GPU, whatever RINGRT_HIP_LOGICAL_DEVICES).
// With a GPU (cases with a precondition, skipped without one): allocation and copy round trips, kernels
// lowered from UOp graphs (hand-written and random, test/codegen/random_kernel.hpp) compared bit for bit
// with the reference interpreter, queue order and events (host work, a cpu device's event, errors);
// Event native handles and copies between a GPU and a cpu device; a 0-byte copy ordered after a kernel;
// four logical devices on one GPU (copies, peer reads, a ring allreduce; in a child process, as the
// device names are fixed at the first enumeration); with two GPUs, peer copies and a cross-device
// chain ordered on the GPUs (hipStreamWaitEvent). Freed blocks cached by size class; shutdown failing
// the work still queued. Size classes, cache caps and the errors of a poisoned or shut-down device are
// checked without a GPU. Not tested (it would fault the GPU of the whole process, and on AMD a memory
// fault aborts it): the poisoning itself, after a kernel that writes out of bounds.
// Built without HIP (RINGRT_HAVE_HIP undefined), the one case exits 77, which CTest reports as skipped.
#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <cstdlib>

#include "test/gpu/skip_without_hip.hpp"

#ifdef RINGRT_HAVE_HIP

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "codegen/compiler.hpp"
#include "codegen/kernel.hpp"
#include "codegen/render.hpp"
#include "core/errors.hpp"
#include "core/settings.hpp"
#include "rewrite/interpreter.hpp"
#include "runtime/api/tensor.hpp"
#include "runtime/device/device.hpp"
#include "runtime/hip/hip_check.hpp"
#include "runtime/hip/hip_device.hpp"
#include "test/codegen/random_kernel.hpp"
#include "test/gpu/hip_test_support.hpp"
#include "test/support/checks.hpp"
#include "test/support/runtime_switches.hpp"

using ringrt::test::set_switches;
using ringrt::test::switches;
#endif

BOOST_AUTO_TEST_SUITE(test_hip_device)
RINGRT_SKIP_WITHOUT_HIP()

#ifdef RINGRT_HAVE_HIP

using namespace hip_test;
using ringrt::test::message_has;
namespace hl = ringrt::hip_launch;

// ---------------------------------------------------------------------------------------------
// without a GPU

BOOST_AUTO_TEST_SUITE(no_gpu)

BOOST_AUTO_TEST_CASE(device_names_neither_throw_nor_abort) {
  RINGRT_RUN_IN_CHILD();  // an abort inside the HIP runtime fails this case instead of the whole run
  std::vector<std::string> names;
  BOOST_REQUIRE_NO_THROW(names = ringrt::hip_device_names());
  for (size_t i = 0; i < names.size(); ++i) BOOST_TEST(names[i] == fmt::format("HIP:{}", i));
  BOOST_TEST(ringrt::hip_device_names() == names);             // cached, stable
  if (kDriverNode && !std::filesystem::exists(kDriverNode)) {  // no GPU driver for this platform: no device
    BOOST_TEST_MESSAGE("no " << kDriverNode << ": expecting no HIP devices");
    BOOST_TEST(names.empty());
  }
}

// Logical HIP devices take the GPUs in turn: HIP:i on GPU i mod count.
BOOST_AUTO_TEST_CASE(logical_devices_take_the_gpus_in_turn) {
  struct Case {
    int logical, gpus, want;
  };
  for (Case c : {Case{0, 1, 0}, Case{3, 1, 0}, Case{0, 2, 0}, Case{1, 2, 1}, Case{2, 2, 0}, Case{5, 2, 1},
                 Case{7, 4, 3}, Case{8, 4, 0}, Case{1023, 8, 7}, Case{-1, 2, -1}, Case{0, 0, -1}, Case{3, -1, -1}})
    BOOST_TEST(ringrt::hip_physical_gpu(c.logical, c.gpus) == c.want, "HIP:" << c.logical << " of " << c.gpus);
}

// RINGRT_HIP_LOGICAL_DEVICES=4: HIP:0 .. HIP:3 where a GPU exists, none without one.
BOOST_AUTO_TEST_CASE(logical_devices_need_a_gpu) {
  if (!in_child_with_logical_devices("4")) return;
  std::vector<std::string> names = ringrt::hip_device_names();
  if (gpu_count() == 0) {
    BOOST_TEST(names.empty());
  } else {
    BOOST_TEST(names == (std::vector<std::string>{"HIP:0", "HIP:1", "HIP:2", "HIP:3"}), fmt::format("{}", names));
  }
  BOOST_CHECK_EXCEPTION(ringrt::make_hip_device(4), ringrt::DeviceError, message_has({"HIP:4", "GPU"}));
}

BOOST_AUTO_TEST_CASE(missing_devices_are_device_errors) {
  RINGRT_RUN_IN_CHILD();
  std::string next = fmt::format("HIP:{}", ringrt::hip_device_names().size());
  BOOST_CHECK_EXCEPTION(ringrt::device(next), ringrt::DeviceError, message_has({next, "CPU:0"}));
  BOOST_CHECK_EXCEPTION(ringrt::make_hip_device(static_cast<int>(ringrt::hip_device_names().size())),
                        ringrt::DeviceError, message_has({next, "GPU"}));
  BOOST_CHECK_EXCEPTION(ringrt::make_hip_device(-1), ringrt::DeviceError, message_has({"HIP:-1", "GPU"}));
}

BOOST_AUTO_TEST_CASE(check_macros_name_call_place_device_and_error) {
  RINGRT_RUN_IN_CHILD();  // HIP calls on a machine that may have no GPU
  // No such device; where there is no driver (CUDA) or no GPU, the runtime says that first.
  const hipError_t rc = hipSetDevice(1 << 20);
  BOOST_TEST((rc == hipErrorInvalidDevice || ringrt::hip_detail::no_gpu_error(rc)), rc);
  (void)hipGetLastError();
  const std::string name = hipGetErrorName(rc), text = hipGetErrorString(rc);
  auto fails = [] { RINGRT_HIP_CHECK("HIP:7", hipSetDevice(1 << 20)); };
  BOOST_CHECK_EXCEPTION(
      fails(), ringrt::DeviceError,
      message_has({"HIP:7: ", "hipSetDevice(1 << 20) failed at ", "test/gpu/test_hip_device.cpp:", name, text}));
  auto fails_as = [] { RINGRT_HIP_CHECK_AS(ringrt::CompileError, "HIP:7 (kernel k)", hipSetDevice(1 << 20)); };
  BOOST_CHECK_EXCEPTION(fails_as(), ringrt::CompileError, message_has({"HIP:7 (kernel k)", "hipSetDevice"}));
  BOOST_CHECK_NO_THROW(RINGRT_HIP_LOG("HIP:7", hipSetDevice(1 << 20)));  // logs to stderr, goes on
  BOOST_CHECK_NO_THROW(RINGRT_HIP_CHECK("HIP:7", hipSuccess));
  (void)hipGetLastError();
}

// Size classes: 256-byte steps below 1 MiB, eight per doubling above; a class is its own class, never
// smaller than the request, and wastes at most an eighth of it from 1 MiB on.
BOOST_AUTO_TEST_CASE(cache_size_classes_and_caps) {
  constexpr size_t MiB = size_t{1} << 20;
  constexpr size_t GiB = size_t{1} << 30;
  const std::vector<size_t> requests{0,       1,           256,         257,     MiB - 1,    MiB,
                                     MiB + 1, 2 * MiB - 1, 2 * MiB + 1, 3 * MiB, 5 * GiB + 1};
  const std::vector<size_t> classes{
      256, 256, 256, 512, MiB, MiB, MiB + MiB / 8, 2 * MiB, 2 * MiB + MiB / 4, 3 * MiB, 5 * GiB + GiB / 2};
  for (size_t i = 0; i < requests.size(); ++i)
    BOOST_TEST(hl::cache_block_size(requests[i]) == classes[i], requests[i] << " bytes");
  size_t prev = 0;
  for (size_t bytes = 1; bytes < (size_t{1} << 34); bytes = bytes * 5 / 4 + 37) {
    size_t block = hl::cache_block_size(bytes);
    BOOST_TEST_CONTEXT(bytes << " bytes -> " << block) {
      BOOST_TEST(block >= bytes);
      BOOST_TEST(block % 256 == 0u);
      BOOST_TEST(block >= prev);  // monotone
      BOOST_TEST(hl::cache_block_size(block) == block);
      if (bytes >= MiB) BOOST_TEST(block - bytes <= bytes / 8);
    }
    prev = block;
  }
  // The cap: blocks are kept while the total stays within it.
  BOOST_TEST(hl::cache_keeps(0, 256, 1024));
  BOOST_TEST(hl::cache_keeps(768, 256, 1024));
  BOOST_TEST(!hl::cache_keeps(1024, 256, 1024));
  BOOST_TEST(!hl::cache_keeps(0, 2048, 1024));
  BOOST_TEST(!hl::cache_keeps(0, 256, 0));  // no cap set yet: nothing kept
  size_t cached = 0, kept = 0;              // 100 MiB staging buffers under the pinned cap (256 MiB): two kept
  for (int i = 0; i < 5; ++i) {
    if (!hl::cache_keeps(cached, 100 * MiB, hl::kPinnedCacheCap)) continue;
    cached += 100 * MiB;
    ++kept;
  }
  BOOST_TEST(kept == 2u);
  BOOST_TEST(hl::device_cache_cap(size_t{64} << 30, 1) == size_t{16} << 30);  // a quarter of the GPU
  BOOST_TEST(hl::device_cache_cap(size_t{64} << 30, 4) == size_t{4} << 30);   // split among 4 logical devices
  BOOST_TEST(hl::device_cache_cap(size_t{64} << 30, 0) == size_t{16} << 30);
}

// The errors of work a poisoned or shut-down device does not run name the device, the work and (when
// poisoned) the first GPU error.
BOOST_AUTO_TEST_CASE(poisoned_and_shut_down_messages) {
  std::string first =
      "HIP:1: hipEventSynchronize(event) failed at runtime/hip/hip_device.cpp:420: "
      "hipErrorIllegalAddress (an illegal memory access was encountered) (after the launch of E_4)";
  std::string poisoned = hl::poisoned_message("HIP:1", "copy of 8 bytes from HIP:0", first);
  BOOST_TEST(poisoned.starts_with("HIP:1: copy of 8 bytes from HIP:0 not run: "));
  BOOST_TEST(poisoned.find("unusable after an earlier GPU error") != std::string::npos);
  BOOST_TEST(poisoned.ends_with(first));
  BOOST_TEST(hl::shut_down_message("HIP:2", "host function") ==
             "HIP:2: host function not run: the device was shut down first");
}

BOOST_AUTO_TEST_CASE(kernel_args_follow_render_hip_signature) {
  // (T* out, const U0* in0, ..., int dnum, long long n): pointers, then dnum, then n aligned to 8.
  int a = 0, b = 0, c = 0;
  struct Case {
    std::vector<void*> bufs;
    size_t dnum_at, n_at, size;
  };
  for (const Case& t :
       {Case{{}, 0, 8, 16}, Case{{&a}, 8, 16, 24}, Case{{&a, &b}, 16, 24, 32}, Case{{&a, &b, &c}, 24, 32, 40}}) {
    std::vector<std::byte> args = hl::pack_kernel_args(t.bufs, 3, (int64_t{1} << 40) + 5);
    BOOST_TEST_CONTEXT(t.bufs.size() << " buffers") {
      BOOST_TEST(args.size() == t.size);
      for (size_t i = 0; i < t.bufs.size(); ++i) {
        void* p = nullptr;
        std::memcpy(&p, args.data() + 8 * i, sizeof(p));
        BOOST_TEST(p == t.bufs[i]);
      }
      int32_t dnum = 0;
      long long n = 0;
      std::memcpy(&dnum, args.data() + t.dnum_at, sizeof(dnum));
      std::memcpy(&n, args.data() + t.n_at, sizeof(n));
      BOOST_TEST(dnum == 3);
      BOOST_TEST(n == (1LL << 40) + 5);
    }
  }
}

// The layout above is the one the compiler gives render_hip's kernels: the (offset, size) of every
// argument and the kernarg segment size in the code object's AMDGPU metadata, read with llvm-readelf
// (skipped when it is not installed). hipRTC compiles for gfx90a without a GPU. A cubin keeps its
// parameters in binary .nv.info records, not YAML: on NVIDIA the layout is checked by the GPU cases,
// which launch these kernels and compare every value with the interpreter.
namespace {
// A precondition: an AMD code object (not a cubin or a simulated one) and llvm-readelf to read its metadata.
struct HasAmdMetadata {
  boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const {
#if defined(RINGRT_TEST_NVIDIA) || defined(RINGRT_TEST_SIM)
    boost::test_tools::assertion_result r(false);
    r.message() << "a cubin or a simulated code object has no AMDGPU metadata: checked on AMD builds only";
#else
    boost::test_tools::assertion_result r(!find_readelf().empty());
    r.message() << "llvm-readelf not found: the code object metadata cannot be read";
#endif
    return r;
  }
};
}  // namespace

BOOST_AUTO_TEST_CASE(kernel_args_match_code_object_metadata, *boost::unit_test::precondition(HasAmdMetadata{})) {
  std::string readelf = find_readelf();
  Graph g;
  ringrt::DeviceSpec two(ringrt::DeviceTuple{"HIP:0", "HIP:1"});
  UOp dn = ringrt::device_num(2, &g.g).cast(DType::float32).reshape({1}).expand({100});
  UOp a = g.buffer(two, DType::float16, 100, 2), b = g.buffer(two, DType::int8, 100, 2);
  UOp c = g.buffer(two, DType::float32, 100, 2);
  const std::vector<std::pair<UOp, size_t>> asts{
      {dn, 0}, {a.cast(DType::float32) + dn, 1}, {a.cast(DType::float32) + b.cast(DType::float32) + c + dn, 3}};
  codegen::HiprtcCompiler compiler(RINGRT_TEST_GPU_ARCH);
  for (const auto& [ast, inputs] : asts) {
    codegen::Kernel k = codegen::lower_kernel(ast);
    BOOST_TEST_CONTEXT(k.name << " with " << inputs << " inputs") {
      BOOST_REQUIRE_EQUAL(k.inputs.size(), inputs);
      std::filesystem::path hsaco = compiler.compile_to_path(codegen::render_hip(k), k.name);
      std::string notes = read_notes(readelf, hsaco);
      auto [offsets, sizes, segment] = kernel_arg_layout(notes);
      const size_t args = inputs + 3;  // out, the inputs, dnum, n
      BOOST_REQUIRE_MESSAGE(offsets.size() >= args && sizes.size() >= args, "expected " << args << " arguments in\n"
                                                                                        << notes);
      std::vector<void*> bufs(inputs + 1, nullptr);
      size_t packed = hl::pack_kernel_args(bufs, 0, 0).size();
      for (size_t i = 0; i <= inputs; ++i) {
        BOOST_TEST(offsets[i] == 8 * i);
        BOOST_TEST(sizes[i] == 8u);
      }
      BOOST_TEST(offsets[inputs + 1] == 8 * (inputs + 1));  // dnum
      BOOST_TEST(sizes[inputs + 1] == 4u);
      BOOST_TEST(offsets[inputs + 2] == 8 * (inputs + 2));  // n
      BOOST_TEST(sizes[inputs + 2] == 8u);
      BOOST_TEST(packed == offsets[inputs + 2] + 8);
      BOOST_TEST(segment >= packed);  // hidden arguments, if any, follow ours
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------------
// on a GPU

BOOST_AUTO_TEST_SUITE(gpu, *ringrt::testing::needs({"HIP", 1}))

BOOST_AUTO_TEST_CASE(allocate_and_copy_round_trip) {
  Device& dev = ringrt::device("HIP:0");
  BOOST_TEST(dev.name() == "HIP:0");
  for (size_t bytes : {size_t{1}, size_t{255}, size_t{256}, size_t{4097}, size_t{1} << 20, (size_t{3} << 20) + 5}) {
    BOOST_TEST_CONTEXT(bytes << " bytes") {
      std::vector<unsigned char> in = pattern(bytes, 1), out(bytes, 0);
      void* p = dev.allocate(bytes);
      void* other = dev.allocate(bytes);
      BOOST_TEST(p != other);
      dev.copy_in(p, in.data(), bytes);
      dev.copy_out(out.data(), p, bytes);
      BOOST_TEST((in == out));
      dev.free(p, bytes);
      BOOST_TEST(dev.allocate(bytes) == p);  // the cache hands the freed block back
      dev.free(p, bytes);
      dev.free(other, bytes);
    }
  }
  dev.synchronize();
}

// A freed block is cached as its size class (memory_stats().cached grows by the class, not the
// request) and handed back for any request of that class.
BOOST_AUTO_TEST_CASE(freed_blocks_are_cached_by_size_class) {
  Device& dev = ringrt::device("HIP:0");
  for (size_t bytes : {size_t{1000}, (size_t{1} << 20) + 1}) {
    BOOST_TEST_CONTEXT(bytes << " bytes") {
      size_t block = hl::cache_block_size(bytes);
      void* p = dev.allocate(bytes);
      int64_t cached = dev.memory_stats().cached;
      dev.free(p, bytes);
      BOOST_TEST(dev.memory_stats().cached - cached == static_cast<int64_t>(block));
      BOOST_TEST(dev.allocate(block - 1) == p);  // another size of the same class
      dev.free(p, block - 1);
    }
  }
}

// Shutdown does not run what is still queued: those Events fail at once with a DeviceError (while the
// task the issuer is on, a host function blocked here, still finishes afterwards and succeeds).
BOOST_AUTO_TEST_CASE(shutdown_fails_queued_work) {
  std::unique_ptr<Device> dev = ringrt::make_hip_device(0);
  std::atomic<bool> started{false}, release{false};
  Event running = dev->submit(
      [&] {
        started = true;
        while (!release) std::this_thread::sleep_for(1ms);
      },
      {});
  while (!started) std::this_thread::sleep_for(1ms);
  std::atomic<bool> ran{false};
  Event queued = dev->submit([&] { ran = true; }, {});
  Event copy = dev->copy_from(*dev, nullptr, nullptr, 0, {});
  std::thread stopper([&] { dev.reset(); });  // waits for `running`, up to its deadline
  for (const Event* e : {&queued, &copy})
    BOOST_CHECK_EXCEPTION(e->wait_for(kWait), ringrt::DeviceError, message_has({"HIP:0", "not run", "shut down"}));
  release = true;
  stopper.join();
  BOOST_TEST(running.wait_for(kWait));
  BOOST_TEST(!ran.load());
}

BOOST_AUTO_TEST_CASE(kernels_match_interpreter) {
  Device& dev = ringrt::device("HIP:0");
  Graph g;
  ringrt::DeviceSpec one(std::string("HIP:0"));
  ringrt::DeviceSpec two(ringrt::DeviceTuple{"HIP:0", "HIP:1"});
  // float32, 1000 elements (not a multiple of the block size): a * b + a
  UOp a = g.buffer(one, DType::float32, 1000, 1), b = g.buffer(one, DType::float32, 1000, 1);
  check_kernel(dev, a * b + a, g.lookup(), 1, "a * b + a");
  // a reduction: the sum of each row of a (37, 300) matrix
  UOp m = g.buffer(one, DType::float32, 37 * 300, 1).reshape({37, 300});
  check_kernel(dev, m.r(ringrt::Ops::ADD, {1}), g.lookup(), 1, "row sums");
  // int32 over 2^20 + 3 elements (4097 blocks): max(x, y) + x, wrapping
  UOp x = g.buffer(one, DType::int32, (1 << 20) + 3, 1), y = g.buffer(one, DType::int32, (1 << 20) + 3, 1);
  check_kernel(dev, x.alu(ringrt::Ops::MAX, {y}) + x, g.lookup(), 1, "max(x, y) + x");
  // _device_num: a float16 buffer on two devices plus the device number
  UOp h = g.buffer(two, DType::float16, 513, 2);
  UOp dn = ringrt::device_num(2, &g.g).cast(DType::float16).reshape({1}).expand({513});
  check_kernel(dev, h + dn, g.lookup(), 2, "h + _device_num");
  // compile is cached per kernel
  codegen::Kernel k = codegen::lower_kernel(a * b + a);
  BOOST_TEST(dev.compile(k) == dev.compile(k));
}

BOOST_AUTO_TEST_CASE(random_kernels_match_interpreter) {
  Device& dev = ringrt::device("HIP:0");
  ringrt::UOpGraph g;
  for (uint64_t seed = 5000; seed < 5060; ++seed) {
    BOOST_TEST_CHECKPOINT("random kernel seed " << seed);
    ringrt::test::RandomKernel rk = ringrt::test::KernelGen(seed, g).make();
    check_kernel(dev, rk.ast, rk.lookup(), rk.ndev, fmt::format("random kernel seed {}", seed));
  }
}

BOOST_AUTO_TEST_CASE(queue_order_events_and_errors) {
  Device& dev = ringrt::device("HIP:0");
  Device& cpu = ringrt::device("CPU:0");
  Graph g;
  constexpr int64_t n = 1000;
  constexpr size_t bytes = n * sizeof(float);
  UOp in = g.buffer(ringrt::DeviceSpec(std::string("HIP:0")), DType::float32, n, 1);
  auto ck = dev.compile(codegen::lower_kernel(in + in));
  BOOST_CHECK_THROW(dev.launch(*ck, {}, 0, {}), ringrt::InternalError);  // wrong number of buffers
  BOOST_CHECK_THROW(dev.launch(*cpu.compile(ck->kernel()), {nullptr, nullptr}, 0, {}), ringrt::InternalError);

  // A cpu device fills host memory late; the GPU copies it in once that event is done (a host wait),
  // then, with no `after`, the kernel must still run after the copy (in-order queue across the copy
  // and compute streams), and host work after the kernel.
  float* host = static_cast<float*>(cpu.allocate(bytes));
  Event filled = cpu.submit(
      [host] {
        std::this_thread::sleep_for(50ms);
        for (int64_t i = 0; i < n; ++i) host[i] = static_cast<float>(i) * 0.5f;
      },
      {});
  void* src = dev.allocate(bytes);
  void* out = dev.allocate(bytes);
  Event copied = dev.copy_from(cpu, host, src, bytes, {filled});
  Event ran = dev.launch(*ck, {out, src}, 0, {});
  std::vector<float> seen(n, -1.0f);
  std::atomic<bool> earlier_done{false};
  Event checked = dev.submit(
      [&] {
        earlier_done = copied.done() && ran.done();
        dev.copy_out(seen.data(), out, bytes);  // HIP calls are allowed in submitted work
      },
      {});
  wait(checked, "the host function after the kernel");
  BOOST_TEST(earlier_done.load());
  for (int64_t i = 0; i < n; ++i) BOOST_TEST(seen[static_cast<size_t>(i)] == static_cast<float>(i), "element " << i);

  // An error in submitted work completes its Event with it; work after it still runs; work that
  // waits for it fails with the same error and does not run.
  Event bad = dev.submit([] { throw std::runtime_error("boom"); }, {});
  BOOST_CHECK_EXCEPTION(bad.wait_for(kWait), std::runtime_error, message_has({"boom"}));
  std::atomic<bool> dependent_ran{false};
  Event dependent = dev.submit([&] { dependent_ran = true; }, {bad});
  BOOST_CHECK_EXCEPTION(dependent.wait_for(kWait), std::runtime_error, message_has({"boom"}));
  BOOST_TEST(!dependent_ran.load());
  wait(dev.submit([] {}, {}), "work after a failure");

  dev.synchronize();
  dev.free(src, bytes);
  dev.free(out, bytes);
  cpu.free(host, bytes);
}

// GPU work's Events carry their hipEvent (Event::native); host work's its gate. A cpu device copies
// from a GPU through the GPU's copy_out (not a memcpy of a device pointer), and a GPU copies from a
// cpu device through that device's copy_out into pinned memory.
BOOST_AUTO_TEST_CASE(native_handles_and_copies_to_and_from_a_cpu_device) {
  Device& dev = ringrt::device("HIP:0");
  Device& cpu = ringrt::device("CPU:0");
  constexpr size_t bytes = 5000;
  std::vector<unsigned char> in = pattern(bytes, 3), out(bytes, 0);
  void* p = dev.allocate(bytes);
  void* q = dev.allocate(bytes);
  void* r = dev.allocate(bytes);
  dev.copy_in(p, in.data(), bytes);
  Event moved = dev.copy_from(dev, p, q, bytes, {});  // on this device
  BOOST_TEST(moved.wait_ready(kWait));
  BOOST_TEST(static_cast<bool>(moved.native()));
  Event host_work = dev.submit([] {}, {moved});
  wait(host_work, "host work");
  BOOST_TEST(static_cast<bool>(host_work.native()));  // its gate: other HIP devices wait for it on the GPU
  auto* host = static_cast<unsigned char*>(cpu.allocate(bytes));
  Event down = cpu.copy_from(dev, q, host, bytes, {moved});
  wait(down, "the copy to CPU:0");
  BOOST_TEST(std::memcmp(host, in.data(), bytes) == 0);
  Event up = dev.copy_from(cpu, host, r, bytes, {down});
  wait(up, "the copy from CPU:0");
  dev.copy_out(out.data(), r, bytes);
  BOOST_TEST((out == in));
  cpu.free(host, bytes);
  for (void* b : {p, q, r}) dev.free(b, bytes);
}

// A copy of 0 bytes completes after what it waits for, and its Event carries that order (a native
// handle): a cpu device's copy that waits for it alone reads the kernel's output.
BOOST_AUTO_TEST_CASE(zero_byte_copy_is_ordered_after_a_kernel) {
  Device& dev = ringrt::device("HIP:0");
  Device& cpu = ringrt::device("CPU:0");
  Graph g;
  constexpr int64_t n = 1 << 16;
  constexpr size_t bytes = n * sizeof(float);
  UOp a = g.buffer(ringrt::DeviceSpec(std::string("HIP:0")), DType::float32, n, 1);
  auto ck = dev.compile(codegen::lower_kernel(a + a));
  std::vector<float> src = g.data.begin()->second[0].to_vector<float>();
  void* in = dev.allocate(bytes);
  void* out = dev.allocate(bytes);
  dev.copy_in(in, src.data(), bytes);
  Event ran = dev.launch(*ck, {out, in}, 0, {});
  Event zero = dev.copy_from(dev, in, out, 0, {ran});
  BOOST_TEST(zero.wait_ready(kWait));
  BOOST_TEST(static_cast<bool>(zero.native()));
  auto* host = static_cast<float*>(cpu.allocate(bytes));
  wait(cpu.copy_from(dev, out, host, bytes, {zero}), "the copy to CPU:0");
  BOOST_TEST(ran.done());  // the device completes its work in order
  for (int64_t i = 0; i < n; ++i) BOOST_TEST(host[i] == 2 * src[static_cast<size_t>(i)], "element " << i);
  cpu.free(host, bytes);
  dev.free(in, bytes);
  dev.free(out, bytes);
}

// Four logical devices on GPU 0 (RINGRT_HIP_LOGICAL_DEVICES = 4 x the GPUs: HIP:0, HIP:g, HIP:2g,
// HIP:3g, in a child process): each reads the others in place, copies between them run on the GPU
// (device to device, ordered by hipEvents), and a ring allreduce over them, with and without peer
// reads, matches host arithmetic.
BOOST_AUTO_TEST_CASE(four_logical_devices_on_one_gpu) {
  const int gpus = gpu_count();
  if (!in_child_with_logical_devices(std::to_string(4 * gpus))) return;
  std::vector<std::string> names;
  std::vector<Device*> devs;
  for (int i = 0; i < 4; ++i) devs.push_back(&ringrt::device(names.emplace_back(fmt::format("HIP:{}", i * gpus))));
  for (Device* a : devs)
    for (Device* b : devs) BOOST_TEST(a->can_read_peer(*b), a->name() << " reads " << b->name());
  BOOST_TEST(!devs[0]->can_read_peer(ringrt::device("CPU:0")));

  constexpr size_t bytes = 4099;  // HIP:0 -> 1 -> 2 -> 3 -> HIP:0 again, each copy after the one before
  std::vector<unsigned char> in = pattern(bytes, 4), out(bytes, 0);
  std::vector<void*> bufs;
  for (Device* d : devs) bufs.push_back(d->allocate(bytes));
  bufs.push_back(devs[0]->allocate(bytes));
  devs[0]->copy_in(bufs[0], in.data(), bytes);
  Event e;
  e.set_done();
  for (size_t i = 1; i <= 4; ++i) {
    e = devs[i % 4]->copy_from(*devs[i - 1], bufs[i - 1], bufs[i], bytes, {e});
    BOOST_TEST(e.wait_ready(kWait));
    BOOST_TEST(static_cast<bool>(e.native()), "copy " << i << " is GPU work, not staged on the host");
  }
  wait(e, "the copy back to the first device");
  devs[0]->copy_out(out.data(), bufs[4], bytes);
  BOOST_TEST((out == in));
  for (size_t i = 0; i <= 4; ++i) devs[i % 4]->free(bufs[i], bytes);

  ringrt::AllreduceSettings s = ringrt::current_settings();
  s.ring = 2;
  ringrt::ScopedSettings scope(s);
  for (bool peer_reads : {true, false}) {
    set_switches(switches(peer_reads, true, true));
    ringrt::Tensor x = ringrt::Tensor::arange(4 * 300).reshape({4, 300}).shard(names, 0);
    std::vector<float> got = x.sum({0}).to_vector<float>();
    BOOST_TEST_REQUIRE(got.size() == 300u);
    for (size_t j = 0; j < got.size(); ++j)  // sum over rows i of i * 300 + j
      BOOST_TEST(got[j] == static_cast<float>(1800 + 4 * j), "element " << j << ", peer reads " << peer_reads);
  }
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------------
// on two GPUs

BOOST_AUTO_TEST_SUITE(two_gpus, *ringrt::testing::needs({"HIP", 2}))

BOOST_AUTO_TEST_CASE(peer_copies_both_ways) {
  Device& d0 = ringrt::device("HIP:0");
  Device& d1 = ringrt::device("HIP:1");
  for (size_t bytes : {size_t{1}, size_t{4096}, (size_t{8} << 20) + 3}) {
    BOOST_TEST_CONTEXT(bytes << " bytes") {
      std::vector<unsigned char> in = pattern(bytes, 2), back(bytes, 0), mid(bytes, 0);
      void* p0 = d0.allocate(bytes);
      void* q0 = d0.allocate(bytes);
      void* p1 = d1.allocate(bytes);
      d0.copy_in(p0, in.data(), bytes);
      Event there = d1.copy_from(d0, p0, p1, bytes, {});
      Event back_again = d0.copy_from(d1, p1, q0, bytes, {there});
      wait(back_again, "the copy back");
      BOOST_TEST(there.done());
      d1.copy_out(mid.data(), p1, bytes);
      d0.copy_out(back.data(), q0, bytes);
      BOOST_TEST((mid == in));
      BOOST_TEST((back == in));
      d0.free(p0, bytes);
      d0.free(q0, bytes);
      d1.free(p1, bytes);
    }
  }
}

BOOST_AUTO_TEST_CASE(kernel_copy_kernel_across_devices) {
  // HIP:0 computes a + a, HIP:1 copies it after that event and computes its own (x + x): 4a.
  Device& d0 = ringrt::device("HIP:0");
  Device& d1 = ringrt::device("HIP:1");
  Graph g;
  constexpr int64_t n = 4099;
  constexpr size_t bytes = n * sizeof(float);
  UOp a = g.buffer(ringrt::DeviceSpec(std::string("HIP:0")), DType::float32, n, 1);
  codegen::Kernel k = codegen::lower_kernel(a + a);
  const HostBuffer& data = g.data.begin()->second[0];
  void* in0 = d0.allocate(bytes);
  void* out0 = d0.allocate(bytes);
  void* in1 = d1.allocate(bytes);
  void* out1 = d1.allocate(bytes);
  d0.copy_in(in0, data.bytes.data(), bytes);
  Event e0 = d0.launch(*d0.compile(k), {out0, in0}, 0, {});
  Event e1 = d1.copy_from(d0, out0, in1, bytes, {e0});
  Event e2 = d1.launch(*d1.compile(k), {out1, in1}, 0, {e1});
  wait(e2, "the kernel on HIP:1");
  std::vector<float> got(n), src = data.to_vector<float>();
  d1.copy_out(got.data(), out1, bytes);
  for (int64_t i = 0; i < n; ++i)
    BOOST_TEST(got[static_cast<size_t>(i)] == 4 * src[static_cast<size_t>(i)], "element " << i);
  d0.free(in0, bytes);
  d0.free(out0, bytes);
  d1.free(in1, bytes);
  d1.free(out1, bytes);
}

BOOST_AUTO_TEST_SUITE_END()

#endif

BOOST_AUTO_TEST_SUITE_END()
