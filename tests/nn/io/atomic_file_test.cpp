#include "nn/io/atomic_file.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "tensor/error.h"
#include "tests/tensor/testing.h"

namespace gradflow {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test, removed afterwards, so leftover temporary files can be counted.
class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "gradflow_atomic_XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  fs::path dir_;
};

using testing::error_of;

std::string pattern_bytes(size_t n) {
  std::string bytes(n, '\0');
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<char>((i * 131 + 7) % 256);
  return bytes;
}

TEST_F(AtomicFileTest, WritesAndReadsBackBinaryContent) {
  const std::string bytes = pattern_bytes(1000);  // includes NUL bytes
  write_file_atomic(path("f"), bytes);
  EXPECT_EQ(read_file(path("f"), 1000), bytes);
  EXPECT_EQ(entries(), std::vector<std::string>{"f"});
}

TEST_F(AtomicFileTest, ReplacesAnExistingFileCompletely) {
  write_file_atomic(path("f"), std::string(5000, 'a'));
  write_file_atomic(path("f"), "short");  // no tail of the longer old file may remain
  EXPECT_EQ(read_file(path("f"), 1 << 20), "short");
  write_file_atomic(path("f"), "");
  EXPECT_EQ(read_file(path("f"), 0), "");
  EXPECT_EQ(entries(), std::vector<std::string>{"f"});
}

TEST_F(AtomicFileTest, WritesLargeFiles) {
  const std::string bytes = pattern_bytes(9 << 20);  // several write() calls' worth
  write_file_atomic(path("big"), bytes);
  EXPECT_EQ(read_file(path("big"), bytes.size()), bytes);
}

TEST_F(AtomicFileTest, RelativePathUsesTheCurrentDirectory) {
  const fs::path old_cwd = fs::current_path();
  fs::current_path(dir_);
  write_file_atomic("rel", "x");
  fs::current_path(old_cwd);
  EXPECT_EQ(read_file(path("rel"), 10), "x");
}

TEST_F(AtomicFileTest, MissingDirectoryThrowsNamingTheTemporaryFile) {
  const std::string target = path("no/such/dir/f");
  const std::string message = error_of([&] { write_file_atomic(target, "x"); });
  EXPECT_EQ(message.rfind("write_file_atomic: cannot create \"" + target + ".gradflow-tmp.", 0), 0u)
      << message;
  EXPECT_NE(message.find("No such file or directory"), std::string::npos) << message;
  EXPECT_TRUE(entries().empty());
}

TEST_F(AtomicFileTest, DirectoryAtTargetThrowsAndLeavesNoTemporaryFile) {
  fs::create_directory(path("d"));
  fs::create_directory(path("d/inside"));  // a non-empty directory cannot be renamed over
  const std::string message = error_of([&] { write_file_atomic(path("d"), "x"); });
  EXPECT_NE(message.find("cannot rename"), std::string::npos) << message;
  EXPECT_NE(message.find('"' + path("d") + '"'), std::string::npos) << message;
  EXPECT_EQ(entries(), std::vector<std::string>{"d"});
  EXPECT_TRUE(fs::is_directory(path("d/inside")));
}

// A real write failure with no hooks in the library: a child process lowers RLIMIT_FSIZE so that
// write() fails with EFBIG after k bytes, and tries to replace an existing file with a bigger
// payload. The parent then checks that the old file is intact and nothing else was left behind.
TEST_F(AtomicFileTest, FailedWriteLeavesOldFileIntact) {
  const std::string old_content = "old checkpoint";
  const std::string payload = pattern_bytes(20000);
  enum : int { kThrewError = 42, kReturned = 43, kThrewOther = 44 };
  for (rlim_t k : std::vector<rlim_t>{0, 1, 7, 100, 4095, 4096, 10000}) {
    SCOPED_TRACE("RLIMIT_FSIZE " + std::to_string(k));
    write_file_atomic(path("model"), old_content);
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      // Only async-signal-safe calls below (the library aside), and _exit to skip atexit handlers.
      ::close(pipe_fds[0]);
      ::signal(SIGXFSZ, SIG_IGN);  // get EFBIG from write() instead of being killed
      rlimit limit{};
      ::getrlimit(RLIMIT_FSIZE, &limit);
      limit.rlim_cur = k;
      if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(1);
      int code = kReturned;
      try {
        write_file_atomic(path("model"), payload);
      } catch (const Error& e) {
        const std::string message = e.what();
        if (::write(pipe_fds[1], message.data(), message.size()) < 0) ::_exit(2);
        code = kThrewError;
      } catch (...) {
        code = kThrewOther;
      }
      ::_exit(code);
    }
    ::close(pipe_fds[1]);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    std::string message(4096, '\0');
    const ssize_t got = ::read(pipe_fds[0], message.data(), message.size());
    ::close(pipe_fds[0]);
    message.resize(got > 0 ? static_cast<size_t>(got) : 0);

    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), kThrewError);
    EXPECT_EQ(
        message.rfind("write_file_atomic: cannot write \"" + path("model") + ".gradflow-tmp.", 0),
        0u)
        << message;
    EXPECT_NE(message.find("File too large"), std::string::npos) << message;
    EXPECT_EQ(read_file(path("model"), 1 << 20), old_content);
    EXPECT_EQ(entries(), std::vector<std::string>{"model"});
  }
}

// Writers racing on one path: temporary names never collide, and the file always ends up as
// exactly one writer's payload.
TEST_F(AtomicFileTest, ConcurrentWritersNeverMix) {
  constexpr size_t kThreads = 8;
  constexpr int kWrites = 20;
  std::vector<std::string> payloads;
  for (size_t t = 0; t < kThreads; ++t) payloads.push_back(std::string(3000 + t, "abcdefgh"[t]));
  std::vector<std::thread> threads;
  for (size_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kWrites; ++i) write_file_atomic(path("shared"), payloads[t]);
    });
  }
  for (auto& thread : threads) thread.join();
  const std::string final_content = read_file(path("shared"), 1 << 20);
  EXPECT_NE(std::find(payloads.begin(), payloads.end(), final_content), payloads.end());
  EXPECT_EQ(entries(), std::vector<std::string>{"shared"});
}

TEST_F(AtomicFileTest, ReadFileErrorsNameThePath) {
  const std::string missing = error_of([&] { read_file(path("missing"), 10); });
  EXPECT_EQ(missing,
            "read_file: cannot open \"" + path("missing") + "\": No such file or directory");

  fs::create_directory(path("dir"));
  EXPECT_EQ(error_of([&] { read_file(path("dir"), 10); }),
            "read_file: \"" + path("dir") + "\" is a directory");

  write_file_atomic(path("ten"), "0123456789");
  EXPECT_EQ(read_file(path("ten"), 10), "0123456789");  // exactly at the limit is fine
  EXPECT_EQ(error_of([&] { read_file(path("ten"), 9); }),
            "read_file: \"" + path("ten") + "\" has 10 bytes, more than the limit of 9");
}

// What killed writers leave, "<path>.gradflow-tmp.<pid>.<counter>", goes;
// nothing else does, not even a name that only looks alike: a user's
// "model.safetensors.tmp.2024.01" (which the older ".tmp." names matched), a
// leading zero create_temp never writes, or a symlink by our name (the file
// it points to stays, and so does the link).
TEST_F(AtomicFileTest, StaleTemporaryFilesAreRemoved) {
  write_file_atomic(path("model.safetensors"), "the real file");
  for (const char* name :
       {"model.safetensors.gradflow-tmp.4242.0", "model.safetensors.gradflow-tmp.1.17"})
    write_file_atomic(path(name), pattern_bytes(1000));
  for (const char* name :
       {"model.safetensors.gradflow-tmp.notours", "model.safetensors.gradflow-tmp.12.",
        "other.safetensors.gradflow-tmp.4242.0", "model.safetensors.gradflow-tmp.1.2.3",
        "model.safetensors.gradflow-tmp.07.1", "model.safetensors.tmp.2024.01",
        "model.safetensors.tmp.12.0"})
    write_file_atomic(path(name), "keep");
  std::filesystem::create_symlink(path("other.safetensors.gradflow-tmp.4242.0"),
                                  path("model.safetensors.gradflow-tmp.5.5"));
  const RemovedFiles removed = remove_stale_temp_files(path("model.safetensors"));
  EXPECT_EQ(removed.count, 2u);
  EXPECT_EQ(removed.bytes, 2000u);
  EXPECT_EQ(entries(),
            (std::vector<std::string>{
                "model.safetensors", "model.safetensors.gradflow-tmp.07.1",
                "model.safetensors.gradflow-tmp.1.2.3", "model.safetensors.gradflow-tmp.12.",
                "model.safetensors.gradflow-tmp.5.5", "model.safetensors.gradflow-tmp.notours",
                "model.safetensors.tmp.12.0", "model.safetensors.tmp.2024.01",
                "other.safetensors.gradflow-tmp.4242.0"}));
  EXPECT_EQ(read_file(path("model.safetensors"), 100), "the real file");
  EXPECT_EQ(remove_stale_temp_files(path("model.safetensors")).count, 0u);
  EXPECT_NE(error_of([&] { remove_stale_temp_files(path("missing/model.safetensors")); }), "");
}

TEST(ReadFile, LimitHoldsForFilesWithoutASize) {
  // /dev/zero never ends and reports no size: the limit is what stops the read.
  const std::string message = error_of([] { read_file("/dev/zero", 100000); });
  EXPECT_EQ(message, "read_file: \"/dev/zero\" has more than the limit of 100000 bytes");
  // /proc files report size 0 but have content.
  EXPECT_NE(read_file("/proc/self/status", 1 << 20).find("Name:"), std::string::npos);
}

}  // namespace
}  // namespace gradflow
