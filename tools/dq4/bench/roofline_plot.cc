#include "bench/roofline_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "dq4/kernels/error.h"

namespace dq4::cli::bench {
namespace {

constexpr double kPanelWidth = 460, kPanelHeight = 380;
constexpr double kLeft = 70, kRight = 20, kTop = 40, kBottom = 90;  // margins inside a panel

double median(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); }), v.end());
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

const char* color_of(int64_t group) {
  switch (group) {
    case 0:
      return "#1f77b4";
    case 32:
      return "#ff7f0e";
    case 64:
      return "#9467bd";
    case 128:
      return "#2ca02c";
    default:
      return "#7f7f7f";
  }
}

std::string group_label(const CaseResult& r) {
  if (!r.grouped) return "no groups";
  return r.group == 0 ? "channelwise" : "G = " + std::to_string(r.group);
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string tick(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Maps log-scaled data to one panel's pixels.
struct Axes {
  double x0, y0;          // panel origin
  double log_m0, log_m1;  // log2 M range
  double log_g0, log_g1;  // log10 GFLOP/s range
  double px(double m) const {
    return x0 + kLeft +
           (std::log2(m) - log_m0) / (log_m1 - log_m0) * (kPanelWidth - kLeft - kRight);
  }
  double py(double gflops) const {
    return y0 + kPanelHeight - kBottom -
           (std::log10(gflops) - log_g0) / (log_g1 - log_g0) * (kPanelHeight - kTop - kBottom);
  }
};

void panel(std::string& svg, const std::vector<const CaseResult*>& cases, const std::string& kind,
           int threads, double x0) {
  double m_min = 1e300, m_max = 0, g_min = 1e300, g_max = 0;
  std::vector<double> peaks, bws, bytes_per_weight, ns, ks;
  for (const CaseResult* r : cases) {
    m_min = std::min(m_min, static_cast<double>(r->m));
    m_max = std::max(m_max, static_cast<double>(r->m));
    g_min = std::min(g_min, r->gflops);
    g_max = std::max(g_max, r->gflops);
    peaks.push_back(kind == "w4a8" ? r->int8_peak_gops : r->fma_peak_gflops);
    bws.push_back(r->read_bw_gbps);
    bytes_per_weight.push_back(static_cast<double>(r->weight_bytes) /
                               (static_cast<double>(r->n) * static_cast<double>(r->k)));
    ns.push_back(static_cast<double>(r->n));
    ks.push_back(static_cast<double>(r->k));
  }
  const double peak = median(peaks), bw = median(bws), b = median(bytes_per_weight), n = median(ns),
               k = median(ks);
  // GFLOP/s that reading the weights and activations at the probe's bandwidth allows.
  const auto bandwidth_limit = [&](double m) {
    return bw * 2 * m * n * k / (b * n * k + 4 * m * k);
  };
  if (std::isfinite(peak)) g_max = std::max(g_max, peak);
  if (std::isfinite(bw)) {
    g_min = std::min(g_min, bandwidth_limit(m_min));
    g_max = std::max(g_max, std::min(bandwidth_limit(m_max), std::isfinite(peak) ? peak : 1e300));
  }
  if (m_max <= m_min) m_max = m_min * 2;
  Axes ax{x0,
          0,
          std::log2(m_min),
          std::log2(m_max),
          std::floor(std::log10(g_min)),
          std::ceil(std::log10(g_max * 1.05))};
  if (ax.log_g1 <= ax.log_g0) ax.log_g1 = ax.log_g0 + 1;

  const double left = ax.px(m_min), right = ax.px(m_max);
  const double bottom = ax.py(std::pow(10, ax.log_g0)), top = ax.py(std::pow(10, ax.log_g1));
  svg += "<rect x='" + number(left) + "' y='" + number(top) + "' width='" + number(right - left) +
         "' height='" + number(bottom - top) + "' fill='none' stroke='#333'/>\n";
  svg += "<text x='" + number((left + right) / 2) + "' y='" + number(top - 14) +
         "' text-anchor='middle' font-weight='bold'>" + kind + " " + cases.front()->isa + ", " +
         std::to_string(threads) + (threads == 1 ? " thread" : " threads") + "</text>\n";
  // Grid: powers of two along M, powers of ten (and 2, 5) along GFLOP/s.
  for (double m = std::pow(2, std::ceil(ax.log_m0)); m <= m_max * 1.0001; m *= 2) {
    const double x = ax.px(m);
    svg += "<line x1='" + number(x) + "' y1='" + number(top) + "' x2='" + number(x) + "' y2='" +
           number(bottom) + "' stroke='#ddd'/>\n";
    svg += "<text x='" + number(x) + "' y='" + number(bottom + 16) + "' text-anchor='middle'>" +
           std::to_string(static_cast<long long>(m)) + "</text>\n";
  }
  for (double e = ax.log_g0; e <= ax.log_g1; ++e)
    for (double f : {1.0, 2.0, 5.0}) {
      const double g = f * std::pow(10, e);
      if (std::log10(g) > ax.log_g1 + 1e-9) continue;
      const double y = ax.py(g);
      svg += "<line x1='" + number(left) + "' y1='" + number(y) + "' x2='" + number(right) +
             "' y2='" + number(y) + "' stroke='" + (f == 1.0 ? "#ccc" : "#eee") + "'/>\n";
      svg += "<text x='" + number(left - 6) + "' y='" + number(y + 4) +
             "' text-anchor='end' font-size='11'>" + tick(g) + "</text>\n";
    }
  svg += "<text x='" + number((left + right) / 2) + "' y='" + number(bottom + 34) +
         "' text-anchor='middle'>M (activation rows)</text>\n";
  svg += "<text transform='translate(" + number(x0 + 16) + " " + number((top + bottom) / 2) +
         ") rotate(-90)' text-anchor='middle'>GFLOP/s (2MNK / time)</text>\n";

  // The two limits measured in the run.
  if (std::isfinite(bw)) {
    std::string points;
    for (int i = 0; i <= 60; ++i) {
      const double m = std::pow(2, ax.log_m0 + (ax.log_m1 - ax.log_m0) * i / 60);
      points += number(ax.px(m)) + "," + number(ax.py(bandwidth_limit(m))) + " ";
    }
    svg += "<polyline points='" + points +
           "' fill='none' stroke='#d62728' stroke-dasharray='6 4' stroke-width='1.5'/>\n";
  }
  if (std::isfinite(peak))
    svg += "<line x1='" + number(left) + "' y1='" + number(ax.py(peak)) + "' x2='" + number(right) +
           "' y2='" + number(ax.py(peak)) +
           "' stroke='#000' stroke-dasharray='2 3' stroke-width='1.5'/>\n";

  std::set<std::string> groups;
  for (const CaseResult* r : cases) {
    svg += "<circle cx='" + number(ax.px(static_cast<double>(r->m))) + "' cy='" +
           number(ax.py(r->gflops)) + "' r='3' fill='" + color_of(r->grouped ? r->group : -1) +
           "' fill-opacity='0.75'><title>" + std::to_string(r->n) + "x" + std::to_string(r->k) +
           " " + group_label(*r) + " M " + std::to_string(r->m) + ": " + number(r->gflops) +
           " GFLOP/s, roofline " + number(100 * r->roofline_ratio) + " %</title></circle>\n";
    groups.insert(group_label(*r));
  }

  // Legend below the axes.
  double ly = bottom + 52, lx = left;
  const auto legend = [&](const std::string& mark, const std::string& text) {
    svg += mark;
    svg += "<text x='" + number(lx + 22) + "' y='" + number(ly + 4) + "' font-size='11'>" + text +
           "</text>\n";
    lx += 200;
    if (lx > right - 150) {
      lx = left;
      ly += 16;
    }
  };
  if (std::isfinite(bw))
    legend("<line x1='" + number(lx) + "' y1='" + number(ly) + "' x2='" + number(lx + 16) +
               "' y2='" + number(ly) + "' stroke='#d62728' stroke-dasharray='6 4'/>",
           "read " + number(bw) + " GB/s x intensity");
  if (std::isfinite(peak))
    legend("<line x1='" + number(lx) + "' y1='" + number(ly) + "' x2='" + number(lx + 16) +
               "' y2='" + number(ly) + "' stroke='#000' stroke-dasharray='2 3'/>",
           std::string(kind == "w4a8" ? "int8 peak " : "FMA peak ") + number(peak) + " G/s");
  for (const CaseResult* r : cases) {
    const std::string label = group_label(*r);
    if (groups.erase(label) == 0) continue;
    legend("<circle cx='" + number(lx + 8) + "' cy='" + number(ly) + "' r='3' fill='" +
               color_of(r->grouped ? r->group : -1) + "'/>",
           label);
  }
}

}  // namespace

void write_roofline_svg(const std::string& path, const std::vector<CaseResult>& results) {
  if (results.empty()) throw Error("--plot " + path + ": no cases to draw");
  std::string kind = results.front().kind;
  for (const CaseResult& r : results)
    if (r.kind == "w4a8") kind = "w4a8";
  std::map<int, std::vector<const CaseResult*>> by_threads;
  for (const CaseResult& r : results)
    if (r.kind == kind && r.gflops > 0) by_threads[r.threads].push_back(&r);

  const double width = kPanelWidth * static_cast<double>(by_threads.size());
  std::string svg =
      "<?xml version='1.0' encoding='UTF-8'?>\n<svg xmlns='http://www.w3.org/2000/svg' width='" +
      number(width) + "' height='" + number(kPanelHeight) +
      "' font-family='sans-serif' font-size='12'>\n<rect width='100%' height='100%' "
      "fill='white'/>\n";
  double x0 = 0;
  for (const auto& [threads, cases] : by_threads) {
    panel(svg, cases, kind, threads, x0);
    x0 += kPanelWidth;
  }
  svg += "</svg>\n";

  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) throw Error("--plot " + path + ": cannot open the file for writing");
  const bool ok = std::fwrite(svg.data(), 1, svg.size(), f) == svg.size();
  if (std::fclose(f) != 0 || !ok) throw Error("--plot " + path + ": writing the file failed");
}

}  // namespace dq4::cli::bench
