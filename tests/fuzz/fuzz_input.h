// What the harnesses share: the input as text, a file holding it for the readers that take a
// path, and the checks of what a reader gave back.
//
// A reader's contract for bad bytes is a gradflow::Error whose message is one printable line.
// Anything else is a finding: broken() aborts, which libFuzzer (or the replay) reports with the
// input that did it; so does an exception of another type, which escapes the harness.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace gradflow::fuzz {

inline std::string_view text_of(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

[[noreturn]] inline void broken(std::string_view what) {
  std::fprintf(stderr, "fuzz: %.*s\n", static_cast<int>(what.size()), what.data());
  std::abort();
}

// A message of one line (no control byte), as every reader promises, so a file cannot break up
// or colour what a program prints about it.
inline void check_one_line(std::string_view message) {
  for (char c : message) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f)
      broken("error message is not one printable line: " + std::string(message));
  }
}

// A directory of this process's own, removed at exit, for the readers that take a path: each
// input is written to a file in it. It is under $TMPDIR if set, else in memory (/dev/shm) where
// there is one: on a disk, writing the file is most of a run's time.
class ScratchDir {
 public:
  ScratchDir() : dir_(base() / ("gradflow_fuzz_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  // Writes `bytes` to `name` in the directory (replacing it) and returns its path.
  std::string write(const std::string& name, std::string_view bytes) const {
    const std::string path = (dir_ / name).string();
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out.flush()) broken("cannot write " + path);
    return path;
  }

 private:
  static std::filesystem::path base() {
    std::error_code ec;
    if (!std::getenv("TMPDIR") && std::filesystem::is_directory("/dev/shm", ec) &&
        ::access("/dev/shm", W_OK) == 0)
      return "/dev/shm";
    return std::filesystem::temp_directory_path();
  }

  std::filesystem::path dir_;
};

}  // namespace gradflow::fuzz
