// The study's folder: one study at a time, replaced only whole (study_folder.h).
#include "examples/study/study_folder.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "examples/study/part_table.h"
#include "examples/toolkit/cli/args.h"

namespace gradflow::study {
namespace {

// The folder a study replacing another is written into first, inside --out
// so the renames that replace the old one stay on one file system.
std::filesystem::path staging_dir(const std::string& out) {
  return std::filesystem::path(out) / ".scaling_study.new";
}

// Moves the complete new study from `staged` over the old one in `out`: each
// file renamed over its namesake (an atomic replace), report.md last, then
// the old study's files the new one did not write removed, so no report sits
// beside another run's CSV files.
void replace_study(const std::string& out, const std::filesystem::path& staged) {
  namespace fs = std::filesystem;
  std::vector<std::string> order = study_files();
  std::stable_partition(order.begin(), order.end(),
                        [](const std::string& f) { return f != "report.md"; });
  size_t removed = 0;
  for (const std::string& file : order) {
    std::error_code ec;
    if (fs::exists(staged / file, ec)) {
      fs::rename(staged / file, fs::path(out) / file, ec);
      if (ec)
        throw cli::UsageError("--overwrite: cannot move the new " + file + " into '" + out +
                              "': " + ec.message());
    } else if (fs::remove(fs::path(out) / file, ec)) {
      ++removed;
    }
  }
  std::error_code ec;
  fs::remove_all(staged, ec);
  std::fprintf(stderr,
               "--overwrite: replaced the previous study in '%s' (%zu of its files the new one "
               "does not write removed)\n",
               out.c_str(), removed);
}

}  // namespace

// A new study in a folder that holds one replaces it only with --overwrite.
// Returns whether it will (the folder holds a study and --overwrite was
// given); nothing is removed here: the old study stays whole until the new
// one is complete (replace_study). Called with the folder locked.
bool claim_study_dir(const std::string& out, bool overwrite) {
  std::error_code ec;
  for (const std::string& file : study_files())
    if (std::filesystem::exists(std::filesystem::path(out) / file, ec)) {
      if (!overwrite)
        throw cli::UsageError("--out '" + out + "' already holds a study (" + file +
                              "): choose another --out, or replace it with --overwrite");
      return true;
    }
  return false;
}

void write_study(const std::string& out, bool replacing, const ReportInfo& info,
                 const std::vector<Section>& sections) {
  if (!replacing) {
    write_report(out, info, sections);
    return;
  }
  // The old study stays whole until the new one is: written beside it
  // first (a full disk or a crash here leaves the old one as it was).
  const std::filesystem::path staged = staging_dir(out);
  std::error_code ec;
  std::filesystem::remove_all(staged, ec);  // a crashed run's leftovers
  std::filesystem::create_directory(staged, ec);
  if (ec)
    throw cli::UsageError("--overwrite: cannot create '" + staged.string() + "': " + ec.message());
  try {
    write_report(staged.string(), info, sections);
  } catch (...) {
    std::filesystem::remove_all(staged, ec);
    throw;
  }
  replace_study(out, staged);
}

}  // namespace gradflow::study
