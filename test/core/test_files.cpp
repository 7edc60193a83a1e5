// Output files (core/files.hpp write_file, OutputFile): what a run writes (--csv, --json, --trace,
// --dot, --emit-source) never goes through a link planted at its path, symbolic or hard, nor into
// anything but a regular file; the file a link points at is left as it was.
#include <sys/stat.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/errors.hpp"
#include "core/files.hpp"
#include "test/support/temp_dir.hpp"

BOOST_AUTO_TEST_SUITE(test_files)

using namespace ringrt;
namespace fs = std::filesystem;

namespace {

using ringrt::test::TempDir;

// The file's text, read by the library's own reader (capped).
std::string contents(const fs::path& p) { return read_file(p.string(), size_t{1} << 20); }

// The message of the IOError write_file throws for path, or "" when it writes.
std::string refusal(const fs::path& path) {
  try {
    write_file(path.string(), "written\n");
  } catch (const IOError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_plain_path_is_written_and_rewritten) {
  TempDir d;
  fs::path out = d.path() / "out.csv";
  BOOST_TEST(refusal(out) == "");
  std::ofstream(out) << "a much longer old content\n";
  BOOST_TEST(refusal(out) == "");
  BOOST_TEST(contents(out) == "written\n");  // truncated, not overwritten in place
}

BOOST_AUTO_TEST_CASE(links_are_refused_and_their_targets_kept) {
  TempDir d;
  fs::path victim = d.write("victim", "keep\n");
  fs::create_symlink(victim, d.path() / "sym.csv");
  BOOST_TEST(refusal(d.path() / "sym.csv").find("is a symbolic link; ringrt does not write through links") !=
             std::string::npos);
  fs::create_symlink(d.path() / "missing", d.path() / "dangling.csv");
  BOOST_TEST(refusal(d.path() / "dangling.csv").find("is a symbolic link") != std::string::npos);
  BOOST_TEST(!fs::exists(d.path() / "missing"));
  fs::create_hard_link(victim, d.path() / "hard.csv");
  BOOST_TEST(refusal(d.path() / "hard.csv").find("has other hard links; ringrt does not write through links") !=
             std::string::npos);
  BOOST_TEST(contents(victim) == "keep\n");
  // OutputFile (a run's --csv and --json, opened before the run) refuses the same link at once
  BOOST_CHECK_THROW(OutputFile((d.path() / "hard.csv").string()), IOError);
  BOOST_TEST(contents(victim) == "keep\n");
}

BOOST_AUTO_TEST_CASE(anything_but_a_regular_file_is_refused) {
  TempDir d;
  BOOST_TEST(::mkfifo((d.path() / "fifo").c_str(), 0600) == 0);
  BOOST_TEST(refusal(d.path() / "fifo").find("is a FIFO or socket, not a regular file; not written") !=
             std::string::npos);
  BOOST_TEST(refusal("/dev/null").find("is not a regular file; not written") != std::string::npos);
  BOOST_TEST(refusal(d.path()).find("cannot write the file: Is a directory") != std::string::npos);
}

// The folders ringrt reads code or data from (private_dir_problem): a link to a private folder is refused
// however it is spelled, a trailing "/" or "/." included (lstat of "link/" would follow the link).
BOOST_AUTO_TEST_CASE(a_link_to_a_private_folder_is_refused_however_spelled) {
  TempDir d;
  fs::create_directory(d.path() / "real");
  fs::permissions(d.path() / "real", fs::perms::owner_all, fs::perm_options::replace);
  fs::create_directory_symlink(d.path() / "real", d.path() / "link");
  BOOST_TEST(private_dir_problem(d.path() / "real") == "");
  BOOST_TEST(private_dir_problem((d.path() / "real").string() + "/./") == "");
  for (const char* tail : {"", "/", "/.", "/./", "//"})
    BOOST_TEST(private_dir_problem((d.path() / "link").string() + tail) == "a symbolic link", tail);
}

// replace_file: the old text or the new, whole; a link at the path refused and its target untouched; a failed
// write leaves no temporary file and the old file as it was.
BOOST_AUTO_TEST_CASE(replace_file_is_atomic_and_refuses_links) {
  TempDir d;
  fs::path f = d.path() / "b.json", target = d.path() / "target";
  replace_file(f.string(), "one");
  replace_file(f.string(), "two");
  BOOST_TEST(contents(f) == "two");
  std::ofstream(target) << "keep";
  fs::create_symlink(target, d.path() / "link.json");
  BOOST_CHECK_THROW(replace_file((d.path() / "link.json").string(), "x"), IOError);
  BOOST_TEST(contents(target) == "keep");
  fs::create_directories(d.path() / "dir.json");
  BOOST_CHECK_THROW(replace_file((d.path() / "dir.json").string(), "x"), IOError);
  BOOST_CHECK_THROW(replace_file((d.path() / "no" / "x.json").string(), "x"), IOError);
  replace_file((d.path() / std::string(250, 'n')).string(), "long");  // a name near NAME_MAX
  size_t hidden = 0;
  for (const auto& e : fs::directory_iterator(d.path())) hidden += e.path().filename().string()[0] == '.';
  BOOST_TEST(hidden == 0u);
}

// printable_name: bytes that are not UTF-8 and control characters as \xHH; UTF-8 text kept.
BOOST_AUTO_TEST_CASE(printable_name_escapes_what_a_terminal_or_json_cannot_take) {
  BOOST_TEST(printable_name("b\xff.yaml") == "b\\xFF.yaml");
  BOOST_TEST(printable_name("a\nb\x1b[31m\x7f") == "a\\x0Ab\\x1B[31m\\x7F");
  BOOST_TEST(printable_name("r\xc3\xa9sum\xc3\xa9.yaml") == "r\xc3\xa9sum\xc3\xa9.yaml");
  BOOST_TEST(printable_name("\xc3") == "\\xC3");  // cut short
}

BOOST_AUTO_TEST_SUITE_END()
