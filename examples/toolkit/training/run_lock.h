// One run per output folder, and a folder's run kept whole.
//
// A training run owns its --out folder for its whole life through an
// exclusive flock(2) on DIR/run.lock. The kernel drops the lock when the
// process ends however it ends (kill -9 included), so a lock is never stale;
// the file stays (removing it would let two runs lock two different files)
// and holds the pid of its last holder, to name it to a second run.
//
// On a filesystem without locks the run goes on with a warning (refusing
// would make the folder unusable) and removes no temporaries.
//
// claim_run_dir takes the lock and then, safe from any other run:
//   - refuses a fresh run in a folder that already holds one (log.csv,
//     checkpoint.safetensors, model.safetensors, or its page: index.html,
//     attention_grads.csv) unless `overwrite`, which
//     deletes those files first, so a new run never leaves its log beside an
//     old checkpoint;
//   - removes the temporary files of saves that a kill or crash interrupted
//     (nn/io/atomic_file.h), which would otherwise stay forever.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace gradflow::training {

// The files that make a run, in its --out folder.
// log.csv, checkpoint.safetensors, model.safetensors, index.html, attention_grads.csv
const std::vector<std::string>& run_files();

class RunLock {
 public:
  // Locks DIR/run.lock, creating it; DIR must exist. Throws UsageError
  //   --out DIR is in use by another run (pid 1234): wait for it to end or choose another --out
  // when another process holds it, Error when the file cannot be opened.
  explicit RunLock(const std::string& dir);
  ~RunLock();  // releases the lock (the file stays)
  RunLock(RunLock&& other) noexcept;
  RunLock& operator=(RunLock&&) = delete;
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

  const std::string& path() const { return path_; }
  // The filesystem has no locks (flock fails with ENOLCK, EOPNOTSUPP or
  // ENOSYS, as on some FUSE and SMB mounts): nothing is held.
  bool unsupported() const { return unsupported_; }

 private:
  std::string path_;
  int fd_ = -1;
  bool unsupported_ = false;
};

// "pid 1234" ("pid unknown" if it wrote none) when a run holds DIR's lock
// now, else "" (no run.lock, or no run holding it). Takes no lock that
// lasts and creates nothing: for messages, before a run claims a folder.
std::string lock_holder(const std::string& dir);

// Creates `out` if needed, locks it and prepares it as above. `resume_dir`
// is the folder being resumed from ("" for a fresh run): resuming in place
// keeps the run's files; a fresh run, or a resume into another folder that
// holds a run, needs `overwrite`. Notes what it removed on `err`.
// Throws UsageError naming --resume and --overwrite.
RunLock claim_run_dir(const std::string& out, const std::string& resume_dir, bool overwrite,
                      std::ostream& err);

}  // namespace gradflow::training
