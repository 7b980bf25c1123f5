// scaling_study's command line: its flags, the parts they choose, and every
// part's options made from them. A flag is checked only where it is used:
// one that no chosen part reads (--tasks with --parts sgd, --recall-pairs
// with --tasks reverse) is not parsed, and the study says so in one line on
// stderr (unused_flags_warning) instead of refusing or silently ignoring it.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "examples/study/part_table.h"

namespace gradflow::study {

struct Flags {
  std::string out = "runs/scaling_study";
  int64_t seed = 0;
  int threads = 2;
  bool full = false, reference = false, overwrite = false, estimate = false;
  int64_t seeds = 0, steps = 0, recall_pairs = 0, recall_keys = 0;
  std::string tasks = "reverse,recall", d_ks, modes, parts;
  std::set<std::string> given{};  // the flags on the command line, "--tasks", ...
};

// Parses argv (throws cli::UsageError, or cli::HelpRequested for --help).
Flags parse_flags(int argc, char** argv);

// The parts --parts names (by name or the earlier layout's letter), in the
// table's order; empty: the default run's, or every part with --full.
std::vector<const Part*> chosen_parts(const std::string& text, bool full);

// Every part's options from the flags: the settings first, then what the
// command line changes in the train part (parsed only when train runs).
StudyRun plan_study(const Flags& f, const std::vector<const Part*>& chosen);

// "scaling_study: warning: --d-ks, --tasks are not used by the parts run
// here (sgd, depth); ignored", or "" when every flag given is used.
std::string unused_flags_warning(const Flags& f, const std::vector<const Part*>& chosen);

// The command line as a shell reads it back: an argument with anything but
// letters, digits and _./:=,+- in it goes in single quotes ('\'' for a quote).
std::string command_line(int argc, char** argv);

}  // namespace gradflow::study
