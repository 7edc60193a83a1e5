// Open MPI's MPI_Allreduce (float32 sum), the peer of ringrt's allreduce in scripts/bench-peers.sh.
//
// Every rank holds S bytes per size; after `warmup` untimed calls it times `blocks` blocks of
// `iters` calls each (a barrier before each block; a block's time is the slowest rank's) and reports
// the best block's time per call. The result of the last call is checked on every rank against the
// exact sum (inputs are small integers, so float32 sums are exact).
//
// Usage: mpirun -np N mpi_allreduce WARMUP BLOCKS ITERS SIZE...   (sizes in bytes per rank; ITERS 0:
// as many calls per block as fill about 20 ms, from the warm-up's time)
// Output (rank 0): CSV rows "openmpi,MPI_Allreduce,<ndev>,<bytes>,<time_s>,<algbw>,<busbw>";
// exit status 1 when any result is wrong.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (argc < 5) {
    if (rank == 0) std::fprintf(stderr, "usage: mpi_allreduce WARMUP BLOCKS ITERS SIZE...\n");
    MPI_Finalize();
    return 2;
  }
  int warmup = std::atoi(argv[1]), blocks = std::atoi(argv[2]), fixed_iters = std::atoi(argv[3]);
  int status = 0;
  for (int a = 4; a < argc; ++a) {
    long bytes = std::atol(argv[a]);
    int iters = fixed_iters;
    int count = static_cast<int>(bytes / sizeof(float));
    std::vector<float> in(count), out(count);
    for (int i = 0; i < count; ++i) in[i] = static_cast<float>((i + rank) % 7);
    double w0 = MPI_Wtime();
    for (int w = 0; w < warmup; ++w) MPI_Allreduce(in.data(), out.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (iters <= 0) {  // adapt: a block lasts about 20 ms (rank 0's warm-up decides for all)
      double per_call = (MPI_Wtime() - w0) / std::max(warmup, 1);
      iters = static_cast<int>(std::clamp(0.02 / std::max(per_call, 1e-7), 1.0, 500.0));
      MPI_Bcast(&iters, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    double best = 1e30;
    for (int b = 0; b < blocks; ++b) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      for (int it = 0; it < iters; ++it)
        MPI_Allreduce(in.data(), out.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      double mine = (MPI_Wtime() - t0) / iters, slowest = 0;
      MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      best = std::min(best, slowest);
    }
    long wrong = 0;
    for (int i = 0; i < count; ++i) {
      float want = 0;
      for (int r = 0; r < nranks; ++r) want += static_cast<float>((i + r) % 7);
      wrong += out[i] != want;
    }
    long all_wrong = 0;
    MPI_Reduce(&wrong, &all_wrong, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      double algbw = bytes / best / 1e9;
      std::printf("openmpi,MPI_Allreduce,%d,%ld,%.9f,%.3f,%.3f\n", nranks, bytes, best, algbw,
                  algbw * 2.0 * (nranks - 1) / nranks);
      if (all_wrong) {
        std::fprintf(stderr, "mpi_allreduce: %ld wrong elements at %ld bytes\n", all_wrong, bytes);
        status = 1;
      }
      std::fflush(stdout);
    }
  }
  MPI_Finalize();
  return status;
}
