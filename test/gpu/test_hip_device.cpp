// Tests of the hip backend (runtime/hip/hip_device.cpp); label gpu.
//
// Everywhere HIP is built, GPU or not: hip_device_names() neither throws nor aborts (checked in a
// child process) and is empty where there is no /dev/kfd; the registry and make_hip_device report a
// missing GPU as a DeviceError naming it; the check macros' messages; the launch geometry; the
// kernel-argument layout, against render_hip's signature and against the argument offsets in the
// metadata of a hipRTC code object (gfx90a, read with llvm-readelf).
// With a GPU (cases with a precondition, skipped without one): allocation and copy round trips, kernels
// lowered from UOp graphs (hand-written and random, test/codegen/random_kernel.hpp) compared bit for bit
// with the reference interpreter, queue order and events (host work, a cpu device's event, errors);
// Event native handles and copies between a GPU and a cpu device; with two GPUs, peer copies and a
// cross-device chain ordered on the GPUs (hipStreamWaitEvent).
// Built without HIP (RINGRT_HAVE_HIP undefined), the one case exits 77, which CTest reports as skipped.
#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <cstdlib>

#ifdef RINGRT_HAVE_HIP

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "codegen/compiler.hpp"
#include "codegen/kernel.hpp"
#include "codegen/render.hpp"
#include "rewrite/errors.hpp"
#include "rewrite/interpreter.hpp"
#include "runtime/device/device.hpp"
#include "runtime/hip/hip_check.hpp"
#include "runtime/hip/hip_device.hpp"
#include "test/codegen/random_kernel.hpp"
#include "test/support/checks.hpp"

using namespace std::chrono_literals;
using ringrt::Device;
using ringrt::DType;
using ringrt::Event;
using ringrt::HostBuffer;
using ringrt::UOp;
using ringrt::test::message_has;
namespace codegen = ringrt::codegen;
namespace hl = ringrt::hip_launch;

namespace {

constexpr auto kWait = 120s;  // generous: the first launch on a GPU includes hipRTC compiles

// A precondition: at least n GPUs (the case is skipped, not failed, without them).
struct GpusAtLeast {
  size_t n;
  boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const {
    size_t have = ringrt::hip_device_names().size();
    boost::test_tools::assertion_result r(have >= n);
    r.message() << "needs " << n << " GPU(s); the HIP runtime reports " << have;
    return r;
  }
};

void wait(const Event& e, const char* what) { BOOST_REQUIRE_MESSAGE(e.wait_for(kWait), what << " did not complete"); }

std::vector<unsigned char> pattern(size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>((i * 131 + seed * 17 + (i >> 9)) & 0xff);
  return v;
}

// Runs kernel k on dev with _device_num = d: uploads its inputs (lookup's data for device d, or the one
// copy), launches, and returns the output. The output starts as 0xab bytes, so a missed write shows.
HostBuffer run_on(Device& dev, const codegen::Kernel& k, const ringrt::BufferLookup& lookup, int d) {
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
void check_kernel(Device& dev, const UOp& ast, const ringrt::BufferLookup& lookup, int ndev, const std::string& label) {
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

}  // namespace

// ---------------------------------------------------------------------------------------------
// without a GPU

BOOST_AUTO_TEST_SUITE(no_gpu)

BOOST_AUTO_TEST_CASE(device_names_neither_throw_nor_abort) {
  RINGRT_RUN_IN_CHILD();  // an abort inside the HIP runtime fails this case instead of the whole run
  std::vector<std::string> names;
  BOOST_REQUIRE_NO_THROW(names = ringrt::hip_device_names());
  for (size_t i = 0; i < names.size(); ++i) BOOST_TEST(names[i] == fmt::format("HIP:{}", i));
  BOOST_TEST(ringrt::hip_device_names() == names);  // cached, stable
  if (!std::filesystem::exists("/dev/kfd")) {       // no AMD GPU driver: no device
    BOOST_TEST_MESSAGE("no /dev/kfd: expecting no HIP devices");
    BOOST_TEST(names.empty());
  }
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
  BOOST_TEST((rc == hipErrorInvalidDevice || rc == hipErrorInsufficientDriver || rc == hipErrorNoDevice), rc);
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

BOOST_AUTO_TEST_CASE(launch_blocks_cover_every_element_once) {
  BOOST_TEST(hl::launch_blocks(0) == 0);
  BOOST_TEST(hl::launch_blocks(-5) == 0);
  BOOST_TEST(hl::launch_blocks(1) == 1);
  BOOST_TEST(hl::launch_blocks(256) == 1);
  BOOST_TEST(hl::launch_blocks(257) == 2);
  BOOST_TEST(hl::launch_blocks((1 << 20) + 3) == 4097);
  BOOST_TEST(hl::kBlockSize == 256u);
  BOOST_TEST(hl::kMaxElements == int64_t{4294967040});  // blocks * threads stays a 32-bit count
  BOOST_TEST(hl::launch_blocks(hl::kMaxElements) * hl::kBlockSize <= int64_t{0xffffffff});
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
BOOST_AUTO_TEST_CASE(kernel_args_match_code_object_metadata) {
#ifdef RINGRT_TEST_NVIDIA
  BOOST_TEST_MESSAGE("a cubin has no AMDGPU metadata: checked on AMD builds only");
  return;
#endif
  std::string readelf;
  for (const char* tool : {"llvm-readelf", "llvm-readelf-15", "llvm-readelf-14"}) {
    if (std::system(fmt::format("command -v {} >/dev/null 2>&1", tool).c_str()) == 0) {
      readelf = tool;
      break;
    }
  }
  if (readelf.empty()) {
    BOOST_TEST_MESSAGE("llvm-readelf not found: the code object metadata is not checked");
    return;
  }
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
      std::string cmd = fmt::format("{} --notes '{}' 2>&1", readelf, hsaco.string());
      std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
      BOOST_REQUIRE(pipe);
      std::string notes;
      char chunk[4096];
      for (size_t got; (got = std::fread(chunk, 1, sizeof chunk, pipe.get())) > 0;) notes.append(chunk, got);
      // One YAML map per argument, keys sorted (.offset before .size); hidden arguments, if any, last.
      static const std::regex kField(R"(\n\s*(?:- )?\.(offset|size|kernarg_segment_size):\s+(\d+))");
      std::vector<size_t> offsets, sizes;
      size_t segment = 0;
      for (std::sregex_iterator it(notes.begin(), notes.end(), kField), end; it != end; ++it) {
        size_t v = std::stoul((*it)[2]);
        std::string key = (*it)[1];
        if (key == "offset") {
          offsets.push_back(v);
        } else if (key == "size") {
          sizes.push_back(v);
        } else {
          segment = v;
        }
      }
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

BOOST_AUTO_TEST_SUITE(gpu, *boost::unit_test::precondition(GpusAtLeast{1}))

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

// GPU work's Events carry their hipEvent (Event::native); host work's do not. A cpu device copies
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
  BOOST_TEST(!host_work.native());
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

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------------
// on two GPUs

BOOST_AUTO_TEST_SUITE(two_gpus, *boost::unit_test::precondition(GpusAtLeast{2}))

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

#else  // !RINGRT_HAVE_HIP

BOOST_AUTO_TEST_CASE(hip_backend_not_built) {
  std::fputs("skipped: ringrt was built without HIP (RINGRT_HAVE_HIP is not defined)\n", stderr);
  std::fflush(nullptr);
  std::exit(77);  // CTest: SKIP_RETURN_CODE 77
}

#endif
