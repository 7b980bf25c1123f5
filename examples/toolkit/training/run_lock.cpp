#include "examples/toolkit/training/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <ostream>
#include <string>
#include <system_error>

#include "examples/toolkit/cli/args.h"
#include "nn/io/atomic_file.h"

namespace gradflow::training {
namespace {

using cli::quote;
using cli::UsageError;

namespace fs = std::filesystem;

std::string reason(int err) { return std::system_category().message(err); }

// The pid the holder wrote, or "" if there is none yet (it writes it just
// after locking) or the file holds something else.
std::string holder_pid(int fd) {
  char buf[32] = {};
  const ssize_t got = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string pid(buf, got > 0 ? static_cast<size_t>(got) : 0);
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) return "";
  return pid;
}

bool same_dir(const std::string& a, const std::string& b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec);
}

std::string mib(uint64_t bytes) {
  const double m = static_cast<double>(bytes) / (1 << 20);
  char buf[32];
  std::snprintf(buf, sizeof buf, m < 10 ? "%.1f" : "%.0f", m);
  return buf;
}

}  // namespace

const std::vector<std::string>& run_files() {
  static const std::vector<std::string> files = {"log.csv", "checkpoint.safetensors",
                                                 "model.safetensors", "index.html",
                                                 "attention_grads.csv"};
  return files;
}

RunLock::RunLock(const std::string& dir) : path_((fs::path(dir) / "run.lock").string()) {
  // The lock file stays between runs (see the header), so O_EXCL cannot be
  // used; O_NOFOLLOW refuses a symlink planted in its place (else the pid
  // would overwrite whatever it points to: CWE-59), O_NONBLOCK a FIFO that
  // would block the open, and the checks below a hard link or anything but
  // a regular file.
  do {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0666);
  } while (fd_ < 0 && errno == EINTR);
  if (fd_ < 0 && errno == ELOOP)
    throw UsageError("--out " + quote(dir) + ": " + quote(path_) +
                     " is a symbolic link; a lock file must be a file of its own (remove it)");
  if (fd_ < 0) fail("cannot open the lock file ", quote(path_), ": ", reason(errno));
  struct stat info {};
  if (::fstat(fd_, &info) != 0 || !S_ISREG(info.st_mode) || info.st_nlink != 1) {
    const bool regular = S_ISREG(info.st_mode);
    ::close(fd_);
    fd_ = -1;
    throw UsageError("--out " + quote(dir) + ": " + quote(path_) + " is " +
                     (regular ? "a hard link to another file" : "not a regular file") +
                     "; a lock file must be a file of its own (remove it)");
  }
  int rc = 0;
  do {
    rc = ::flock(fd_, LOCK_EX | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0 && (errno == ENOLCK || errno == EOPNOTSUPP || errno == ENOSYS)) {
    unsupported_ = true;  // a filesystem without locks (some FUSE and SMB mounts)
    return;
  }
  if (rc != 0) {
    const int err = errno;
    const std::string pid = err == EWOULDBLOCK ? holder_pid(fd_) : "";
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK)
      throw UsageError("--out " + quote(dir) + " is in use by another run (" +
                       (pid.empty() ? std::string("pid unknown") : "pid " + pid) +
                       "): wait for it to end or choose another --out");
    fail("cannot lock ", quote(path_), ": ", reason(err));
  }
  // Ours now: say who holds it. A failure here only costs the pid in a
  // second run's message.
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) == 0) {
    [[maybe_unused]] const ssize_t written = ::pwrite(fd_, pid.data(), pid.size(), 0);
  }
}

std::string lock_holder(const std::string& dir) {
  const std::string path = (fs::path(dir) / "run.lock").string();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return "";
  struct stat info {};
  std::string holder;
  // A shared lock is refused while a run holds its exclusive one.
  if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && ::flock(fd, LOCK_SH | LOCK_NB) != 0 &&
      errno == EWOULDBLOCK) {
    const std::string pid = holder_pid(fd);
    holder = pid.empty() ? "pid unknown" : "pid " + pid;
  }
  ::close(fd);  // drops the shared lock, if taken
  return holder;
}

RunLock::RunLock(RunLock&& other) noexcept
    : path_(std::move(other.path_)), fd_(other.fd_), unsupported_(other.unsupported_) {
  other.fd_ = -1;
}

RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

RunLock claim_run_dir(const std::string& out, const std::string& resume_dir, bool overwrite,
                      std::ostream& err) {
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(out, ec)) && !fs::exists(out, ec))
    throw UsageError("--out " + quote(out) + " is a symbolic link to " +
                     quote(fs::read_symlink(out, ec).string()) +
                     ", which does not exist: create that directory or choose another --out");
  fs::create_directories(out, ec);
  if (ec || !fs::is_directory(out))
    throw UsageError("--out " + quote(out) + ": cannot create the directory" +
                     (ec ? ": " + ec.message() : ""));
  RunLock lock(out);
  if (lock.unsupported()) {
    // Refusing would make the folder unusable; without the lock nothing
    // else here is safe from a second run either, so nothing is removed.
    err << "warning: " << quote(lock.path())
        << " cannot be locked on this filesystem: a second run in " << quote(out)
        << " at once would not be stopped\n";
  }

  RemovedFiles stale;
  for (const std::string& file : lock.unsupported() ? std::vector<std::string>{} : run_files()) {
    const RemovedFiles r = remove_stale_temp_files((fs::path(out) / file).string());
    stale.count += r.count;
    stale.bytes += r.bytes;
  }
  if (stale.count > 0)
    err << "removed " << stale.count << " temporary file" << (stale.count == 1 ? "" : "s") << " ("
        << mib(stale.bytes) << " MiB) that an interrupted save left in " << quote(out) << "\n";

  const bool in_place = !resume_dir.empty() && same_dir(resume_dir, out);
  if (in_place) return lock;
  std::vector<std::string> present;
  for (const std::string& file : run_files())
    if (fs::exists(fs::path(out) / file, ec)) present.push_back(file);
  if (present.empty()) return lock;
  const bool resumable = fs::exists(fs::path(out) / "checkpoint.safetensors", ec);
  if (!overwrite && resumable)
    throw UsageError("--out " + quote(out) + " already holds a run (" + present.front() +
                     "): continue it with --resume " + quote(out) +
                     ", or replace it with --overwrite");
  if (!overwrite)
    throw UsageError("--out " + quote(out) + " holds a run that saved no checkpoint (" +
                     present.front() +
                     "), so there is nothing to resume: replace it with --overwrite, or choose "
                     "another --out");
  for (const std::string& file : present) {
    fs::remove(fs::path(out) / file, ec);
    if (ec)
      throw UsageError("--overwrite: cannot remove " + quote((fs::path(out) / file).string()) +
                       ": " + ec.message());
  }
  err << "--overwrite: removed the previous run's " << present.size() << " file"
      << (present.size() == 1 ? "" : "s") << " from " << quote(out) << "\n";
  return lock;
}

}  // namespace gradflow::training
