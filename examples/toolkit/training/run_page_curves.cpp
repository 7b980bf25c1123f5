// The curves of a run's page (run_page.h), drawn from its CSV files by svg_plot.h: the page
// then shows them with scripts off, and with scripts on adds values on hover and hides a series
// from its legend entry.
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "examples/toolkit/plot/svg_plot.h"
#include "examples/toolkit/training/run_page.h"

namespace gradflow::training {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A CSV file of numbers as the training loop writes it (csv_log.h: no quoted fields in these
// files): its header and its columns, an empty cell as NaN, "true" 1 and "false" 0. A torn last
// line (no newline yet) is left out.
struct Table {
  std::vector<std::string> names;
  std::vector<std::vector<double>> columns;
  const std::vector<double>* column(std::string_view name) const {
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == name) return &columns[i];
    return nullptr;
  }
};

std::vector<std::string> split(std::string_view line) {
  std::vector<std::string> out;
  size_t from = 0;
  for (size_t comma = line.find(','); comma != std::string_view::npos;
       comma = line.find(',', from)) {
    out.emplace_back(line.substr(from, comma - from));
    from = comma + 1;
  }
  out.emplace_back(line.substr(from));
  return out;
}

double cell_value(const std::string& cell) {
  if (cell.empty()) return kNaN;
  if (cell == "true") return 1;
  if (cell == "false") return 0;
  char* end = nullptr;
  const double v = std::strtod(cell.c_str(), &end);
  return end == cell.c_str() ? kNaN : v;
}

Table read_table(std::string_view text) {
  Table t;
  size_t from = 0;
  for (size_t end = text.find('\n'); end != std::string_view::npos;
       from = end + 1, end = text.find('\n', from)) {
    const std::vector<std::string> cells = split(text.substr(from, end - from));
    if (t.names.empty()) {
      t.names = cells;
      t.columns.resize(cells.size());
      continue;
    }
    for (size_t i = 0; i < t.columns.size(); ++i)
      t.columns[i].push_back(i < cells.size() ? cell_value(cells[i]) : kNaN);
  }
  return t;
}

// The points of `y` against `x` where y has a value: an evaluation's metric, drawn point to point.
plot::Series points(const std::string& label, const std::vector<double>& x,
                    const std::vector<double>& y, bool markers) {
  plot::Series s{.label = label, .markers = markers};
  for (size_t i = 0; i < x.size() && i < y.size(); ++i)
    if (!std::isnan(y[i])) {
      s.x.push_back(x[i]);
      s.y.push_back(y[i]);
    }
  return s;
}

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// A panel of the curves against the step.
plot::Figure panel(const std::string& title, const std::string& y_label, bool log = false) {
  plot::Figure f;
  f.title = title;
  f.x.label = "step";
  f.y.label = y_label;
  f.y.log = log;
  return f;
}

}  // namespace

std::string log_curves_svg(std::string_view log_csv) {
  const Table t = read_table(log_csv);
  const std::vector<double>* step = t.column("step");
  if (step == nullptr || step->empty()) return "";
  std::vector<plot::Figure> panels;
  plot::Figure loss = panel("loss", "nats"), held_out = panel("held-out metrics", "fraction");
  if (const auto* l = t.column("loss"))
    loss.series.push_back(points("training batch", *step, *l, false));
  // The evaluation's columns follow the loop's five (training.h).
  for (size_t i = 5; i < t.names.size(); ++i) {
    plot::Figure& f = contains(t.names[i], "loss") ? loss : held_out;
    if (f.series.size() < static_cast<size_t>(plot::kMaxSeries))
      f.series.push_back(points(t.names[i], *step, t.columns[i], true));
  }
  panels.push_back(loss);
  if (!held_out.series.empty()) panels.push_back(held_out);
  if (const auto* lr = t.column("lr")) {
    panels.push_back(panel("learning rate", "lr"));
    panels.back().series.push_back(points("lr", *step, *lr, false));
  }
  if (const auto* g = t.column("grad_norm")) {
    panels.push_back(panel("gradient norm, before clipping", "||g||", true));
    panels.back().series.push_back(points("grad_norm", *step, *g, false));
  }
  return plot::render_svg_grid(panels, 2, {.display_width = 1200});
}

std::string attention_gradients_svg(std::string_view grads_csv) {
  const Table t = read_table(grads_csv);
  const std::vector<double>* step = t.column("step");
  if (step == nullptr || step->empty() || t.names.size() < 5) return "";
  std::vector<plot::Figure> panels;
  // Four columns per layer: L.W_Q, L.W_K, L.W_V, L.scores.
  for (size_t i = 1; i + 3 < t.names.size(); i += 4) {
    const std::string layer = t.names[i].substr(0, t.names[i].rfind('.'));
    plot::Figure f = panel(layer, "gradient norm", true);
    f.series.push_back(points("dL/dW_Q", *step, t.columns[i], false));
    f.series.push_back(points("dL/dW_K", *step, t.columns[i + 1], false));
    f.series.push_back(points("dL/dW_V", *step, t.columns[i + 2], false));
    f.series.push_back(points("dL/dS (scores), at evaluations", *step, t.columns[i + 3], true));
    panels.push_back(f);
  }
  const int columns = panels.size() <= 4 ? 2 : 3;
  return plot::render_svg_grid(panels, columns, {.display_width = 1200, .legend_once = true});
}

}  // namespace gradflow::training
