// The binding plan of a Program (runtime/engine/binding.hpp): worked out once and reused while the
// runs' facts stay the same (new input storages, new output blocks), built again when they change
// (runtime.peer_reads, runtime.peer_writes), and every run reads its own inputs and writes its own
// outputs; peer writes elide the copies of a reduce's result.
#include <atomic>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <thread>

#include "runtime/api/internal.hpp"
#include "runtime/api/trace.hpp"
#include "runtime/engine/binding.hpp"
#include "runtime/engine/executor.hpp"
#include "test/support/allreduce_matrix.hpp"
#include "test/support/runtime_switches.hpp"

BOOST_AUTO_TEST_SUITE(test_binding)

using ringrt::test::set_switches;
using ringrt::test::switches;

namespace bdata = boost::unit_test::data;
using namespace ringrt;

namespace {

using ringrt::test::forced_settings;

// (4, n) values, different for every seed; the host's sum over axis 0.
std::vector<float> values(int64_t n, int seed) {
  std::vector<float> v(static_cast<size_t>(4 * n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 7 + static_cast<size_t>(seed) * 13) % 101);
  return v;
}
std::vector<float> host_sum(const std::vector<float>& v, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n), 0.0f);
  for (int64_t d = 0; d < 4; ++d)
    for (int64_t j = 0; j < n; ++j) out[static_cast<size_t>(j)] += v[static_cast<size_t>(d * n + j)];
  return out;
}

// values (4, n) sharded on axis 0 over CPU:0..3, realized.
Tensor sharded(const std::vector<float>& v, int64_t n) {
  Tensor x = Tensor::from_vector(v, {4, n}).shard(cpu_devices(4), 0);
  x.realize();
  return x;
}

}  // namespace

// Three tensors of the same shape run one program; after the first run no binding is worked out
// again, and each run's result is the sum of its own inputs (with and without peer reads).
BOOST_DATA_TEST_CASE(new_input_storages_reuse_the_binding, bdata::make({"naive", "ring", "all2all"}), algo) {
  ScopedSettings scope(forced_settings(algo));
  RuntimeParams saved = runtime_params();
  const int64_t n = 3000;
  for (bool peer : {true, false}) {
    set_switches(switches(peer, saved.kernel_split, saved.inline_small));
    std::vector<std::vector<float>> data;
    std::vector<Tensor> xs;
    for (int seed = 0; seed < 3; ++seed) {
      data.push_back(values(n, seed + (peer ? 0 : 5)));
      xs.push_back(Tensor::from_vector(data.back(), {4, n}).shard(cpu_devices(4), 0));
      xs.back().realize();
    }
    BOOST_TEST(xs[0].sum({0}).to_vector<float>() == host_sum(data[0], n), boost::test_tools::per_element());
    size_t built = Program::bindings_built();
    for (int round = 0; round < 2; ++round)
      for (size_t k = 0; k < xs.size(); ++k)
        BOOST_TEST(xs[k].sum({0}).to_vector<float>() == host_sum(data[k], n), boost::test_tools::per_element());
    BOOST_TEST(Program::bindings_built() == built);
  }
  set_switches(saved);
}

// A fact of the binding that changes (runtime.peer_reads) builds it again, each time it changes; the
// results stay the host's.
BOOST_AUTO_TEST_CASE(a_changed_switch_builds_the_binding_again) {
  ScopedSettings scope(forced_settings("ring"));
  RuntimeParams saved = runtime_params();
  const int64_t n = 2000;
  std::vector<float> data = values(n, 3);
  Tensor x = sharded(data, n);
  BOOST_TEST(x.sum({0}).to_vector<float>() == host_sum(data, n), boost::test_tools::per_element());
  for (int k = 0; k < 4; ++k) {
    size_t built = Program::bindings_built();
    set_switches(switches(k % 2 == 1, saved.kernel_split, saved.inline_small));
    BOOST_TEST(x.sum({0}).to_vector<float>() == host_sum(data, n), boost::test_tools::per_element());
    BOOST_TEST(Program::bindings_built() == built + (k > 0 || saved.peer_reads ? 1 : 0));
  }
  set_switches(saved);
}

// Peer writes (runtime.peer_writes): the reduce kernel that owns a chunk writes it into every peer
// whose copy of it the schedule lists from that kernel's result, and those copies do not run (the
// trace records what ran). 4 devices: all2all's 12 allgather copies all go (each chunk's 3 copies come
// from its reduce); the ring's 12 lose each chunk's first hop (4), the later hops copy a peer's copy.
// Each kernel that writes peers is the "_p<peers>" form and writes (1 + peers) x its chunk. Results
// are the host's either way; turning the switch over builds the binding again.
BOOST_DATA_TEST_CASE(peer_writes_elide_the_copies_of_a_kernels_result, bdata::make({"all2all", "ring"}), algo) {
  ScopedSettings scope(forced_settings(algo));
  RuntimeParams saved = runtime_params();
  const int64_t n = 4096;  // chunks of 1024 floats
  std::vector<float> data = values(n, 7);
  Tensor x = sharded(data, n);
  for (bool writes : {false, true, false}) {
    RuntimeParams o = saved;
    o.peer_reads = true;
    o.peer_writes = writes;
    set_switches(o);
    size_t built = Program::bindings_built();
    Trace trace;
    BOOST_TEST(x.sum({0}).to_vector<float>() == host_sum(data, n), boost::test_tools::per_element());
    trace.stop();
    BOOST_TEST(Program::bindings_built() == built + 1);  // a new program, then a changed switch
    size_t copied = 0, peer_kernels = 0;
    for (const TraceEvent& e : trace.events()) {
      if (e.kind == TraceEvent::Kind::copy) {
        ++copied;
      } else if (size_t at = e.name.rfind("_p"); at != std::string::npos) {  // E_<hex>_p<peers>
        int64_t peers = std::stoll(e.name.substr(at + 2));
        BOOST_TEST(e.bytes == (1 + peers) * 1024 * 4);
        ++peer_kernels;
      }
    }
    BOOST_TEST_CONTEXT(algo << " peer writes " << writes) {
      BOOST_TEST(copied == (!writes ? 12u : std::string(algo) == "all2all" ? 0u : 8u));
      BOOST_TEST(peer_kernels == (writes ? 4u : 0u));
    }
  }
  set_switches(saved);
}

// A run allocates only the scratch its launches and copies use: with peer reads and peer writes an
// all2all's and a naive allreduce's copies all go, and the blocks planned for their destinations are
// never allocated, so a run's peak on each device is what it leaves live (its output); without peer
// reads the copies run into scratch, freed at the end (the peak is higher). Results are the host's.
BOOST_DATA_TEST_CASE(a_run_allocates_only_the_scratch_its_items_use, bdata::make({"all2all", "naive"}), algo) {
  ScopedSettings scope(forced_settings(algo));
  RuntimeParams saved = runtime_params();
  const int64_t n = 4096;
  std::vector<float> data = values(n, 11);
  Tensor x = sharded(data, n);
  for (bool reads : {true, false}) {
    RuntimeParams o = saved;
    o.peer_reads = reads;
    o.peer_writes = true;
    set_switches(o);
    std::vector<MemoryStats> before;
    for (const std::string& d : cpu_devices(4)) {
      reset_peak_memory(d);
      before.push_back(memory_stats(d));
    }
    Tensor y = x.sum({0});
    y.realize();
    for (size_t d = 0; d < 4; ++d) {
      MemoryStats after = memory_stats(cpu_devices(4)[d]);
      BOOST_TEST_CONTEXT(algo << " peer reads " << reads << " device " << d) {
        BOOST_TEST(after.in_use - before[d].in_use == n * 4);  // y's shard
        if (reads) BOOST_TEST(after.peak == after.in_use);
        if (!reads) BOOST_TEST(after.peak > after.in_use);
      }
    }
    BOOST_TEST(y.to_vector<float>() == host_sum(data, n), boost::test_tools::per_element());
  }
  set_switches(saved);
}

// The switches may change while other threads run (set_runtime_params is thread-safe): two threads
// allreduce over and over while this one turns the switches over; every result is the host's, and each
// run's binding is built for the switches it read (ThreadSanitizer, the tsan preset, checks the reads).
BOOST_AUTO_TEST_CASE(switches_changed_while_other_threads_run_keep_results_right) {
  ScopedSettings scope(forced_settings("all2all"));
  RuntimeParams saved = runtime_params();
  const int64_t n = 1000;
  std::vector<float> data = values(n, 5);
  std::vector<float> want = host_sum(data, n);
  Tensor x = sharded(data, n);
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0}, runs{0};
  auto work = [&] {
    while (!stop.load()) {
      if (x.sum({0}).to_vector<float>() != want) ++wrong;
      ++runs;
    }
  };
  std::thread a(work), b(work);
  for (int k = 0; k < 64; ++k) {
    RuntimeParams o = saved;
    o.peer_reads = k % 2 == 0;
    o.peer_writes = k % 3 != 0;
    o.inline_small = k % 5 != 0;
    o.kernel_split = k % 7 != 0;
    set_switches(o);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  stop = true;
  a.join();
  b.join();
  set_switches(saved);
  BOOST_TEST(runs.load() > 0);
  BOOST_TEST(wrong.load() == 0);
}

// The classes of equal addresses a binding depends on: each slot names the first slot of its address,
// with a few slots (a scan) and many (a map).
BOOST_AUTO_TEST_CASE(same_address_names_the_first_slot_of_each_address) {
  int a = 0, b = 0, c = 0;
  std::vector<void*> few{&a, &b, &a, &c, &b};
  BOOST_TEST(same_address(few) == (std::vector<uint32_t>{0, 1, 0, 3, 1}), boost::test_tools::per_element());
  std::vector<int> cells(40);
  std::vector<void*> many;
  std::vector<uint32_t> want;
  for (size_t i = 0; i < 40; ++i) {
    many.push_back(&cells[i % 25]);
    want.push_back(static_cast<uint32_t>(i % 25));
  }
  BOOST_TEST(same_address(many) == want, boost::test_tools::per_element());
}

// The program cache's key (rewrite/canonical.cpp) past its scan of a few buffers: a graph of 20
// buffers, one read twice, keyed by structure; another set of tensors (in another order) reuses the
// program, and each run's result is its own tensors' host sum.
BOOST_AUTO_TEST_CASE(a_graph_of_many_buffers_reuses_its_program) {
  const int64_t n = 64;
  std::vector<std::vector<float>> data;
  std::vector<Tensor> ts;
  for (int k = 0; k < 40; ++k) {
    data.emplace_back(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) data.back()[static_cast<size_t>(j)] = static_cast<float>((k * 31 + j) % 17);
    ts.push_back(Tensor::from_vector(data.back(), {n}, "CPU:0"));
    ts.back().realize();
  }
  auto check = [&](const std::vector<int>& pick) {
    Tensor sum = ts[static_cast<size_t>(pick[0])] * 2.0;  // the first read twice: once here, once below
    std::vector<float> want(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j)
      want[static_cast<size_t>(j)] = 2 * data[static_cast<size_t>(pick[0])][static_cast<size_t>(j)];
    for (int k : pick) {
      sum = sum + ts[static_cast<size_t>(k)];
      for (int64_t j = 0; j < n; ++j)
        want[static_cast<size_t>(j)] += data[static_cast<size_t>(k)][static_cast<size_t>(j)];
    }
    BOOST_TEST(sum.to_vector<float>() == want, boost::test_tools::per_element());
  };
  std::vector<int> first, second;
  for (int k = 0; k < 20; ++k) first.push_back(k), second.push_back(39 - k);
  check(first);
  size_t built = Tensor::programs_built();
  check(second);
  BOOST_TEST(Tensor::programs_built() == built);
}

BOOST_AUTO_TEST_SUITE_END()
