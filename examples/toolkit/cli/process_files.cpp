// The files around a program: its standard streams, which may be closed at
// start, the input files it is given, which must be regular files, and the
// folders it writes pictures in, which must take files.
// Declared in args.h beside run_cli, which reopens the streams. (The
// environment OpenBLAS starts in under an address-space limit is set by
// examples/start/openblas_one_thread.cpp, which every program linking
// gradflow_cli links.)
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include "examples/toolkit/cli/args.h"

namespace gradflow::cli {

std::string quote(std::string_view text) { return "\"" + std::string(text) + "\""; }

std::string shell_word(std::string_view text) {
  const bool plain = !text.empty() && text.find_first_not_of(
                                          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789_./:=,+@%-") == std::string_view::npos;
  if (plain) return std::string(text);
  std::string word = "'";
  for (char c : text) word += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return word + "'";
}

void require_regular_file(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    const int err = errno;
    if (::lstat(path.c_str(), &info) == 0 && S_ISLNK(info.st_mode))
      throw UsageError(quote(path) + " is a symbolic link to a file that does not exist");
    throw UsageError(quote(path) + (err == ENOENT ? " does not exist"
                                                  : ": " + std::system_category().message(err)));
  }
  if (S_ISREG(info.st_mode)) return;
  const char* kind = S_ISDIR(info.st_mode)                            ? "a directory"
                     : S_ISFIFO(info.st_mode)                         ? "a FIFO (named pipe)"
                     : S_ISCHR(info.st_mode) || S_ISBLK(info.st_mode) ? "a device"
                     : S_ISSOCK(info.st_mode)                         ? "a socket"
                                                                      : "another kind of file";
  throw UsageError(quote(path) + " is " + kind + ", not a regular file");
}

void require_writable_folder(const std::string& folder) {
  namespace fs = std::filesystem;
  fs::path at = folder;
  std::error_code ec;
  while (!at.empty() && fs::symlink_status(at, ec).type() == fs::file_type::not_found)
    at = at.parent_path();
  if (at.empty()) at = ".";
  if (!fs::is_directory(at, ec)) throw UsageError(quote(at.string()) + " is not a directory");
  const std::string probe = (at / (".gradflow-probe." + std::to_string(::getpid()))).string();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    throw UsageError("cannot write in " + quote(at.string()) + ": " +
                     std::system_category().message(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

void reopen_closed_standard_streams() {
  // open() returns the lowest free descriptor, so filling 0, 1, 2 in order
  // gives each closed one /dev/null. Were 2 left closed, the first file the
  // program opens (log.csv, run.lock) would take it and receive its messages.
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    const int opened = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (opened >= 0 && opened != fd) ::close(opened);  // cannot happen: fd was the lowest free
    if (opened < 0) std::_Exit(kExitUsage);            // nowhere safe to write, nor to say so
  }
}

}  // namespace gradflow::cli
