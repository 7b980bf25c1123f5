// Whole-file reads and crash-safe whole-file writes, used for checkpoints.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gradflow {

// Replaces the file at `path` with `bytes` so that, even after a crash or power loss, `path`
// holds either its old content or all of `bytes`, never a mix or a truncated file.
//
// How: the bytes go to a new temporary file "<path>.gradflow-tmp.<pid>.<counter>" in the same
// directory (rename is atomic only within one filesystem), which is fsynced, then renamed over
// `path`; the directory is fsynced last so the rename itself survives a crash.
//
// Throws Error naming the file and the system's reason, e.g.
//   write_file_atomic: cannot write "/x/model.safetensors.gradflow-tmp.123.0": No space left on
//   device
// after removing the temporary file; `path` is then left as it was. One exception: if only the
// final directory fsync fails, `path` already holds the new bytes when Error is thrown.
//
// The new file gets mode 0666 minus the umask, not the old file's mode, and a symlink at `path`
// is replaced rather than followed. Safe to call from several threads, even for the same path:
// the last rename wins and readers never see a partial file.
void write_file_atomic(const std::string& path, std::string_view bytes);

// Returns the whole content of the file at `path`. Throws Error if it cannot be opened or read,
// is a directory, or holds more than `max_bytes` bytes; the limit keeps a wrong or hostile path
// (a huge file, /dev/zero) from exhausting memory.
std::string read_file(const std::string& path, uint64_t max_bytes);

// Removes the temporary files write_file_atomic(path, ...) left behind when a writer was killed
// or crashed before its rename: regular files in path's directory named exactly
// "<path>.gradflow-tmp.<pid>.<counter>" (decimal numbers, no leading zero). Returns how many it
// removed and their bytes. REQUIRES: no other writer of `path` is alive, which the caller
// makes sure of (the training programs hold their folder's lock,
// examples/toolkit/training/run_lock.h). Throws Error if the directory cannot be read.
struct RemovedFiles {
  uint64_t count = 0, bytes = 0;
};
RemovedFiles remove_stale_temp_files(const std::string& path);

}  // namespace gradflow
