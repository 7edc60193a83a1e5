// `ringrt regress DIR`: a regression run of every YAML experiment in a folder against stored baselines, for a
// nightly job. Design (docs/testing.md):
//   - DIR/*.yaml are the experiments (regular files only: not subfolders; a symbolic link is refused), in name
//     order; BASELINES (default DIR/baselines) holds one baseline per experiment, <name>.json
//     (runtime/cli/baseline.hpp). Every experiment and every baseline is read before anything runs, so a bad file
//     stops the command at once (exit 2, naming the file, line and key).
//   - Each experiment runs as `ringrt run` runs it (run_experiment, with the experiment's runtime.* settings),
//     each row checked: #wrong counted by runtime/api/reference.hpp's rules.
//   - A row compares with the baseline's row of the same name (row_name): #wrong must stay 0, and busbw must
//     stay at or above (1 - T) times the baseline's, T the experiment's regress.busbw_tolerance, else the
//     baseline's busbw_tolerance, else 0.5 (shared machines vary by up to 30%: half the baseline is a fall no
//     noise explains). A baseline row the run did not give is a regression too (re-record after changing an
//     experiment's sizes). A row with #wrong > 0 is a regression whatever the baseline.
//   - A baseline from another host or CPU, backend or device count is "not comparable": its rows are reported so,
//     not failed. An experiment without a baseline is reported "no baseline".
//   - --record runs the same and writes the baselines (this machine, ringrt version, backend, device count, each
//     row's busbw and #wrong, the tolerance in force) in place of the old ones, each replaced whole
//     (core/files.hpp replace_file); an experiment with a wrong row is not recorded (a regression), nor one with
//     two rows of one name (exit 2). A row is "recorded" once its baseline is written.
//   - File names are shown and stored as printable_name (core/files.hpp) writes them.
//   - stdout: a line per row and a summary; stderr: each regression, naming the experiment, the row and the
//     figure; --junit FILE: a test suite per experiment, a test case per row; --summary FILE: Markdown (for a CI
//     job's summary page), both written before anything runs ("RUNNING") and replaced whole after each experiment
//     (a job killed part way leaves what finished). Files are written through core/files.hpp (never through a
//     link).
//   - Under mpirun every rank runs every experiment and rank 0 reports, writes the files, and gives the job its
//     status (the busbw compared is rank 0's, as `ringrt run` prints rank 0's times).
// Exit status: 0 no regression; 1 a regression; 2 a bad folder, experiment, baseline, option or output file, or an
// experiment that failed with a user or device error; 3 an internal, compile or timeout error in an experiment;
// 130/143 stopped by SIGINT/SIGTERM (the reports hold what finished). The highest applies.
#pragma once

#include <string>
#include <vector>

namespace ringrt {

struct RegressOptions {
  std::string dir;                // the folder of YAML experiments
  std::string baselines;          // the folder of baselines; "" is DIR/baselines
  bool record = false;            // write the baselines instead of comparing
  std::string junit;              // --junit FILE, or ""
  std::string summary;            // --summary FILE (Markdown), or ""
  std::vector<std::string> sets;  // --set key=value for every experiment
};

// Runs the regression (the header comment) and returns the exit status. Throws ConfigError or IOError (exit 2)
// for a bad folder, experiment, baseline or output file before anything runs; Interrupted is reported as
// 128 + the signal (install the stop handlers first: runtime/cli/main.cpp).
int regress_command(const RegressOptions& options);

}  // namespace ringrt
