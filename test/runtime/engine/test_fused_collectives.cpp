// Fused collectives (rewrite/collective.hpp): oneshot, twoshot and ring_fused allreduce, reduce_scatter
// and allgather, one item and one launch per device, checked against the interpreter (bit for bit:
// oneshot and twoshot fold in tuple order, ring_fused as the lowered ring) and host arithmetic, on every path that runs
// them: the cpu backend's phases on the calling thread, its device threads meeting at atomic barriers, and the
// step-by-step default of Device::launch_collective that any backend gets. The allreduce matrix
// (test/support/allreduce_matrix.hpp) covers them too.
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "codegen/item_kernel.hpp"
#include "core/errors.hpp"
#include "core/settings.hpp"
#include "rewrite/collective.hpp"
#include "rewrite/rules/multi.hpp"
#include "runtime/api/tensor.hpp"
#include "runtime/device/device.hpp"
#include "test/support/runtime_switches.hpp"

namespace bdata = boost::unit_test::data;
using namespace ringrt;
using ringrt::test::set_switches;

namespace {

AllreduceSettings forced(const std::string& algo) {
  AllreduceSettings s;
  s.algorithm = algo;
  return s;
}

// Switches the cpu backend's inline path off (inline_small) for the test's scope: each device's steps
// then run as a task on its own queue thread and the devices meet at the barrier.
class Path {
 public:
  explicit Path(bool queued) : saved_(runtime_params()) {
    RuntimeParams p = saved_;
    p.inline_small = !queued;
    set_switches(p);
  }
  ~Path() { set_switches(saved_); }

 private:
  RuntimeParams saved_;
};

// (ndev, numel) values of dtype: small integers (every sum, product, max and min exact in float32),
// with -0.0 and, in float dtypes, a few fractions that round.
HostBuffer make_data(DType dtype, int ndev, int64_t numel, uint32_t seed) {
  HostBuffer b(dtype, {ndev, numel});
  uint32_t x = seed * 2654435761u + 1;
  for (int64_t i = 0; i < b.numel(); ++i) {
    x = x * 1664525u + 1013904223u;
    double v = static_cast<double>(static_cast<int>(x >> 28) - 8);
    if (is_float(dtype) && i % 5 == 1) v += 0.1 * static_cast<double>(i % 7);
    if (is_float(dtype) && i % 11 == 3) v = -0.0;
    b.set(i, v);
  }
  return b;
}

// Every fused algorithm x 2, 3 and 4 devices x the cpu backend's inline (false) and queued (true) paths.
auto fused_paths() {
  return bdata::make({"oneshot", "twoshot", "ring_fused"}) * bdata::make({2, 3, 4}) * bdata::make({false, true});
}

struct Case {
  DType dtype;
  ReduceOp op;
};

// r realized; every device's bytes are the interpreter's (interpret_shards). Its shards.
std::vector<Tensor> realized_as_interpreted(Tensor r) {
  std::vector<HostBuffer> want = r.interpret_shards();
  r.realize();
  std::vector<Tensor> got = r.shards();
  BOOST_TEST_REQUIRE(got.size() == want.size());
  for (size_t d = 0; d < got.size(); ++d) BOOST_TEST((got[d].host().bytes == want[d].bytes), "device " << d);
  return got;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_fused_collectives)

// Every device's result is the interpreter's, byte for byte (so every device holds the same bytes),
// for dtypes that round (16-bit floats) and wrap (int8), every reduce op, a buffer smaller than the
// device count (empty twoshot chunks) and an odd one; one fused item, no copies.
BOOST_DATA_TEST_CASE(match_the_interpreter_bit_for_bit, fused_paths(), algo, ndev, queued) {
  ScopedSettings scope(forced(algo));
  Path path(queued);
  auto devs = cpu_devices(ndev);
  const std::vector<Case> cases{{DType::float32, ReduceOp::sum},  {DType::float32, ReduceOp::prod},
                                {DType::float32, ReduceOp::min},  {DType::float16, ReduceOp::sum},
                                {DType::bfloat16, ReduceOp::max}, {DType::int8, ReduceOp::sum},
                                {DType::int32, ReduceOp::min},    {DType::float64, ReduceOp::sum}};
  uint32_t seed = 7;
  for (const Case& c : cases)
    for (int64_t numel : {int64_t{1}, int64_t{ndev - 1}, int64_t{1001}}) {
      if (numel == 0) continue;
      BOOST_TEST_CONTEXT(dtype_name(c.dtype) << " " << reduce_op_name(c.op) << " numel " << numel) {
        HostBuffer data = make_data(c.dtype, ndev, numel, seed++);
        Tensor x = Tensor::from_host(data).shard(devs, 0);
        x.realize();
        Tensor r = c.op == ReduceOp::sum    ? x.sum({0})
                   : c.op == ReduceOp::prod ? x.prod({0})
                   : c.op == ReduceOp::max  ? x.max({0})
                                            : x.min({0});
        Schedule s = r.schedule();
        BOOST_TEST(s.algorithms == std::vector<std::string>{algo}, boost::test_tools::per_element());
        BOOST_TEST(s.fused_items.size() == 1u);
        BOOST_TEST(s.copies().empty());
        std::vector<Tensor> got = realized_as_interpreted(r);
        if (c.dtype == DType::int8 && c.op == ReduceOp::sum)  // host arithmetic: the wrapped sum
          for (int64_t j = 0; j < numel; ++j) {
            int64_t sum = 0;
            for (int d = 0; d < ndev; ++d) sum += data.get_int(d * numel + j);
            BOOST_TEST(got[0].host().get_int(j) == static_cast<int8_t>(static_cast<uint8_t>(sum)));
          }
      }
    }
}

// DDP's loop: a persistent bucket written from the host and allreduced in place, step after step. The
// barrier's counter runs on across calls (never reset), also where calls on the calling thread and on the
// device threads alternate (mixed); after the first step nothing is built again.
BOOST_DATA_TEST_CASE(in_place_steps_count_barriers_up,
                     bdata::make({"oneshot", "twoshot", "ring_fused"}) * bdata::make({"inline", "queued", "mixed"}),
                     algo, paths) {
  ScopedSettings scope(forced(algo));
  std::optional<Path> path;
  const int n = 4, steps = 40;
  const int64_t numel = 4099;
  auto devs = cpu_devices(n);
  Tensor bucket = Tensor::full({n, numel}, 0, DType::int32).contiguous().shard(devs, 0);
  bucket.realize();
  size_t built = 0;
  for (int step = 0; step < steps; ++step) {
    std::vector<HostBuffer> parts;
    for (int d = 0; d < n; ++d) {
      HostBuffer p(DType::int32, {1, numel});
      for (int64_t j = 0; j < numel; ++j) p.set_int(j, (step + 1) * (d + 1) + j % 13);
      parts.push_back(p);
    }
    bucket.write_shards(parts);
    bucket.allreduce_in_place();
    BOOST_TEST(bucket.algorithms() == std::vector<std::string>{algo}, boost::test_tools::per_element());
    path.reset();
    path.emplace(paths == std::string("queued") || (paths == std::string("mixed") && step % 3 == 1));
    bucket.realize();
    if (step == 1) built = Tensor::engine_stats().programs_built;
    if (step != steps - 1 && step % 9 != 0) continue;
    for (int d = 0; d < n; ++d) {
      HostBuffer got = bucket.shards()[static_cast<size_t>(d)].host();
      for (int64_t j = 0; j < numel; ++j)  // sum over devices e of (step+1)(e+1) + j%13
        BOOST_TEST_REQUIRE(got.get_int(j) == (step + 1) * n * (n + 1) / 2 + n * (j % 13),
                           "step " << step << " device " << d << " element " << j);
    }
  }
  BOOST_TEST(Tensor::engine_stats().programs_built == built);
}

namespace {

// Runs algo over ndev cpu devices through launch_collective with hand-built launches (rewrite/
// collective.hpp fused_steps), int32 inputs d*1000 + j, on `path`: "generic" (Device::launch_collective,
// step by step with events), "queued" (the cpu backend's device threads and barrier), "inline" (its
// phases on this thread). Returns every device's output.
std::vector<std::vector<int32_t>> run_by_hand(FusedAlgorithm algo, int ndev, int64_t numel, bool in_place, bool push,
                                              const std::string& path, CollectiveCall& call,
                                              const std::vector<Event>& after = {},
                                              std::vector<Event>* events = nullptr, int64_t slices = 1) {
  auto names = cpu_devices(ndev);
  UOp buf = new_buffer(DeviceSpec(DeviceTuple(names)), numel, DType::int32);
  ScheduleItem item{ScheduleItem::Kind::collective, fused_allreduce(buf, Ops::ADD, algo), {}, buf.device(), {}, {}};
  std::vector<std::vector<int32_t>> in(static_cast<size_t>(ndev)), out(static_cast<size_t>(ndev)),
      scratch(static_cast<size_t>(ndev));
  for (int d = 0; d < ndev; ++d)
    for (int64_t j = 0; j < numel; ++j) in[static_cast<size_t>(d)].push_back(static_cast<int32_t>(d * 1000 + j));
  std::vector<std::shared_ptr<CompiledKernel>> kernels;
  std::vector<CollectiveLaunch> launches;
  for (int d = 0; d < ndev; ++d) {
    auto& o = out[static_cast<size_t>(d)];
    o = in_place ? in[static_cast<size_t>(d)] : std::vector<int32_t>(static_cast<size_t>(numel), -1);
    scratch[static_cast<size_t>(d)].assign(static_cast<size_t>(numel), -1);
  }
  for (int d = 0; d < ndev; ++d) {
    Device& dev = device(names[static_cast<size_t>(d)]);
    CollectiveLaunch l{
        &dev, d, fused_steps(algo, ndev, numel, d, in_place, push, FusedCollective::allreduce, slices), {}, {}, {}, {}};
    for (const FusedStep& s : l.steps) {
      if (s.kind != FusedStep::Kind::combine || s.begin == s.end) {
        l.combines.push_back(nullptr);
        continue;
      }
      codegen::Kernel k = collective_combine_kernel(item, s.end - s.begin, s.ring() ? 2 : ndev);
      if (s.all_outputs) k = codegen::with_peer_outputs(k, ndev - 1);
      kernels.push_back(dev.compile(k));
      l.combines.push_back(kernels.back().get());
    }
    for (int e = 0; e < ndev; ++e) {
      l.outputs.push_back(out[static_cast<size_t>(e)].data());
      l.inputs.push_back(in_place ? out[static_cast<size_t>(e)].data() : in[static_cast<size_t>(e)].data());
    }
    for (int e = 0; e < ndev; ++e) l.scratches.push_back(scratch[static_cast<size_t>(e)].data());
    launches.push_back(std::move(l));
  }
  Path queued(path != "inline");
  Device& first = *launches[0].device;
  std::vector<Event> done = path == "generic" ? first.Device::launch_collective(std::move(launches), call, after)
                                              : first.launch_collective(std::move(launches), call, after);
  BOOST_TEST_REQUIRE(done.size() == static_cast<size_t>(ndev));
  std::vector<FusedStep> steps = fused_steps(algo, ndev, numel, 0, in_place, push, FusedCollective::allreduce, slices);
  call.base += static_cast<uint64_t>(fused_barriers(steps));
  call.signal_base += static_cast<uint64_t>(fused_signals(steps));
  if (events) {
    *events = done;
    return {};
  }
  for (const Event& e : done) BOOST_TEST_REQUIRE(e.wait_for(std::chrono::seconds(30)));
  return out;
}

}  // namespace

// Every step list (in place or not; twoshot storing into its peers or gathering from them; the ring in
// one slice per chunk and in several) on every path, three calls in a row on one barrier, against host
// sums.
BOOST_DATA_TEST_CASE(every_step_list_on_every_path,
                     bdata::make({Algorithm::oneshot, Algorithm::twoshot, Algorithm::ring_fused}) *
                         bdata::make({false, true}) * bdata::make({false, true}) *
                         bdata::make({"generic", "queued", "inline"}),
                     name, in_place, push, path) {
  const int ndev = 3;
  FusedAlgorithm algo = fused_algorithm(name).value();
  CollectiveCall call{sizeof(int32_t), std::make_shared<CollectiveBarrier>(ndev), 0, 0, "test collective",
                      DType::int32};
  for (int64_t numel : {int64_t{2}, int64_t{70001}, int64_t{5}, int64_t{70001}}) {
    int64_t slices = algo == FusedAlgorithm::ring && numel > 5 ? 1 + call.base % 2 * 4 : 1;  // 1, then 5 slices
    BOOST_TEST_CONTEXT(fused_name(algo) << " in place " << in_place << " push " << push << " " << path << " numel "
                                        << numel << " slices " << slices) {
      std::vector<std::vector<int32_t>> out =
          run_by_hand(algo, ndev, numel, in_place, push, path, call, {}, nullptr, slices);
      for (int d = 0; d < ndev; ++d)
        for (int64_t j = 0; j < numel; ++j)
          BOOST_TEST_REQUIRE(out[static_cast<size_t>(d)][static_cast<size_t>(j)] == 3000 + 3 * j,
                             "device " << d << " element " << j);
    }
  }
}

// A call whose work to wait for failed, on the device threads: every device's launch fails with that
// error or the barrier's DeviceError, at once (not after the watchdog's TimeoutError); the next call,
// on a fresh barrier, is right.
BOOST_AUTO_TEST_CASE(a_failed_dependency_fails_every_device_at_once) {
  const int ndev = 3;
  Event failed;
  failed.set_done(std::make_exception_ptr(DeviceError("the input's producer failed")));
  for (Algorithm algo : kFusedAlgorithms) {
    CollectiveCall call{sizeof(int32_t), std::make_shared<CollectiveBarrier>(ndev), 0, 0, "test collective",
                        DType::int32};
    std::vector<Event> events;
    run_by_hand(fused_algorithm(algo).value(), ndev, 1000, false, true, "queued", call, {failed}, &events);
    for (const Event& e : events)
      BOOST_CHECK_EXCEPTION(e.wait_for(std::chrono::seconds(30)), DeviceError, [](const DeviceError&) { return true; });
    BOOST_TEST(call.barrier->broken());
    call.barrier = std::make_shared<CollectiveBarrier>(ndev);  // as the executor does (collective_run.cpp)
    call.base = call.signal_base = 0;
    std::vector<std::vector<int32_t>> out =
        run_by_hand(fused_algorithm(algo).value(), ndev, 1000, false, true, "queued", call);
    for (int d = 0; d < ndev; ++d) BOOST_TEST(out[static_cast<size_t>(d)][999] == 3000 + 3 * 999);
  }
}

// A device that never arrives: the others give up after the timeout with a TimeoutError naming the
// collective, and the barrier stays broken (later waits fail at once). A failed launch breaks it too
// (abort), waking a waiter long before its timeout.
BOOST_AUTO_TEST_CASE(a_missing_device_times_out_and_breaks_the_barrier) {
  CollectiveBarrier late(2);
  BOOST_CHECK_EXCEPTION(late.arrive_and_wait(0, std::chrono::milliseconds(50), "item 7 on CPU:1"), TimeoutError,
                        [](const TimeoutError& e) {
                          std::string m = e.what();
                          return m.find("item 7 on CPU:1") != std::string::npos &&
                                 m.find("1 of 2 arrived") != std::string::npos;
                        });
  BOOST_TEST(late.broken());
  BOOST_CHECK_THROW(late.arrive_and_wait(1, std::chrono::milliseconds(50), "x"), DeviceError);

  CollectiveBarrier aborted(2);  // woken by the abort: a DeviceError, not the timeout's TimeoutError
  std::thread waiter([&] {
    BOOST_CHECK_EXCEPTION(
        aborted.arrive_and_wait(0, std::chrono::seconds(60), "waiter"), DeviceError,
        [](const DeviceError& e) { return std::string(e.what()).find("failed") != std::string::npos; });
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  aborted.abort();
  waiter.join();

  CollectiveBarrier ok(3);  // three arrivals pass barrier 0, three more barrier 1
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&] {
      ok.arrive_and_wait(0, std::chrono::seconds(30), "a");
      ok.arrive_and_wait(1, std::chrono::seconds(30), "b");
    });
  for (auto& t : threads) t.join();
  BOOST_TEST(!ok.broken());

  CollectiveBarrier silent(2);  // the ring's flags: a peer that never signals times out the wait, naming it
  silent.signal(0);
  silent.wait_signals(0, 1, std::chrono::seconds(30), "ring");  // reached: returns
  BOOST_CHECK_EXCEPTION(silent.wait_signals(1, 1, std::chrono::milliseconds(50), "item 3 on CPU:0"), TimeoutError,
                        [](const TimeoutError& e) {
                          std::string m = e.what();
                          return m.find("item 3 on CPU:0") != std::string::npos &&
                                 m.find("device 1") != std::string::npos;
                        });
  BOOST_TEST(silent.broken());
  CollectiveBarrier woken(2);  // a sleeping waiter is woken by the signal it waits for
  std::thread signaller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    woken.signal(1);
    woken.signal(1);
  });
  woken.wait_signals(1, 2, std::chrono::seconds(60), "waiter");
  signaller.join();
  BOOST_TEST(!woken.broken());
}

// allreduce.algorithm forces a fused form where the destination is the source's devices in one
// process; onto one device it is oneshot's unfused counterpart (naive), twoshot's is all2all, ring_fused's
// the ring; so is an allreduce across ranks. alltoall takes its direct form; a broadcast from a value on
// its own tuple is fused (below).
BOOST_AUTO_TEST_CASE(the_fused_forms_apply_on_their_own_devices_only) {
  for (Algorithm algo : kFusedAlgorithms) {
    AllreduceSettings s = forced(std::string(algorithm_name(algo)));
    Algorithm unfused = algo == Algorithm::oneshot   ? Algorithm::naive
                        : algo == Algorithm::twoshot ? Algorithm::all2all
                                                     : Algorithm::ring;
    UOp local = new_buffer(DeviceSpec(DeviceTuple{"CPU:0", "CPU:1"}), 8, DType::float32);
    BOOST_TEST((allreduce_algorithm(local.allreduce(Ops::ADD, local.device()), s) == algo));
    BOOST_TEST((allreduce_algorithm(local.allreduce(Ops::ADD, DeviceSpec("CPU:0")), s) == unfused));
    UOp ranks = new_buffer(DeviceSpec(DeviceTuple{"rank0/CPU:0", "rank1/CPU:0"}), 8, DType::float32);
    BOOST_TEST((allreduce_algorithm(ranks.allreduce(Ops::ADD, ranks.device()), s) == unfused));
    ScopedSettings scope(s);
    Tensor x = Tensor::full({2, 8}, 1.0).contiguous().shard(cpu_devices(2), 0);
    x.realize();
    Tensor root = x.reduce_to(0);
    BOOST_TEST(root.schedule().fused_items.empty());
    BOOST_TEST(root.schedule().algorithms == std::vector<std::string>{std::string(algorithm_name(unfused))},
               boost::test_tools::per_element());
    HostBuffer sums = root.host();
    for (int64_t j = 0; j < 8; ++j) BOOST_TEST(sums.get(j) == 2.0);
  }
}

// A broadcast from a value on its own tuple under a fused setting: one fused item (op none), every device
// holding the root's bytes (the interpreter's, and the root's shard itself), for roots first and last, sizes
// of one element, odd, and several of ring_fused's 512 KiB slices; both cpu paths. From a single device (the
// tensor on the root only) the direct form runs.
BOOST_DATA_TEST_CASE(a_broadcast_from_its_own_tuple_is_one_fused_item, fused_paths(), algo, ndev, queued) {
  ScopedSettings scope(forced(algo));
  Path path(queued);
  auto devs = cpu_devices(ndev);
  uint32_t seed = 150;
  for (int64_t numel : {int64_t{1}, int64_t{1001}, int64_t{300007}})
    for (int root : {0, ndev - 1}) {
      BOOST_TEST_CONTEXT("numel " << numel << " root " << root) {
        HostBuffer data = make_data(DType::float32, ndev, numel, seed++);
        Tensor x = Tensor::from_host(data).shard(devs, 0);
        x.realize();
        Tensor b = x.broadcast(root, devs);
        Schedule s = b.schedule();
        BOOST_TEST_REQUIRE(s.fused_items.size() == 1u);
        BOOST_TEST(s.fused_items[0].collective == "broadcast");
        BOOST_TEST(s.fused_items[0].algorithm == algo);
        BOOST_TEST(s.fused_items[0].op == "none");
        BOOST_TEST(s.copies().empty());
        std::vector<Tensor> got = realized_as_interpreted(b);
        HostBuffer want = x.shards()[static_cast<size_t>(root)].host();
        for (const Tensor& shard : got) BOOST_TEST((shard.host().bytes == want.bytes));
      }
    }
  Tensor one = Tensor::full({5}, 2.0).to(devs[0]);
  one.realize();
  BOOST_TEST(one.broadcast(0, devs).schedule().fused_items.empty());
}

// ring_fused's lowering, interpreted, against the lowered ring's (allreduce.cpp reduce_scatter_ring): bit
// for bit on every device, chunk c folded from device c round the ring (c+1 for a reduce_scatter), for
// float dtypes whose sums depend on that order; and the allgather's against its direct form. Also run: the
// realized values are the interpreted ones.
BOOST_DATA_TEST_CASE(ring_fused_interprets_as_the_lowered_ring, bdata::make({3, 4, 5}) * bdata::make({false, true}),
                     ndev, queued) {
  auto devs = cpu_devices(ndev);
  Path path(queued);
  uint32_t seed = 120;
  auto ring = [](const std::string& a) {  // the lowered ring: RING=2
    AllreduceSettings s = forced(a == "ring" ? "auto" : a);
    if (a == "ring") s.ring = 2, s.all2all = 0;
    return s;
  };
  for (DType dtype : {DType::float32, DType::float16, DType::bfloat16, DType::int32})
    for (int64_t numel : {int64_t{ndev}, int64_t{ndev * 37}}) {
      BOOST_TEST_CONTEXT(dtype_name(dtype) << " numel " << numel) {
        Tensor x = Tensor::from_host(make_data(dtype, ndev, numel, seed++)).shard(devs, 0);
        x.realize();
        for (const std::string kind : {"allreduce", "reduce_scatter", "allgather"}) {
          auto build = [&](const std::string& a) {
            ScopedSettings scope(ring(a));
            Tensor r = kind == "allreduce"        ? x.sum({0})
                       : kind == "reduce_scatter" ? x.reduce_scatter(ReduceOp::sum, 1)
                                                  : x.allgather();
            Schedule s = r.schedule();
            BOOST_TEST(s.algorithms == std::vector<std::string>{a}, boost::test_tools::per_element());
            BOOST_TEST(s.fused_items.size() == (a == "ring_fused" ? 1u : 0u), kind);
            std::vector<HostBuffer> v = r.interpret_shards();
            if (a == "ring_fused") realized_as_interpreted(r);
            return v;
          };
          std::vector<HostBuffer> fused = build("ring_fused"), lowered = build("ring");
          BOOST_TEST_REQUIRE(fused.size() == lowered.size());
          for (size_t d = 0; d < fused.size(); ++d)
            BOOST_TEST((fused[d].bytes == lowered[d].bytes), kind << " device " << d);
        }
      }
    }
}

// A reduce_scatter under a fused setting: one fused item, device d holding chunk d of the interpreter's
// fold, bit for bit (local shape (1, numel), numel a multiple of n, scattered along axis 1); both cpu paths.
BOOST_DATA_TEST_CASE(reduce_scatter_is_one_fused_item, fused_paths(), algo, ndev, queued) {
  ScopedSettings scope(forced(algo));
  Path path(queued);
  auto devs = cpu_devices(ndev);
  uint32_t seed = 40;
  for (const Case& c :
       {Case{DType::float32, ReduceOp::sum}, Case{DType::float16, ReduceOp::sum}, Case{DType::int32, ReduceOp::max}})
    for (int64_t numel : {int64_t{ndev}, int64_t{ndev * 333}}) {
      BOOST_TEST_CONTEXT(dtype_name(c.dtype) << " " << reduce_op_name(c.op) << " numel " << numel) {
        Tensor x = Tensor::from_host(make_data(c.dtype, ndev, numel, seed++)).shard(devs, 0);
        x.realize();
        Tensor r = x.reduce_scatter(c.op, 1);
        Schedule s = r.schedule();
        BOOST_TEST(s.algorithms == std::vector<std::string>{algo}, boost::test_tools::per_element());
        BOOST_TEST_REQUIRE(s.fused_items.size() == 1u);
        BOOST_TEST(s.fused_items[0].collective == "reduce_scatter");
        BOOST_TEST(s.copies().empty());
        std::vector<Tensor> got = realized_as_interpreted(r);
      }
    }
}

// An allgather under a fused setting (shards one after another: sharded on axis 0): one fused item, every
// device holding every shard in order, bit for bit (-0.0 included); sharded on axis 1 the shards interleave
// and the direct form runs. Both cpu paths.
BOOST_DATA_TEST_CASE(allgather_is_one_fused_item_where_shards_lie_in_order, fused_paths(), algo, ndev, queued) {
  ScopedSettings scope(forced(algo));
  Path path(queued);
  auto devs = cpu_devices(ndev);
  uint32_t seed = 70;
  for (DType dtype : {DType::float32, DType::bfloat16, DType::int8})
    for (int64_t cols : {int64_t{1}, int64_t{517}}) {
      BOOST_TEST_CONTEXT(dtype_name(dtype) << " cols " << cols) {
        HostBuffer data = make_data(dtype, ndev * 2, cols, seed++);
        Tensor x = Tensor::from_host(data).shard(devs, 0);
        x.realize();
        Tensor g = x.allgather();
        Schedule s = g.schedule();
        BOOST_TEST(s.algorithms == std::vector<std::string>{algo}, boost::test_tools::per_element());
        BOOST_TEST_REQUIRE(s.fused_items.size() == 1u);
        BOOST_TEST(s.fused_items[0].collective == "allgather");
        g.realize();
        for (const Tensor& shard : g.shards()) BOOST_TEST((shard.host().bytes == data.bytes));  // host: the whole
        Tensor across = Tensor::from_host(make_data(dtype, 3, ndev * 2, seed++)).shard(devs, 1);
        across.realize();
        Tensor h = across.allgather();
        BOOST_TEST(h.schedule().fused_items.empty());
        BOOST_TEST(h.schedule().algorithms == std::vector<std::string>{"all2all"}, boost::test_tools::per_element());
      }
    }
}

// The interpreter on the fused lowering against the interpreter on tinygrad's (naive, and all2all's
// reduce-scatter): both fold the devices in tuple order, so every device's bytes agree, for every dtype
// and op; and against host arithmetic for the integer sums.
BOOST_DATA_TEST_CASE(the_fused_lowering_interprets_as_the_unfused_one,
                     bdata::make({"oneshot", "twoshot"}) * bdata::make({2, 3, 5}), algo, ndev) {
  auto devs = cpu_devices(ndev);
  uint32_t seed = 90;
  for (DType dtype : {DType::float32, DType::float16, DType::bfloat16, DType::int32, DType::uint8, DType::float64})
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::max, ReduceOp::min}) {
      BOOST_TEST_CONTEXT(dtype_name(dtype) << " " << reduce_op_name(op)) {
        Tensor x = Tensor::from_host(make_data(dtype, ndev, 37, seed++)).shard(devs, 0);
        x.realize();
        auto interpreted = [&](const std::string& a) {
          ScopedSettings scope(forced(a == "naive" || a == "all2all" ? "auto" : a));
          AllreduceSettings s = current_settings();
          if (a == "naive") s.ring = 0, s.all2all = 0;
          if (a == "all2all") s.all2all = 2;
          ScopedSettings level(s);
          Tensor r = x.reduce(op, {0});
          BOOST_TEST(r.algorithms() == std::vector<std::string>{a}, boost::test_tools::per_element());
          return r.interpret_shards();
        };
        std::vector<HostBuffer> fused = interpreted(algo), naive = interpreted("naive"),
                                all2all = interpreted("all2all");
        BOOST_TEST_REQUIRE(fused.size() == naive.size());
        for (size_t d = 0; d < fused.size(); ++d) {
          BOOST_TEST((fused[d].bytes == naive[d].bytes), "naive, device " << d);
          BOOST_TEST((fused[d].bytes == all2all[d].bytes), "all2all, device " << d);
        }
      }
    }
}

BOOST_AUTO_TEST_SUITE_END()
