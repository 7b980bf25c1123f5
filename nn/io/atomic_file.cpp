// write_file_atomic and read_file on POSIX file descriptors (Linux).
#include "nn/io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>
#include <string>
#include <system_error>

#include "tensor/error.h"

namespace gradflow {
namespace {

// strerror's text ("No space left on device"), without strerror's shared buffer.
std::string reason(int err) { return std::system_category().message(err); }

[[noreturn]] void fail_errno(std::string_view op, std::string_view what, const std::string& path,
                             int err) {
  fail(op, ": ", what, " \"", path, "\": ", reason(err));
}

// Temporary names are "<path>.gradflow-tmp.<pid>.<counter>": distinctive enough that the
// cleanup below never takes a user's "log.csv.tmp.2024.01" for one of ours.
constexpr const char* kTempInfix = ".gradflow-tmp.";

// Makes temporary names unique between threads of one process; the pid separates processes.
std::atomic<uint64_t> temp_counter{0};

// The temporary file until it is renamed into place. If anything fails (or throws) before that,
// the destructor closes and removes it, so a failed write leaves nothing behind.
struct TempFile {
  std::string path;
  int fd = -1;
  bool renamed = false;

  TempFile() = default;
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (fd >= 0) ::close(fd);
    if (!path.empty() && !renamed) ::unlink(path.c_str());  // path is set once the file exists
  }
};

// Creates the temporary file. O_EXCL guarantees we never take over an existing file; a name left
// by a crashed process that had our pid is skipped by trying the next counter.
void create_temp(TempFile& temp, const std::string& path) {
  for (int attempt = 0;; ++attempt) {
    std::string name = path + kTempInfix + std::to_string(::getpid()) + "." +
                       std::to_string(temp_counter.fetch_add(1));
    // O_EXCL also refuses a symlink at the name (never followed).
    const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0) {
      temp.path = std::move(name);
      temp.fd = fd;
      return;
    }
    const int err = errno;
    if (err != EEXIST || attempt == 100) {
      fail_errno("write_file_atomic", "cannot create", name, err);
    }
  }
}

std::string directory_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Makes the rename durable: a rename lives in the directory, and fsync of the file does not
// cover it. EINVAL means the filesystem cannot sync directories, so there is nothing to wait for.
void sync_directory(const std::string& path) {
  const std::string directory = directory_of(path);
  const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int err = fd < 0 ? errno : 0;
  if (fd >= 0) {
    while (::fsync(fd) != 0) {
      if (errno == EINTR) continue;
      err = errno == EINVAL ? 0 : errno;
      break;
    }
    ::close(fd);
  }
  if (err != 0) {
    fail("write_file_atomic: \"", path, "\" was replaced but its directory \"", directory,
         "\" cannot be synced: ", reason(err));
  }
}

}  // namespace

void write_file_atomic(const std::string& path, std::string_view bytes) {
  TempFile temp;
  create_temp(temp, path);
  // write() may write less than asked (signals, limits, large sizes) or fail with EINTR.
  const char* data = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const ssize_t written = ::write(temp.fd, data, left);
    if (written < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      fail_errno("write_file_atomic", "cannot write", temp.path, err);
    }
    if (written == 0) fail_errno("write_file_atomic", "cannot write", temp.path, EIO);
    data += written;
    left -= static_cast<size_t>(written);
  }
  // Without fsync the rename could reach the disk before the data, and a crash would leave
  // `path` empty or truncated: the failure this function exists to prevent.
  while (::fsync(temp.fd) != 0) {
    const int err = errno;
    if (err != EINTR) fail_errno("write_file_atomic", "cannot sync", temp.path, err);
  }
  // Some filesystems (NFS, quotas) report write errors only at close. Linux releases the
  // descriptor even when close fails, so it is never closed twice.
  const int fd = temp.fd;
  temp.fd = -1;
  if (::close(fd) != 0 && errno != EINTR) {
    fail_errno("write_file_atomic", "cannot close", temp.path, errno);
  }
  if (::rename(temp.path.c_str(), path.c_str()) != 0) {
    const int err = errno;
    fail("write_file_atomic: cannot rename \"", temp.path, "\" to \"", path, "\": ", reason(err));
  }
  temp.renamed = true;
  sync_directory(path);
}

std::string read_file(const std::string& path, uint64_t max_bytes) {
  int fd = -1;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) fail_errno("read_file", "cannot open", path, errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};

  struct stat info;
  if (::fstat(fd, &info) != 0) fail_errno("read_file", "cannot stat", path, errno);
  if (S_ISDIR(info.st_mode)) fail("read_file: \"", path, "\" is a directory");
  // st_size is only a hint (the file may change while we read; /proc files report 0), so the
  // limit is enforced on the bytes actually read.
  const uint64_t size_hint = S_ISREG(info.st_mode) ? static_cast<uint64_t>(info.st_size) : 0;
  if (size_hint > max_bytes) {
    fail("read_file: \"", path, "\" has ", size_hint, " bytes, more than the limit of ", max_bytes);
  }
  std::string content;
  content.reserve(size_hint);
  char buffer[1 << 16];
  while (true) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      fail_errno("read_file", "cannot read", path, err);
    }
    if (got == 0) return content;
    if (static_cast<uint64_t>(got) > max_bytes - content.size()) {
      fail("read_file: \"", path, "\" has more than the limit of ", max_bytes, " bytes");
    }
    content.append(buffer, static_cast<size_t>(got));
  }
}

RemovedFiles remove_stale_temp_files(const std::string& path) {
  const std::string directory = directory_of(path);
  const std::string prefix = path.substr(path.find_last_of('/') + 1) + kTempInfix;
  // "<pid>.<counter>" exactly as create_temp writes them: decimal numbers
  // without a sign or a leading zero; nothing else is ours to remove.
  auto is_suffix = [](std::string_view s) {
    const size_t dot = s.find('.');
    auto digits = [](std::string_view d) {
      return !d.empty() && d.size() <= 20 && (d == "0" || d[0] != '0') &&
             std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    return dot != std::string_view::npos && digits(s.substr(0, dot)) && digits(s.substr(dot + 1));
  };
  RemovedFiles removed;
  std::error_code ec;
  std::filesystem::directory_iterator it(directory, ec), end;
  if (ec) fail("remove_stale_temp_files: cannot read \"", directory, "\": ", ec.message());
  for (; it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0 || !is_suffix(std::string_view(name).substr(prefix.size())))
      continue;
    // Only regular files: a symlink or anything else by that name is not a temporary we made.
    std::error_code size_ec;
    if (!it->is_regular_file(size_ec) || it->is_symlink(size_ec)) continue;
    const uintmax_t bytes = it->file_size(size_ec);
    if (::unlink(it->path().c_str()) == 0) {
      ++removed.count;
      removed.bytes += size_ec ? 0 : bytes;
    }
  }
  if (ec) fail("remove_stale_temp_files: cannot read \"", directory, "\": ", ec.message());
  return removed;
}

}  // namespace gradflow
