// The study's folder: it holds one study at a time, and a new one replaces
// it (--overwrite) only once complete: written beside the old one first,
// then moved over it file by file (each an atomic rename, report.md last),
// and the old study's files the new one does not write removed. A run
// stopped before that, or failing to write, leaves the old study whole.
#pragma once

#include <string>
#include <vector>

#include "examples/study/study.h"

namespace gradflow::study {

// Whether the new study will replace one (`out` holds a study and
// `overwrite` is set); throws cli::UsageError when it holds one and
// `overwrite` is not set. Removes nothing. Call with the folder locked.
bool claim_study_dir(const std::string& out, bool overwrite);

// Writes the report and its files into `out`, or, when `replacing`, beside
// the old study and then over it.
void write_study(const std::string& out, bool replacing, const ReportInfo& info,
                 const std::vector<Section>& sections);

}  // namespace gradflow::study
