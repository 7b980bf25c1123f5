#include "examples/toolkit/cli/signals.h"

#include <signal.h>

#include <array>
#include <csignal>

namespace gradflow::cli {
namespace {

constexpr std::array<int, 3> kStopSignals = {SIGINT, SIGTERM, SIGHUP};

volatile std::sig_atomic_t g_signal = 0;

// Only async-signal-safe calls here: sigaction and raise.
void on_stop_signal(int signal) {
  if (g_signal != 0) {  // the second: give up waiting for the safe point
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(signal, &dfl, nullptr);
    raise(signal);
    return;
  }
  g_signal = signal;
}

std::array<struct sigaction, kStopSignals.size()> g_previous{};
std::array<bool, kStopSignals.size()> g_installed{};
int g_guards = 0;  // StopSignals alive; the outermost installs and restores

}  // namespace

StopSignals::StopSignals() {
  if (g_guards++ > 0) return;
  g_signal = 0;
  for (size_t i = 0; i < kStopSignals.size(); ++i) {
    g_installed[i] = false;
    if (sigaction(kStopSignals[i], nullptr, &g_previous[i]) != 0) continue;
    if (g_previous[i].sa_handler == SIG_IGN) continue;  // nohup, or a background job
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;  // reads and writes carry on; the loop looks at the flag
    g_installed[i] = sigaction(kStopSignals[i], &action, nullptr) == 0;
  }
}

StopSignals::~StopSignals() {
  if (--g_guards > 0) return;
  for (size_t i = 0; i < kStopSignals.size(); ++i)
    if (g_installed[i]) sigaction(kStopSignals[i], &g_previous[i], nullptr);
  g_signal = 0;  // a later guard, or none, starts clean
}

int stop_signal() { return static_cast<int>(g_signal); }

std::string signal_name(int signal) {
  switch (signal) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
  }
  return "signal " + std::to_string(signal);
}

}  // namespace gradflow::cli
