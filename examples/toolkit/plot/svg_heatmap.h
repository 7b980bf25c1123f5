// Standalone SVG heat maps for the example programs' reports: matrices of values in [0, 1]
// (attention weights, say) as grids of coloured cells, with no plotting dependency.
//
// One colour scale for every panel of a figure, white at 0 to a dark blue at 1, linear in each
// of red, green and blue, and a colour bar beneath the grid that says so. Each panel has a title
// above its matrix and a few annotation lines beneath it; each row of panels may have a heading
// across the figure. Row i of a matrix is drawn top to bottom, column j left to right, so an
// attention matrix reads with queries down and keys across. A panel may name its rows (written
// left of the matrix) and columns (written above it): the tokens of an attention map.
//
//   plot::Heatmap map{.title = "inv_sqrt_dk", .notes = {"entropy 0.41"},
//                     .rows = 3, .columns = 4, .values = weights};  // row-major, 12 values
//   plot::render_heatmap_grid({{.heading = "reverse, d_k = 16", .panels = {map}}}, {});
//
// Unlike svg_plot.h, which skips values it cannot draw (a diverged run's NaN), a heat map
// rejects them: a cell has no "left out" colour that could not be read as a value. A panel that
// has nothing to show says why in `missing`. The output is byte-for-byte the same for the same
// input.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gradflow::plot {

// Lines or markers drawn over a matrix, in cell units: (row r, column c) is the point r cells
// down and c cells across from the matrix's top-left corner, so a cell's centre is (i + 0.5,
// j + 0.5). Say a predicted curve over a grid of settings.
struct HeatmapOverlay {
  std::string label{};                    // Kept as the overlay's SVG <title> (shown on hover).
  std::vector<double> rows{}, columns{};  // Same length; each point inside the matrix.
  std::string color = "#d55e00";          // A CSS colour.
  bool line = true;                       // A polyline through the points in order.
  bool markers = false;                   // A dot with a dark outline at each point.
};

struct Heatmap {
  std::string title{};
  std::vector<std::string> notes{};  // Lines beneath the matrix, one text line each.
  int64_t rows = 0, columns = 0;
  std::vector<double> values{};  // Row-major, rows x columns, each in [0, 1].
  // When not empty, the panel shows this text instead of a matrix (say "diverged"), and
  // rows, columns and values must be 0, 0 and empty.
  std::string missing{};
  std::vector<HeatmapOverlay> overlays{};  // Drawn over the cells, in order.
  // Tick labels, one per row or per column, or none (empty). Row labels end just left of their
  // rows; column labels stand above their columns, across when each fits its cell, else turned
  // to read upwards. Where cells are too small for every label, every k-th is written (0, k,
  // 2k, ...), k the smallest that keeps labels apart.
  std::vector<std::string> row_labels{}, column_labels{};
};

// One row of panels, left to right, under an optional heading.
struct HeatmapRow {
  std::string heading{};
  std::vector<Heatmap> panels{};
};

struct HeatmapOptions {
  double matrix_size = 150;       // Pixels of the longer side of every panel's matrix.
  std::string legend = "weight";  // The colour bar's label: "weight 0 ... 1".
  // Lines above everything, the first in bold (what the figure shows); the figure is made
  // wide enough for each. None when empty.
  std::vector<std::string> title{};
};

// The colour of v in [0, 1] as "#rrggbb": "#ffffff" at 0, "#08306b" at 1.
std::string heat_color(double v);

// A complete standalone SVG document: the rows of panels (each cell as large as the largest
// panel, a matrix's cells square and as large as fit matrix_size; the matrices take a band
// matrix_size high, or less when every matrix is wider than tall), then the colour bar. Cells
// are <rect class="cell" ...>, one per value. Throws Error when there are no panels, when a
// panel has rows or columns below 1 without `missing`, when its values are not rows x columns
// many, when a value is NaN or outside [0, 1], when an overlay's rows and columns differ in
// length or hold a point that is not finite or lies outside the matrix (or the panel is
// `missing`), when a panel has row or column labels but not one per row or column, or when
// matrix_size is not a finite number of at least 10 pixels. Without labels and title the
// output is what it was before either existed.
std::string render_heatmap_grid(const std::vector<HeatmapRow>& rows,
                                const HeatmapOptions& options = {});

}  // namespace gradflow::plot
