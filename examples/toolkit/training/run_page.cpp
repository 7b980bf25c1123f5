#include "examples/toolkit/training/run_page.h"

#include <sys/utsname.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "examples/toolkit/cli/args.h"
#include "examples/toolkit/page/html.h"
#include "nn/io/atomic_file.h"
#include "tensor/kernels/blas_info.h"
#include "tensor/storage.h"

namespace gradflow::training {
namespace {

namespace fs = std::filesystem;
using page::element;
using page::escape_html;

constexpr uint64_t kMostLogBytes = uint64_t{1} << 30;  // as training.cpp reads log.csv

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string metadata_value(const nn::Metadata& m, const std::string& key) {
  for (const auto& [k, v] : m)
    if (k == key) return v;
  return "";
}

// The file's text, or "" when it is not there (yet).
std::string text_of(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return "";
  return read_file(path.string(), kMostLogBytes);
}

// The header and the complete rows of a CSV log up to `step`, as training.cpp keeps log.csv's.
std::string rows_up_to(const std::string& text, int64_t step) {
  std::istringstream in(text);
  std::string line, kept;
  if (!std::getline(in, line)) return kept;
  kept = line + '\n';
  while (std::getline(in, line))
    if (!in.eof() && std::strtoll(line.c_str(), nullptr, 10) <= step) kept += line + '\n';
  return kept;
}

std::string row(const std::string& name, const std::string& html) {
  return "<tr><th>" + escape_html(name) + "</th><td>" + html + "</td></tr>\n";
}

// Appends the SVG document as a figure of the page with this id.
void put_figure(std::string& out, const std::string& svg, const std::string& id) {
  out += "<div class=\"figure\" id=\"" + id + "\">\n";
  out += page::inline_svg(svg, id);
  out += "</div>\n";
}

}  // namespace

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &utc);
  return text;
}

std::string machine_text() {
  std::string cpu;
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; cpu.empty() && std::getline(info, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos)
      cpu = line.substr(line.find(':') + 2);
  const unsigned cores = std::thread::hardware_concurrency();
  std::string out = (cpu.empty() ? "a CPU" : cpu) + ", " + std::to_string(cores) +
                    (cores == 1 ? " core" : " cores");
  utsname u{};
  if (uname(&u) == 0) out += std::string(", ") + u.sysname + " " + u.release + " " + u.machine;
  return out;
}

RunPage::RunPage(const LoopOptions& options, nn::Module& model, int64_t resumed_step)
    : options_(options),
      model_(model),
      layers_(attention_layers_if_any(model)),
      started_(utc_now()),
      start_seconds_(seconds_now()) {
  if (layers_.empty()) return;
  std::vector<std::string> columns = {"step"};
  for (const AttentionLayer& a : layers_)
    for (const char* part : {".W_Q", ".W_K", ".W_V", ".scores"}) columns.push_back(a.name + part);
  const fs::path to = fs::path(options.out_dir) / "attention_grads.csv";
  auto mode = cli::CsvLog::Mode::kTruncate;
  if (!options.resume_dir.empty()) {  // its rows up to the checkpoint, if they are this run's
    const std::string kept =
        rows_up_to(text_of(fs::path(options.resume_dir) / "attention_grads.csv"), resumed_step);
    std::string header;
    for (const std::string& c : columns) header += (header.empty() ? "" : ",") + c;
    if (kept.rfind(header + "\n", 0) == 0) {
      write_file_atomic(to.string(), kept);
      mode = cli::CsvLog::Mode::kAppend;
    }
  }
  grads_log_.emplace(to.string(), columns, mode);
}

void RunPage::after_backward() { weight_norms_ = weight_gradient_norms(layers_); }

void RunPage::after_evaluation(int64_t step,
                               const std::vector<std::pair<std::string, Generator*>>& gen,
                               const Hooks& hooks) {
  std::ostream& err = options_.err ? *options_.err : std::cerr;
  try {
    // The graph's pass is a step's own, of the same sizes: it reuses the blocks the allocator
    // keeps for the step. The passes after it allocate other sizes, so those blocks go back to
    // the system first, and theirs after: the run's peak is the larger, not the sum
    // (memory_estimate.h's page term).
    graph_ = graph_levels(model_, gen, hooks,
                          metadata_value(options_.metadata, "program") +
                              ": the graph of a training step after step " + std::to_string(step) +
                              ", edges labelled with the gradient's norm");
    graph_step_ = step;
    release_cached_memory();
    score_norms_ = score_gradient_norms(layers_, gen, hooks, options_.page.batch);
    if (!layers_.empty() && hooks.attention_example) {
      maps_ = attention_maps(model_, hooks.attention_example());
      Evaluated e{.step = step};
      for (const AttentionMapFile& m : maps_) {
        std::vector<int>& cells = e.cells.emplace_back();
        std::vector<std::string>& notes = e.notes.emplace_back();
        for (const plot::Heatmap& panel : m.panels) {
          for (const double v : panel.values)
            cells.push_back(static_cast<int>(std::lround(v * 1000)));
          notes.insert(notes.end(), panel.notes.begin(), panel.notes.end());
        }
      }
      evaluations_.push_back(std::move(e));
      thin_evaluations();
    }
    if (hooks.page_text) {
      NoGradGuard no_grad;
      model_.eval();
      std::string text = hooks.page_text();
      model_.train();
      texts_.emplace_back(step, std::move(text));
    }
    release_cached_memory();
  } catch (const std::exception& e) {  // the page is a view of the run, not the run
    model_.train();
    if (!warned_) err << "warning: index.html: " << e.what() << "; training goes on\n";
    warned_ = true;
  }
}

void RunPage::thin_evaluations() {
  size_t cells = 0;
  for (const std::vector<int>& layer : evaluations_.back().cells) cells += layer.size();
  while (evaluations_.size() > 2 && evaluations_.size() * cells > kMostMapCells) {
    std::vector<Evaluated> kept;
    for (size_t k = 0; k < evaluations_.size(); k += 2) kept.push_back(std::move(evaluations_[k]));
    if (evaluations_.size() % 2 == 0) kept.push_back(std::move(evaluations_.back()));
    evaluations_ = std::move(kept);
  }
}

void RunPage::log_row(int64_t step) {
  if (!grads_log_) return;
  std::vector<cli::CsvCell> cells = {step};
  for (size_t i = 0; i < layers_.size(); ++i) {
    for (size_t k = 0; k < 3; ++k)
      cells.emplace_back(3 * i + k < weight_norms_.size() ? cli::CsvCell(weight_norms_[3 * i + k])
                                                          : cli::CsvCell(""));
    cells.emplace_back(i < score_norms_.size() ? cli::CsvCell(score_norms_[i]) : cli::CsvCell(""));
  }
  grads_log_->row(cells);
  weight_norms_.clear();
  score_norms_.clear();
}

void RunPage::write(int64_t step, const std::string& status, bool live) {
  const std::string title = metadata_value(options_.metadata, "program") + ": " + options_.out_dir;
  try {
    page::write_page((fs::path(options_.out_dir) / "index.html").string(),
                     {.title = title,
                      .refresh_seconds = live ? kRefreshSeconds : 0,
                      .body = body(step, status, live)});
  } catch (const std::exception& e) {
    std::ostream& err = options_.err ? *options_.err : std::cerr;
    if (!warned_) err << "warning: index.html: " << e.what() << "; training goes on\n";
    warned_ = true;
  }
}

std::string RunPage::body(int64_t step, const std::string& status, bool live) const {
  std::string out = what_ran(step, status, live);
  const fs::path dir = options_.out_dir;
  const std::string curves = log_curves_svg(text_of(dir / "log.csv"));
  out += "<h2 id=\"curves\">Curves</h2>\n";
  if (curves.empty()) {
    out += "<p>No step has finished yet.</p>\n";
  } else {
    out +=
        "<p>From <a href=\"log.csv\">log.csv</a>. Click a legend entry to hide or show its "
        "series; point at a curve to read its values.</p>\n";
    put_figure(out, curves, "curves-figure");
  }
  if (!layers_.empty()) {
    const std::string grads = attention_gradients_svg(text_of(dir / "attention_grads.csv"));
    out +=
        "<h2 id=\"attention-gradients\">The attention layers' gradients</h2>\n<p>From "
        "<a href=\"attention_grads.csv\">attention_grads.csv</a>: the norm of each layer's "
        "W_Q, W_K and W_V gradient at every step (before clipping), and of the gradient at "
        "its scores S = scale q k<sup>T</sup>, measured at each evaluation on the next batch "
        "without changing the run. A softmax that saturates passes little gradient to its "
        "scores, and so to W_Q and W_K: their lines fall below W_V's.</p>\n";
    if (!grads.empty()) put_figure(out, grads, "attention-gradients-figure");
    out += attention_section();
  }
  out += graph_section();
  out += text_section();
  return out;
}

std::string RunPage::what_ran(int64_t step, const std::string& status, bool live) const {
  std::string out =
      "<p class=\"status\">" +
      (live ? "<span class=\"live\">" + escape_html(status) + "</span>" : escape_html(status)) +
      ": step " + std::to_string(step) + " of " + std::to_string(options_.steps) +
      (live ? "; this page reloads itself every " + std::to_string(kRefreshSeconds) +
                  " s while the run goes on."
            : ".") +
      "</p>\n<table class=\"what-ran\">\n";
  if (!options_.page.command.empty()) out += row("command", element("code", options_.page.command));
  out += row("kernels", escape_html(blas_summary()));
  out += row("machine", escape_html(machine_text()) + "; " + std::to_string(options_.threads) +
                            (options_.threads == 1 ? " thread" : " threads"));
  const auto seconds = static_cast<int64_t>(seconds_now() - start_seconds_);
  out += row("time", "this session started " + escape_html(started_) + "; page written " +
                         escape_html(utc_now()) + ", " + std::to_string(seconds) + " s in");
  out += row("folder", escape_html(options_.out_dir));
  out +=
      "</table>\n<details><summary>The configuration: " + std::to_string(options_.metadata.size()) +
      " settings, as the checkpoint keeps them</summary>\n<table>\n";
  for (const auto& [key, value] : options_.metadata)
    out += row(key, escape_html(value.size() > 300 ? value.substr(0, 300) + " ..." : value));
  return out + "</table>\n</details>\n";
}

std::string RunPage::attention_section() const {
  std::string out = "<h2 id=\"attention-maps\">Attention maps</h2>\n";
  if (evaluations_.empty()) return out + "<p>They appear here at the run's first evaluation.</p>\n";
  const size_t last = evaluations_.size() - 1;
  out +=
      "<p>Every layer and head on one held-out example, queries down and keys across, at "
      "each evaluation of this session: move the slider to see how attention formed. Point "
      "at a cell to read its weight.</p>\n<div class=\"slider\"><input type=\"range\" "
      "id=\"attention-step\" min=\"0\" max=\"" +
      std::to_string(last) + "\" value=\"" + std::to_string(last) +
      "\"/> <span id=\"attention-step-label\">after step " +
      std::to_string(evaluations_.back().step) + "</span></div>\n";
  std::string data = "{\"steps\": [";
  for (size_t k = 0; k < evaluations_.size(); ++k)
    data += (k ? "," : "") + std::to_string(evaluations_[k].step);
  data += "],\n\"layers\": [";
  out += "<div class=\"maps\">\n";
  for (size_t i = 0; i < maps_.size(); ++i) {
    const std::string id = "map-" + std::to_string(i);
    put_figure(out, maps_[i].svg, id);
    const plot::Heatmap& first = maps_[i].panels.front();
    auto strings = [](const std::vector<std::string>& v) {
      std::string s = "[";
      for (size_t k = 0; k < v.size(); ++k) s += (k ? "," : "") + page::json_string(v[k]);
      return s + "]";
    };
    data += std::string(i ? ",\n" : "") + "{\"name\": " + page::json_string(layers_[i].name) +
            ", \"figure\": \"" + id + "\", \"rows\": " + std::to_string(first.rows) +
            ", \"columns\": " + std::to_string(first.columns) +
            ", \"rowLabels\": " + strings(first.row_labels) +
            ", \"columnLabels\": " + strings(first.column_labels) + ",\n\"maps\": [";
    for (size_t k = 0; k < evaluations_.size(); ++k) {
      data += k ? ",\n[" : "[";
      const std::vector<int>& cells = evaluations_[k].cells[i];
      for (size_t c = 0; c < cells.size(); ++c) data += (c ? "," : "") + std::to_string(cells[c]);
      data += "]";
    }
    data += "],\n\"notes\": [";
    for (size_t k = 0; k < evaluations_.size(); ++k)
      data += (k ? "," : "") + strings(evaluations_[k].notes[i]);
    data += "]}";
  }
  out += "</div>\n<script type=\"application/json\" id=\"attention-data\">\n";
  out += data;
  out += "]}\n</script>\n";
  return out;
}

std::string RunPage::graph_section() const {
  if (graph_.empty()) return "";
  std::string out =
      "<h2 id=\"graph\">The graph of a training step</h2>\n<p>The step after step " +
      std::to_string(graph_step_) +
      " (drawn aside on the batch that step draws, without changing the run), from the "
      "model's parts down to its single ops: an edge runs the way the forward pass went and is "
      "labelled with the norm of the gradient the backward pass sent back along it, thicker for "
      "a larger one. Open a level below, or click a blue box (a module's ops folded together) "
      "to see it unfolded in the next.</p>\n<div class=\"graph\">\n";
  for (size_t i = 0; i < graph_.size(); ++i) {
    const GraphLevel& g = graph_[i];
    const std::string what =
        g.depth == 0 ? "every op"
        : i == 0     ? "the model's parts, each folded into one box"
                 : "modules " + std::to_string(g.depth) + " levels deep, each folded into one box";
    out += std::string("<details class=\"level\"") + (i == 0 ? " open" : "") + "><summary>" + what +
           ": " + std::to_string(g.boxes) + " boxes, " + std::to_string(g.edges) +
           " edges</summary>\n";
    put_figure(out, g.svg, "graph-" + std::to_string(i));
    out += "</details>\n";
  }
  return out + "</div>\n";
}

std::string RunPage::text_section() const {
  if (texts_.empty()) return "";
  std::string out = "<h2 id=\"output\">What the model gives at each evaluation</h2>\n";
  for (size_t k = texts_.size(); k-- > 0;) {
    const std::string what = "after step " + std::to_string(texts_[k].first);
    out += k + 1 == texts_.size()
               ? element("h3", what) + "\n" + element("pre", texts_[k].second) + "\n"
               : "<details><summary>" + escape_html(what) + "</summary>" +
                     element("pre", texts_[k].second) + "</details>\n";
  }
  return out;
}

}  // namespace gradflow::training
