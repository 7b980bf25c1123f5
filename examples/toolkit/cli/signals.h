// The signals that ask a program to stop: SIGINT (Ctrl-C), SIGTERM (kill,
// timeout, a container stop, a batch scheduler) and SIGHUP (a closed
// terminal or ssh session). While a StopSignals lives, each of them only
// records that it came; the program checks stop_signal() at a safe point
// (the training loop after a step, the study between jobs), saves what it
// has, and exits with 128 + the signal's number, as a shell reports a
// process the signal killed (130, 143, 129).
//
// A signal that was ignored when the guard was made (SIG_IGN: `nohup` ignores
// SIGHUP, a shell script's `cmd &` ignores SIGINT) stays ignored. A second
// signal while the first is being handled ends the program at once, with the
// default action: pressing Ctrl-C twice still works when a step is slow.
#pragma once

#include <string>

namespace gradflow::cli {

// Guards nest: the outermost installs the handlers and puts the previous
// dispositions back. Make them on one thread (the main one).
class StopSignals {
 public:
  // Installs the handlers and clears any signal recorded before.
  StopSignals();
  // Puts the previous dispositions back and forgets the signal.
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
};

// The first stop signal received while the current StopSignals lives, or 0
// (always 0 with none alive: the signals then have their default action).
int stop_signal();

// 128 + signal: the exit code a shell shows for a process killed by it.
inline int exit_code_for_signal(int signal) { return 128 + signal; }

// "SIGINT", "SIGTERM", "SIGHUP", else "signal N".
std::string signal_name(int signal);

}  // namespace gradflow::cli
