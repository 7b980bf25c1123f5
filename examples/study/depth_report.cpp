// The depth part in the report: the table of the deepest stacks (the last
// layer's gradient over the first's, the token cosine), depth_metrics.csv
// with every layer and depth, the figures depth_gradients.svg and
// depth_cosine.svg, and the section that holds them with C14 and C15.
#include <algorithm>
#include <sstream>

#include "examples/study/depth.h"
#include "examples/study/parts.h"

namespace gradflow::study {

namespace {

std::string depth_table(const DepthOptions& o, const std::vector<DepthRow>& depth) {
  std::ostringstream md;
  int64_t deepest = 0;
  for (const DepthRow& r : depth) deepest = std::max(deepest, r.layers);
  md << "## depth: depth at initialisation\n\n"
     << "Encoders of 1, 2, 4 and 8 layers (d_model " << o.d_model << ", one head of "
     << o.d_model / o.heads << ", d_ff " << o.d_ff << ", " << o.seq << " random tokens, batch "
     << o.batch << ", cross-entropy against random targets), pre-LN and post-LN, " << o.draws
     << " draws each (the same for every mode). For the " << deepest
     << "-layer stack, the last layer's gradient over the first's at W_Q and at the "
        "feed-forward weights (W_1 and W_2 together, Frobenius norm: what Xiong et al. 2020 "
        "follow layer by layer, their Theorem 1 bounding the last layer's W_2), the token "
        "cosine after the last block and its rise since the first (paired by draw, 95% "
        "t-interval), and the token cosine after the first and the last layer "
        "of the same embeddings passed through the layers' self-attention alone (no residual, "
        "LayerNorm or feed-forward: where Dong et al. 2021 prove rank collapse); "
        "depth_metrics.csv has every layer and depth.\n\n"
     << "| mode | placement | W_Q grad, last / first | feed-forward grad, last / first | "
        "token cosine, last block | its rise from layer 1 | pure attention: cosine after "
        "layer 1 | after layer "
     << deepest << " |\n|---|---|---|---|---|---|---|---|\n";
  std::vector<std::string> modes;
  for (const DepthRow& r : depth) modes.push_back(r.mode);
  for (const std::string& mode : in_drawing_order(modes))
    for (const char* placement : {"pre_ln", "post_ln"}) {
      auto [first, last] = ends_of(depth, mode, placement);
      if (!first || !last) continue;
      md << "| " << mode << " | " << placement << " | "
         << format_estimate(ratio_of(last->grad_norm_wq, first->grad_norm_wq)) << " | "
         << format_estimate(ratio_of(last->grad_norm_ff, first->grad_norm_ff)) << " | "
         << format_estimate(last->token_cosine) << " | " << format_estimate(last->token_cosine_rise)
         << " | " << format_estimate(first->pure_attention_cosine) << " | "
         << format_estimate(last->pure_attention_cosine) << " |\n";
    }
  md << "\n";
  return md.str();
}

CsvFile depth_csv(const std::vector<DepthRow>& depth) {
  // The estimates first, then their standard errors and the draws.
  const std::vector<Interval DepthRow::*> fields = {
      &DepthRow::grad_norm_wq, &DepthRow::grad_norm_wv,          &DepthRow::grad_norm_ff,
      &DepthRow::token_cosine, &DepthRow::pure_attention_cosine, &DepthRow::token_cosine_rise};
  std::vector<std::string> columns = {"mode",
                                      "norm_placement",
                                      "layers",
                                      "layer",
                                      "grad_norm_wq",
                                      "grad_norm_wv",
                                      "grad_norm_ff",
                                      "token_cosine",
                                      "pure_attention_cosine",
                                      "token_cosine_rise"};
  for (size_t i = 4; i < 4 + fields.size(); ++i) columns.push_back(columns[i] + "_se");
  columns.push_back("draws");
  std::vector<CsvRow> rows;
  for (const DepthRow& r : depth) {
    CsvRow row = {r.mode, r.norm_placement, r.layers, r.layer};
    for (auto field : fields) row.push_back(csv_number((r.*field).mean));
    for (auto field : fields) row.push_back(csv_number((r.*field).se));
    row.push_back(r.draws);
    rows.push_back(row);
  }
  return {"depth_metrics.csv", columns, rows};
}

std::vector<PlotFile> depth_figures(const std::vector<DepthRow>& depth) {
  std::vector<PlotFile> out;
  int64_t deepest = 0;
  for (const DepthRow& r : depth) deepest = std::max(deepest, r.layers);
  struct Panel {
    std::string placement, title;
    Interval DepthRow::*field;
  };
  std::vector<std::string> modes;
  for (const DepthRow& r : depth) modes.push_back(r.mode);
  modes = in_drawing_order(modes);
  const auto groups = mode_panels(modes);
  // One row of panels per group of modes: the main arms on top.
  auto depth_panels = [&](const std::string& y, bool log_y, const std::vector<Panel>& wanted) {
    std::vector<plot::Figure> panels;
    for (size_t g = 0; g < groups.size(); ++g)
      for (const Panel& p : wanted) {
        plot::Figure f = figure(
            p.title + ", " + std::to_string(deepest) + " layers" + panel_suffix(g, groups.size()),
            "layer index (0 = nearest the input)", false, y, log_y);
        for (const std::string& mode : groups[g]) {
          plot::Series s = mode_series(mode);
          s.markers = true;
          for (const DepthRow& r : depth) {
            if (r.mode != mode || r.norm_placement != p.placement || r.layers != deepest) continue;
            const Interval& e = r.*(p.field);
            s.x.push_back(static_cast<double>(r.layer));
            s.y.push_back(e.mean);
            s.lo.push_back(e.mean - 1.96 * e.se);
            s.hi.push_back(e.mean + 1.96 * e.se);
          }
          f.series.push_back(s);
        }
        panels.push_back(f);
      }
    return panels;
  };
  out.push_back(
      {"depth_gradients.svg",
       plot::render_svg_grid(
           depth_panels("gradient norm (Frobenius)", true,
                        {{"pre_ln", "W_Q, pre_ln", &DepthRow::grad_norm_wq},
                         {"post_ln", "W_Q, post_ln", &DepthRow::grad_norm_wq},
                         {"pre_ln", "feed-forward, pre_ln", &DepthRow::grad_norm_ff},
                         {"post_ln", "feed-forward, post_ln", &DepthRow::grad_norm_ff}}),
           2, {.share_y = true, .legend_once = true}),
       "Gradient norms (Frobenius) of each layer of an initialised " + std::to_string(deepest) +
           "-layer encoder against the layer's index, pre-LN (left) and post-LN (right), log y: "
           "at W_Q and at the feed-forward weights W_1, W_2 together (the weights Xiong et al. "
           "2020 follow, C14), for the main arms (top two rows) and the other arms (beneath); "
           "means over draws with 95% intervals."});
  out.push_back(
      {"depth_cosine.svg",
       plot::render_svg_grid(
           depth_panels("mean cosine between tokens (1 = all alike)", false,
                        {{"pre_ln", "blocks, pre_ln", &DepthRow::token_cosine},
                         {"post_ln", "blocks, post_ln", &DepthRow::token_cosine},
                         {"pre_ln", "self-attention alone", &DepthRow::pure_attention_cosine}}),
           3, {.share_y = true, .legend_once = true}),
       "Mean cosine similarity between the token representations after each layer of an "
       "initialised " +
           std::to_string(deepest) +
           "-layer encoder: through whole pre-LN and post-LN blocks (left, middle), and the same "
           "embeddings through the layers' self-attention alone, without residual, LayerNorm or "
           "feed-forward (right), for the main arms (top) and the other arms (bottom). 1 is "
           "every token alike, rank collapse (C15)."});
  return out;
}

}  // namespace

Section depth_section(const DepthOptions& options, const std::vector<DepthRow>& depth) {
  Section s{.part = "depth"};
  if (depth.empty()) return s;
  s.markdown = depth_table(options, depth);
  s.claims = depth_claims(depth);
  s.csvs.push_back(depth_csv(depth));
  s.plots = depth_figures(depth);
  return s;
}

}  // namespace gradflow::study
