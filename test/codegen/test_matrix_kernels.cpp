// Every kernel of the multi-device allreduce test matrix (test/support/allreduce_matrix.hpp) on the
// CPU: the kernels realize() compiles (codegen/item_kernel.hpp lower_item), deduplicated by source
// over the whole matrix, a third per test case compiled by the host compiler, run on host buffers of random
// data for every _device_num and compared bit for bit with the reference interpreter evaluating the same item ast.
// The first kernel of each form (test::kernel_form: the source up to its constants, which is what the
// optimizer's choices depend on) is compiled at -O3, as users run it; the others, the same loops with other
// constants, at -O1, which compiles them ~4x faster (the -O level changes no value: HostCompiler::default_flags).
#include <boost/algorithm/string/erase.hpp>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <memory>
#include <random>

#include "test/codegen/kernel_check.hpp"
#include "test/support/allreduce_matrix.hpp"
#include "test/support/collectives_matrix.hpp"

BOOST_AUTO_TEST_SUITE(test_matrix_kernels)

namespace bdata = boost::unit_test::data;
using namespace ringrt;

namespace {

// Random data for each value an item reads (one buffer per device of the value), bound to the
// placeholder ids -1-k: float32 in [-1, 1), 16-bit floats in [-8, 8) rounded, int32 in [-1000, 1000].
BufferLookup random_inputs(const std::vector<UOp>& reads, std::mt19937& rng) {
  auto data = std::make_shared<std::vector<std::vector<HostBuffer>>>();
  for (const UOp& r : reads) {
    size_t n = r.device().tuple() ? r.device().names().size() : 1;
    std::vector<HostBuffer> per_device;
    for (size_t d = 0; d < n; ++d) {
      HostBuffer b(r.dtype(), {prod(r.shape())});
      for (int64_t i = 0; i < b.numel(); ++i) {
        if (is_float(r.dtype()))
          b.set(i, std::uniform_real_distribution<double>(r.dtype() == DType::float32 ? -1.0 : -8.0,
                                                          r.dtype() == DType::float32 ? 1.0 : 8.0)(rng));
        else
          b.set_int(i, std::uniform_int_distribution<int>(-1000, 1000)(rng));
      }
      per_device.push_back(std::move(b));
    }
    data->push_back(std::move(per_device));
  }
  return [data](int64_t id) -> const std::vector<HostBuffer>* {
    size_t k = static_cast<size_t>(-1 - id);
    return id < 0 && k < data->size() ? &(*data)[k] : nullptr;
  };
}

// Kernels to check in one compiled batch (check_against_interpreter's arguments).
struct Batch {
  std::vector<UOp> asts;
  std::vector<BufferLookup> lookups;
  std::vector<int> ndevs;
  std::vector<std::string> labels;
  void add(const test::MatrixKernel& k, std::mt19937& rng) {
    asts.push_back(k.ast);
    lookups.push_back(random_inputs(k.reads, rng));
    ndevs.push_back(static_cast<int>(k.kernel.dnum_max + 1));
    labels.push_back(k.label);
  }
};

}  // namespace

constexpr size_t kParts = 3;  // test cases (of one process, which collects the matrix once): a third each

BOOST_DATA_TEST_CASE(matrix_kernels_match_interpreter, bdata::xrange(kParts), part) {
  size_t items = 0, distinct = 0;
  auto render = [](const codegen::Kernel& k) { return codegen::render_cpp(k); };
  std::vector<test::MatrixKernel> ks = test::matrix_kernels_part(part, kParts, render, &items, &distinct);
  const test::MatrixKernels& all = test::all_matrix_kernels(render);
  static const std::vector<bool> first_of_form = test::first_of_each_form(all, render);  // once per process
  size_t begin = test::part_bounds(all.kernels.size(), part, kParts).first;
  BOOST_TEST_REQUIRE(distinct >= test::kMinMatrixKernels);  // an empty or shrunken matrix checks nothing
  BOOST_TEST_REQUIRE(ks.size() >= distinct / kParts);
  BOOST_TEST_REQUIRE(!ks.empty());
  std::mt19937 rng(static_cast<uint32_t>(part));
  Batch at_o3, at_o1;  // the first kernel of each form, the others
  for (size_t i = 0; i < ks.size(); ++i) (first_of_form[begin + i] ? at_o3 : at_o1).add(ks[i], rng);
  BOOST_TEST_MESSAGE("matrix: " << items << " kernel items, " << distinct << " distinct kernels; part " << part << ": "
                                << at_o3.asts.size() << " at -O3, " << at_o1.asts.size() << " at -O1");
  test::check_against_interpreter(at_o3.asts, at_o3.lookups, at_o3.ndevs, at_o3.labels, 0, test::host_compiler_at(3));
  test::check_against_interpreter(at_o1.asts, at_o1.lookups, at_o1.ndevs, at_o1.labels, 0, test::host_compiler_at(1));
}

// The collectives matrix (test/support/collectives_matrix.hpp: reduce_scatter, allgather, broadcast, reduce
// and alltoall x naive/ring/all2all x 2/3/5/8 devices x 4 dtypes x sum/max): its kernels that the allreduce
// matrix does not have, checked the same way, at -O1 (the allreduce matrix's -O3 kernels are of the same
// forms), in kCollectiveParts cases.
constexpr size_t kCollectiveParts = 2;

BOOST_DATA_TEST_CASE(collective_kernels_match_interpreter, bdata::xrange(kCollectiveParts), part) {
  size_t items = 0, distinct = 0;
  auto render = [](const codegen::Kernel& k) { return codegen::render_cpp(k); };
  std::vector<test::MatrixKernel> ks =
      test::kernels_part(test::all_collective_kernels(render), part, kCollectiveParts, &items, &distinct);
  BOOST_TEST_REQUIRE(distinct > 0u);
  BOOST_TEST_REQUIRE(ks.size() >= distinct / kCollectiveParts);
  BOOST_TEST_REQUIRE(!ks.empty());
  std::mt19937 rng(static_cast<uint32_t>(100 + part));
  Batch batch;
  for (const test::MatrixKernel& k : ks) batch.add(k, rng);
  BOOST_TEST_MESSAGE("collectives: " << items << " kernel items, " << distinct << " kernels not in the allreduce "
                                     << "matrix; part " << part << ": " << ks.size());
  test::check_against_interpreter(batch.asts, batch.lookups, batch.ndevs, batch.labels, 0, test::host_compiler_at(1));
}

// The matrix points are built from UOps (test::matrix_allreduce) to skip realizing their inputs; here
// a few are built with the Tensor API instead, input realized, and give the same schedule and kernels.
BOOST_AUTO_TEST_CASE(uop_built_points_are_the_tensor_api_points) {
  struct Point {
    int ndev;
    std::string algo;
    DType dtype;
    ReduceOp op;
    int64_t numel;
  };
  for (const Point& p :
       {Point{4, "ring", DType::float16, ReduceOp::max, 133}, Point{3, "hierarchical", DType::int32, ReduceOp::sum, 3},
        Point{5, "all2all", DType::bfloat16, ReduceOp::sum, 100}}) {
    BOOST_TEST_CONTEXT("ndev " << p.ndev << " " << p.algo << " " << dtype_name(p.dtype) << " " << reduce_op_name(p.op)
                               << " numel " << p.numel) {
      ScopedSettings scope(test::matrix_settings(p.algo, p.ndev));
      Tensor x = Tensor::from_host(HostBuffer(p.dtype, {p.ndev, p.numel})).shard(cpu_devices(p.ndev), 0);
      x.realize();
      Schedule want = x.reduce(p.op, {0}).schedule();
      ItemPlan plan = plan_schedule(
          lower_multi({test::matrix_allreduce(p.ndev, p.dtype, p.op, p.numel)}, current_settings()).roots);
      // the Schedule lists the root's copy of the allgather's buffer as skipped (a run binds that
      // buffer to the root's memory: MemoryPlan::forwarded) and has no kernel item for it
      std::string listing = want.to_string();
      boost::algorithm::erase_all(listing, "  (skipped: the result is the buffer it copies)");
      BOOST_TEST(plan.to_string() == listing);
      BOOST_TEST(want.kernel_items.size() > 1u);
      BOOST_TEST(plan.kernels() - want.kernel_items.size() <= 1u);
      for (size_t k = 0; k < want.kernel_items.size(); ++k)
        BOOST_TEST(lower_item(plan.items.at(want.kernel_items[k].item)).kernel.dump() == kernel_of(want, k).dump());
    }
  }
}

// A kernel's form (test::kernel_form, which the compile-only matrices deduplicate by and which picks the
// kernels compiled at -O3 above) erases its name and its numbers, never an identifier or a type.
BOOST_AUTO_TEST_CASE(kernel_form_erases_numbers_and_the_name_only) {
  BOOST_TEST(test::kernel_form("void E_1a2b(int64_t n) { in1[7] = 0x7f8u + 2.5f * n; }", "E_1a2b") ==
             "void @K(int64_t n) { in1[#] = #x7f8u + #.#f * n; }");
  BOOST_TEST(test::kernel_form("int32_t a = 12;", "") != test::kernel_form("int64_t a = 12;", ""));
  BOOST_TEST(test::kernel_form("x = 3; y = 250000;", "") == test::kernel_form("x = 41; y = 7;", ""));
}

BOOST_AUTO_TEST_SUITE_END()
