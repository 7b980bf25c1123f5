#include "examples/toolkit/plot/svg_heatmap.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "examples/toolkit/plot/axis_ticks.h"
#include "examples/toolkit/plot/plot_layout.h"
#include "examples/toolkit/plot/svg_plot.h"
#include "tensor/error.h"

namespace gradflow::plot {
namespace {

// The dark end of the scale: ColorBrewer's darkest "Blues", dark enough that a weight of 1
// stands out from any other and light text is never needed on it (no text is drawn on cells).
constexpr int kDark[3] = {0x08, 0x30, 0x6b};

constexpr double kHeadingFont = 14, kNoteFont = 11, kPanelTitleFont = 13;
constexpr double kHeadingBand = 26;  // Height of a row's heading.
constexpr double kTitleBand = 22;    // Height of a panel's title above its matrix.
constexpr double kNoteRow = 14;      // Height of one annotation line.
constexpr double kPad = 10;          // Space around a panel's contents.
constexpr double kBarWidth = 200, kBarHeight = 12, kBarBand = 44;
constexpr double kTickLabelFont = 10, kSubtitleFont = 12;
constexpr double kTickLabelGap = 4;  // Between a tick label and its matrix.
constexpr double kLabelPitch = 12;   // The least distance between two labels' centres.
constexpr double kSubtitleRow = 18;  // Height of a figure title's second and later lines.

template <class... Parts>
void put(std::string& out, const Parts&... parts) {
  (out.append(std::string_view(parts)), ...);
}

std::string num(double v) { return format_number(v); }

void check_overlays(const Heatmap& h) {
  for (const HeatmapOverlay& o : h.overlays) {
    if (!h.missing.empty())
      fail("render_heatmap_grid: panel '", h.title, "' is missing but has overlay '", o.label, "'");
    if (o.rows.size() != o.columns.size())
      fail("render_heatmap_grid: overlay '", o.label, "' of panel '", h.title, "' has ",
           o.rows.size(), " rows but ", o.columns.size(), " columns");
    for (size_t i = 0; i < o.rows.size(); ++i) {
      const double r = o.rows[i], c = o.columns[i];
      if (!(r >= 0 && r <= static_cast<double>(h.rows) && c >= 0 &&
            c <= static_cast<double>(h.columns)))  // NaN fails too
        fail("render_heatmap_grid: overlay '", o.label, "' of panel '", h.title, "' has point (", r,
             ", ", c, ") outside its ", h.rows, " x ", h.columns, " matrix");
    }
  }
}

void check_labels(const Heatmap& h) {
  if (!h.row_labels.empty() && static_cast<int64_t>(h.row_labels.size()) != h.rows)
    fail("render_heatmap_grid: panel '", h.title, "' has ", h.row_labels.size(), " row labels for ",
         h.rows, " rows; give one per row or none");
  if (!h.column_labels.empty() && static_cast<int64_t>(h.column_labels.size()) != h.columns)
    fail("render_heatmap_grid: panel '", h.title, "' has ", h.column_labels.size(),
         " column labels for ", h.columns, " columns; give one per column or none");
}

void check_panel(const Heatmap& h) {
  check_overlays(h);
  check_labels(h);
  if (!h.missing.empty()) {
    if (h.rows != 0 || h.columns != 0 || !h.values.empty()) {
      fail("render_heatmap_grid: panel '", h.title, "' says '", h.missing,
           "' is missing but has a ", h.rows, " x ", h.columns, " matrix with ", h.values.size(),
           " values");
    }
    return;
  }
  if (h.rows < 1 || h.columns < 1) {
    fail("render_heatmap_grid: panel '", h.title, "' has an empty matrix (", h.rows, " x ",
         h.columns, "); set `missing` to say why there is none");
  }
  if (static_cast<int64_t>(h.values.size()) != h.rows * h.columns) {
    fail("render_heatmap_grid: panel '", h.title, "' is ", h.rows, " x ", h.columns, " but has ",
         h.values.size(), " values (", h.rows * h.columns, " expected)");
  }
  for (size_t i = 0; i < h.values.size(); ++i) {
    const double v = h.values[i];
    if (!(v >= 0 && v <= 1)) {  // NaN fails both
      fail("render_heatmap_grid: panel '", h.title, "' has value ", v, " at row ",
           static_cast<int64_t>(i) / h.columns, ", column ", static_cast<int64_t>(i) % h.columns,
           "; every value must be in [0, 1]");
    }
  }
}

// The sizes every panel's cell of the grid shares: wide enough for the matrix with its row
// labels and for the widest title or note, tall enough for the column labels and the most notes.
struct Cell {
  double width = 0, height = 0;
  double matrix_height = 0;  // the band the matrices take: matrix_size, less for wide ones
  double row_band = 0;       // left of the matrices, for row labels (0: none has any)
  double column_band = 0;    // above the matrices, for column labels (0: none has any)
  size_t notes = 0;
};

// Whole pixels per cell of h's matrix, so neighbouring cells meet without hairline gaps.
double cell_side(const Heatmap& h, double matrix_size) {
  return std::max(1.0, std::floor(matrix_size / static_cast<double>(std::max(h.rows, h.columns))));
}

// A matrix wider than tall takes only its own height (a 5 x 61 grid is a strip, not a square
// with empty space beneath); square, tall and missing panels take matrix_size, as always.
double matrix_height(const Heatmap& h, double matrix_size) {
  if (!h.missing.empty() || h.rows >= h.columns) return matrix_size;
  return cell_side(h, matrix_size) * static_cast<double>(h.rows);
}

double widest(const std::vector<std::string>& labels) {
  double w = 0;
  for (const std::string& label : labels) w = std::max(w, text_width(label, kTickLabelFont));
  return w;
}

// Whether h's column labels are written across: when each fits above its own cell. Longer
// ones (seq2seq's "<eos>" over a 20-pixel cell) are turned to read upwards instead.
bool columns_across(const Heatmap& h, double matrix_size) {
  return widest(h.column_labels) + 2 <= cell_side(h, matrix_size);
}

// Every k-th label of an axis is written, k the least that keeps their centres kLabelPitch
// apart: a 64-character context in 300 pixels shows every third character.
int64_t label_step(double side) {
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(kLabelPitch / side)));
}

Cell cell_size(const std::vector<HeatmapRow>& rows, double matrix_size) {
  Cell c;
  double content = matrix_size;
  for (const HeatmapRow& r : rows) {
    for (const Heatmap& h : r.panels) {
      content = std::max(content, text_width(h.title, kPanelTitleFont));
      for (const std::string& note : h.notes)
        content = std::max(content, text_width(note, kNoteFont));
      c.notes = std::max(c.notes, h.notes.size());
      c.matrix_height = std::max(c.matrix_height, matrix_height(h, matrix_size));
      if (!h.row_labels.empty())
        c.row_band = std::max(c.row_band, widest(h.row_labels) + kTickLabelGap);
      if (!h.column_labels.empty())
        c.column_band =
            std::max(c.column_band,
                     (columns_across(h, matrix_size) ? kTickLabelFont : widest(h.column_labels)) +
                         kTickLabelGap);
    }
  }
  content = std::max(content, matrix_size + c.row_band);
  c.width = std::ceil(content + 2 * kPad);
  c.height = std::ceil(kTitleBand + c.column_band + c.matrix_height + 6 +
                       static_cast<double>(c.notes) * kNoteRow + kPad);
  return c;
}

void put_text(std::string& out, double x, double y, double size, std::string_view extra,
              std::string_view body) {
  put(out, "<text x=\"", num(x), "\" y=\"", num(y), "\" font-size=\"", num(size), "\"", extra, ">",
      escape_xml(body), "</text>\n");
}

// The panel's overlays, a point (r, c) at (left + c side, top + r side).
void put_overlays(std::string& out, const Heatmap& h, double left, double top, double side) {
  for (const HeatmapOverlay& o : h.overlays) {
    put(out, "<g class=\"overlay\"><title>", escape_xml(o.label), "</title>\n");
    std::string points;
    for (size_t i = 0; i < o.rows.size(); ++i)
      put(points, i ? " " : "", num(left + o.columns[i] * side), ",", num(top + o.rows[i] * side));
    if (o.line && o.rows.size() > 1)
      put(out, "<polyline points=\"", points, "\" fill=\"none\" stroke=\"", escape_xml(o.color),
          "\" stroke-width=\"2\"/>\n");
    if (o.markers)
      for (size_t i = 0; i < o.rows.size(); ++i)
        put(out, "<circle cx=\"", num(left + o.columns[i] * side), "\" cy=\"",
            num(top + o.rows[i] * side), "\" r=\"", num(std::max(3.0, side / 3)), "\" fill=\"",
            escape_xml(o.color), "\" stroke=\"#222\" stroke-width=\"1\"/>\n");
    put(out, "</g>\n");
  }
}

// The row labels left of the matrix whose top-left corner is (left, top), the column labels
// above it; each centred on its row or column.
void put_tick_labels(std::string& out, const Heatmap& h, double left, double top, double side,
                     bool across) {
  const double half = 0.35 * kTickLabelFont;  // from a baseline to the middle of its glyphs
  const int64_t row_step = label_step(side), column_step = across ? 1 : label_step(side);
  for (int64_t i = 0; i < static_cast<int64_t>(h.row_labels.size()); i += row_step)
    put_text(out, left - kTickLabelGap, top + side * (static_cast<double>(i) + 0.5) + half,
             kTickLabelFont, " text-anchor=\"end\" class=\"row-label\"",
             h.row_labels[static_cast<size_t>(i)]);
  for (int64_t j = 0; j < static_cast<int64_t>(h.column_labels.size()); j += column_step) {
    const double middle = left + side * (static_cast<double>(j) + 0.5);
    const std::string& label = h.column_labels[static_cast<size_t>(j)];
    if (across) {
      put_text(out, middle, top - kTickLabelGap, kTickLabelFont,
               " text-anchor=\"middle\" class=\"column-label\"", label);
    } else {  // turned a quarter left about its start, which sits just above the column
      const double x = middle + half, y = top - kTickLabelGap;
      put_text(out, x, y, kTickLabelFont,
               " transform=\"rotate(-90 " + num(x) + " " + num(y) + ")\" class=\"column-label\"",
               label);
    }
  }
}

// One panel with its top-left corner at (x, y): the title, the matrix (square cells, as large
// as fit matrix_size, centred right of the row labels' band), a frame around it so white cells
// show where it ends, the tick labels, the notes.
void put_panel(std::string& out, const Heatmap& h, const Cell& cell, double x, double y,
               double matrix_size) {
  const double centre = x + cell.width / 2;
  put_text(out, centre, y + kTitleBand - 7, kPanelTitleFont,
           " text-anchor=\"middle\" font-weight=\"bold\"", h.title);
  const double top = y + kTitleBand + cell.column_band;
  if (!h.missing.empty()) {
    put_text(out, centre, top + cell.matrix_height / 2, kNoteFont, " text-anchor=\"middle\"",
             h.missing);
  } else {
    const double side = cell_side(h, matrix_size);
    const double width = side * static_cast<double>(h.columns);
    const double left =
        std::round(x + cell.row_band + (cell.width - cell.row_band) / 2 - width / 2);
    for (int64_t i = 0; i < h.rows; ++i) {
      for (int64_t j = 0; j < h.columns; ++j) {
        put(out, "<rect class=\"cell\" x=\"", num(left + side * static_cast<double>(j)), "\" y=\"",
            num(top + side * static_cast<double>(i)), "\" width=\"", num(side), "\" height=\"",
            num(side), "\" fill=\"", heat_color(h.values[static_cast<size_t>(i * h.columns + j)]),
            "\"/>\n");
      }
    }
    put(out, "<rect class=\"matrix-frame\" x=\"", num(left), "\" y=\"", num(top), "\" width=\"",
        num(width), "\" height=\"", num(side * static_cast<double>(h.rows)),
        "\" fill=\"none\" stroke=\"#999\" stroke-width=\"1\"/>\n");
    put_overlays(out, h, left, top, side);
    put_tick_labels(out, h, left, top, side, columns_across(h, matrix_size));
  }
  double line = top + cell.matrix_height + 6 + kNoteFont;
  for (const std::string& note : h.notes) {
    put_text(out, x + kPad, line, kNoteFont, " class=\"note\"", note);
    line += kNoteRow;
  }
}

// "weight  0 [white to dark] 1", centred beneath the grid with its top at y.
void put_colour_bar(std::string& out, const std::string& label, double width, double y) {
  const double label_width = text_width(label, kLabelFont) + 8;
  const double left = std::round((width - kBarWidth - label_width) / 2 + label_width);
  const double middle = y + kBarBand / 2;
  put(out, "<defs><linearGradient id=\"heat-scale\"><stop offset=\"0\" stop-color=\"",
      heat_color(0), "\"/><stop offset=\"1\" stop-color=\"", heat_color(1),
      "\"/></linearGradient></defs>\n");
  put_text(out, left - 22, middle + 5, kLabelFont, " text-anchor=\"end\"", label);
  put_text(out, left - 6, middle + 4, kTickFont, " text-anchor=\"end\"", "0");
  put(out, "<rect class=\"colour-bar\" x=\"", num(left), "\" y=\"", num(middle - kBarHeight / 2),
      "\" width=\"", num(kBarWidth), "\" height=\"", num(kBarHeight),
      "\" fill=\"url(#heat-scale)\" stroke=\"#999\" stroke-width=\"1\"/>\n");
  put_text(out, left + kBarWidth + 6, middle + 4, kTickFont, "", "1");
}

}  // namespace

std::string heat_color(double v) {
  if (!(v >= 0 && v <= 1)) fail("heat_color: value ", v, " must be in [0, 1]");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "#";
  for (const int dark : kDark) {
    // Linear in each channel, as the colour bar's SVG gradient interpolates (in sRGB).
    const int c = static_cast<int>(std::lround(255 + v * (dark - 255)));
    out += kHex[c / 16];
    out += kHex[c % 16];
  }
  return out;
}

std::string render_heatmap_grid(const std::vector<HeatmapRow>& rows,
                                const HeatmapOptions& options) {
  const double matrix_size = options.matrix_size;
  if (!(std::isfinite(matrix_size) && matrix_size >= 10)) {
    fail("render_heatmap_grid: matrix_size must be a finite number of at least 10 pixels, got ",
         matrix_size);
  }
  size_t columns = 0;
  for (const HeatmapRow& r : rows) {
    columns = std::max(columns, r.panels.size());
    for (const Heatmap& h : r.panels) check_panel(h);
  }
  if (columns == 0) fail("render_heatmap_grid: there are no panels to draw");

  const Cell cell = cell_size(rows, matrix_size);
  double width = 2 * kEdge + cell.width * static_cast<double>(columns);
  std::string body;
  double y = kEdge;
  for (size_t i = 0; i < options.title.size(); ++i) {
    const double font = i == 0 ? kHeadingFont : kSubtitleFont;
    width = std::max(width, 2 * (kEdge + kPad) + text_width(options.title[i], font));
    put_text(body, kEdge + kPad, y + (i == 0 ? kHeadingBand - 8 : kSubtitleRow - 5), font,
             i == 0 ? " font-weight=\"bold\"" : "", options.title[i]);
    y += i == 0 ? kHeadingBand : kSubtitleRow;
  }
  for (const HeatmapRow& r : rows) {
    if (!r.heading.empty()) {
      put_text(body, kEdge + kPad, y + kHeadingBand - 8, kHeadingFont, " font-weight=\"bold\"",
               r.heading);
      y += kHeadingBand;
    }
    for (size_t i = 0; i < r.panels.size(); ++i)
      put_panel(body, r.panels[i], cell, kEdge + cell.width * static_cast<double>(i), y,
                matrix_size);
    y += cell.height;
  }
  put_colour_bar(body, options.legend, width, y);
  y += kBarBand + kEdge;

  const std::string w = std::to_string(static_cast<int>(std::ceil(width)));
  const std::string h = std::to_string(static_cast<int>(std::ceil(y)));
  std::string out;
  put(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"", w, "\" height=\"", h,
      "\" viewBox=\"0 0 ", w, " ", h, "\" font-family=\"sans-serif\">\n<rect width=\"", w,
      "\" height=\"", h, "\" fill=\"white\"/>\n", body, "</svg>\n");
  return out;
}

}  // namespace gradflow::plot
