// The CSS and the script every page holds (html.h). The script only adds to figures that are
// already drawn, so a page read with scripts off shows the same figures, still:
//   - curves (any svg_plot.h figure): a legend entry shows or hides its series in every panel
//     of the figure, and a pointer over a panel reads each shown series' value at the nearest x;
//   - attention maps (run_page.h): a slider over the evaluations recolours each layer's cells
//     and rewrites its notes from the page's data, and a pointer over a cell names its query,
//     key and weight; "#map=K" in the address opens evaluation K (0 the first);
//   - the graph of a step (run_page.h): a click on a folded module's box opens the next level
//     and shows the module there, unfolded.
// When it has run to the end it marks the page (<html data-script="ran">), which the browser
// test reads (tests/examples/page_browser_test.cpp).
#include <string_view>

#include "examples/toolkit/page/html.h"

namespace gradflow::page {

extern const std::string_view kPageStyle = R"css(
body { font-family: sans-serif; margin: 1.5em auto; max-width: 1400px; padding: 0 1em;
       color: #222; line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { margin-top: 1.6em; border-bottom: 1px solid #ddd; }
p, li { max-width: 60em; }
code, pre { font-family: monospace; font-size: 0.92em; background: #f4f4f4; }
pre { padding: 0.6em; overflow-x: auto; white-space: pre-wrap; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.92em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
.figure { overflow-x: auto; margin: 0.8em 0; }
.figure svg { display: block; max-width: 100%; height: auto; }
.maps { display: flex; flex-wrap: wrap; column-gap: 1.5em; }
.graph .figure svg { max-width: none; }
figcaption { font-size: 0.9em; color: #444; max-width: 60em; }
.status { font-size: 1.05em; }
.live { color: #b35900; font-weight: bold; }
.verdict-holds { background: #dff0d8; }
.verdict-partly { background: #fcf3cf; }
.verdict-not { background: #f8d7da; }
.verdict-unclear { background: #eee; }
td[class^="verdict-"] { white-space: nowrap; }  /* "does not hold" on one line */
.legend-entry { cursor: pointer; }
.legend-entry.off { opacity: 0.3; }
.slider { position: sticky; top: 0; background: white; padding: 0.4em 0; z-index: 1; }
.slider input { width: 30em; max-width: 80%; vertical-align: middle; }
details.level > summary { cursor: pointer; font-weight: bold; }
.graph .node.flash rect { stroke: #d55e00; stroke-width: 4; }
#tip { position: fixed; pointer-events: none; background: rgba(255, 255, 255, 0.95);
       border: 1px solid #888; padding: 0.3em 0.5em; font-size: 12px; display: none;
       z-index: 2; white-space: pre; }
)css";

extern const std::string_view kPageScript = R"js(
"use strict";
// One tooltip for the whole page.
const tip = document.createElement("div");
tip.id = "tip";
document.body.appendChild(tip);
function showTip(event, text) {
  tip.textContent = text;
  tip.style.display = "block";
  tip.style.left = Math.min(event.clientX + 14, window.innerWidth - tip.offsetWidth - 4) + "px";
  tip.style.top = (event.clientY + 14) + "px";
}
function hideTip() { tip.style.display = "none"; }

// A number as the figures write it: 4 significant digits.
function short(v) { return Math.abs(v) >= 1e5 || (v !== 0 && Math.abs(v) < 1e-3)
  ? v.toExponential(2) : String(Number(v.toPrecision(4))); }

// The pointer's position in el's own coordinates (an SVG element inside any transforms).
function pointIn(el, event) {
  const m = el.getScreenCTM();
  if (!m) return null;
  const p = new DOMPoint(event.clientX, event.clientY).matrixTransform(m.inverse());
  return { x: p.x, y: p.y };
}

// ---- Curves: svg_plot.h's figures ----------------------------------------------------------
// Each series is a <g class="curve" data-label data-points="x,y x,y">; a panel's frame
// <rect class="frame" data-x="lo hi lin|log"> maps x from data to its edges.
function setupCurves(svg) {
  const hidden = new Set();
  function refresh() {
    svg.querySelectorAll("[data-label]").forEach(el => {
      const off = hidden.has(el.dataset.label);
      if (el.classList.contains("legend-entry")) el.classList.toggle("off", off);
      else el.style.display = off ? "none" : "";
    });
  }
  svg.querySelectorAll(".legend-entry[data-label]").forEach(entry => {
    entry.addEventListener("click", () => {
      const label = entry.dataset.label;
      if (hidden.has(label)) hidden.delete(label); else hidden.add(label);
      refresh();
    });
  });
  const frames = Array.from(svg.querySelectorAll("rect.frame[data-x]"));
  const guide = document.createElementNS("http://www.w3.org/2000/svg", "line");
  guide.setAttribute("stroke", "#888");
  guide.setAttribute("stroke-dasharray", "3 3");
  guide.style.pointerEvents = "none";
  svg.addEventListener("mousemove", event => {
    for (const frame of frames) {
      const p = pointIn(frame, event);
      const left = +frame.getAttribute("x"), width = +frame.getAttribute("width");
      const top = +frame.getAttribute("y"), height = +frame.getAttribute("height");
      if (!p || p.x < left || p.x > left + width || p.y < top || p.y > top + height) continue;
      const [lo, hi, scale] = frame.dataset.x.split(" ");
      const f = (p.x - left) / width;
      const x = scale === "log" ? Math.pow(10, Math.log10(+lo) + f * Math.log10(+hi / +lo))
                                : +lo + f * (+hi - +lo);
      const lines = [(frame.dataset.xLabel || "x") + " " + short(x)];
      frame.parentNode.querySelectorAll(":scope > g.curve[data-points]").forEach(curve => {
        if (curve.style.display === "none" || !curve.dataset.points) return;
        let best = null;
        for (const pair of curve.dataset.points.split(" ")) {
          const [px, py] = pair.split(",").map(Number);
          if (best === null || Math.abs(px - x) < Math.abs(best[0] - x)) best = [px, py];
        }
        if (best) lines.push(curve.dataset.label + ": " + short(best[1]) + "  (at " +
                             short(best[0]) + ")");
      });
      frame.parentNode.appendChild(guide);
      guide.setAttribute("x1", p.x); guide.setAttribute("x2", p.x);
      guide.setAttribute("y1", top); guide.setAttribute("y2", top + height);
      showTip(event, lines.join("\n"));
      return;
    }
    guide.remove();
    hideTip();
  });
  svg.addEventListener("mouseleave", () => { guide.remove(); hideTip(); });
}
document.querySelectorAll("svg").forEach(svg => {
  if (svg.querySelector("g.curve")) setupCurves(svg);
});

// ---- Attention maps: the page's data, one slider over the evaluations ----------------------
// data = { steps: [...], layers: [{ figure, heads, rows, columns, rowLabels, columnLabels,
//          maps: [per evaluation: the cells' weights in thousandths, head by head, row by row],
//          notes: [per evaluation: the notes' text, in the figure's order] }] }
function heatColor(v) {  // svg_heatmap.h's scale: white at 0 to #08306b at 1
  const dark = [0x08, 0x30, 0x6b];
  return "#" + dark.map(d => Math.round(255 + v * (d - 255)).toString(16).padStart(2, "0"))
    .join("");
}
function setupAttention(data) {
  const slider = document.getElementById("attention-step");
  const label = document.getElementById("attention-step-label");
  if (!slider || data.steps.length === 0) return;
  let shown = data.steps.length - 1;
  function show(k) {
    shown = k;
    label.textContent = "after step " + data.steps[k] + " (evaluation " + (k + 1) + " of " +
                        data.steps.length + ")";
    for (const layer of data.layers) {
      const figure = document.getElementById(layer.figure);
      if (!figure || !layer.maps[k]) continue;
      const cells = figure.querySelectorAll("rect.cell");
      layer.maps[k].forEach((w, i) => { if (cells[i]) cells[i].setAttribute("fill", heatColor(w / 1000)); });
      const notes = figure.querySelectorAll("text.note");
      layer.notes[k].forEach((text, i) => { if (notes[i]) notes[i].textContent = text; });
    }
    sessionStorage.setItem("attention-step", k === data.steps.length - 1 ? "latest" : String(k));
  }
  slider.max = String(data.steps.length - 1);
  slider.addEventListener("input", () => show(+slider.value));
  const asked = /map=(\d+)/.exec(location.hash);
  const kept = sessionStorage.getItem("attention-step");  // across a live page's reloads
  let start = data.steps.length - 1;
  if (asked) start = Math.min(+asked[1], start);
  else if (kept !== null && kept !== "latest") start = Math.min(+kept, start);
  slider.value = String(start);
  slider.dispatchEvent(new Event("input"));
  for (const layer of data.layers) {
    const figure = document.getElementById(layer.figure);
    if (!figure) continue;
    const cells = Array.from(figure.querySelectorAll("rect.cell"));
    const per = layer.rows * layer.columns;
    cells.forEach((cell, i) => cell.addEventListener("mousemove", event => {
      const head = Math.floor(i / per), row = Math.floor((i % per) / layer.columns);
      const column = i % layer.columns;
      showTip(event, layer.name + ", head " + head + "\nquery " + row + " " +
              layer.rowLabels[row] + "  ->  key " + column + " " + layer.columnLabels[column] +
              "\nweight " + (layer.maps[shown][i] / 1000).toFixed(3) + " after step " +
              data.steps[shown]);
    }));
    figure.addEventListener("mouseleave", hideTip);
  }
}
const attentionData = document.getElementById("attention-data");
if (attentionData) setupAttention(JSON.parse(attentionData.textContent));

// ---- The graph: one drawing per level of folding, in <details class="level"> ---------------
// A folded module is a box filled #e3eefa whose first text is its name ("encoder.layers.0",
// "embed.token #2" for its second call); a click opens the next level and shows the first box
// there that ran inside it.
const levels = Array.from(document.querySelectorAll("details.level"));
levels.forEach((level, k) => {
  level.querySelectorAll("g.node").forEach(node => {
    const rect = node.querySelector("rect"), name = node.querySelector("text");
    if (!rect || !name || rect.getAttribute("fill") !== "#e3eefa" || k + 1 >= levels.length) return;
    node.style.cursor = "pointer";
    node.addEventListener("click", () => {
      const module = name.textContent.replace(/ #\d+$/, "");
      const next = levels[k + 1];
      next.open = true;
      const inside = Array.from(next.querySelectorAll("g.node")).find(n => {
        const t = n.querySelector("text");
        return t && (t.textContent === module || t.textContent.startsWith(module + ".") ||
                     t.textContent.startsWith(module + " #"));
      });
      if (!inside) return;
      inside.scrollIntoView({ block: "center", inline: "center" });
      inside.classList.add("flash");
      setTimeout(() => inside.classList.remove("flash"), 2500);
    });
  });
});

document.documentElement.dataset.script = "ran";
)js";

}  // namespace gradflow::page
