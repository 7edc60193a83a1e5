// The files a command of the `ringrt` program writes (run's --csv, --json, --trace, --junit; regress's --junit,
// --summary and baselines): checked apart from each other and from the files it reads before any is opened, so
// that no output lands on another output or on an input.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ringrt {

// Whether two paths name one file: the same file when both exist (links, "./", hard links), else the same
// path once made absolute and normal.
bool same_file(const std::string& a, const std::string& b);

// outputs, (option, path) pairs such as ("--csv", "a.csv"), name files that differ from each other and from every
// one of inputs, (what, path) pairs such as ("the config file", "x.yaml"). Throws IOError "--csv a.csv names the
// config file" or "--csv a.csv and --json a.csv name the same file" otherwise. Empty paths are left out.
void check_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs,
                            const std::vector<std::pair<std::string, std::string>>& inputs);

}  // namespace ringrt
