#include "coordinator/downsample.h"

#include <cmath>
#include <utility>

namespace tailsweep {

std::vector<MetricPoint> DownsampleMinMax(std::vector<MetricPoint> points,
                                          int max_points) {
  const size_t n = points.size();
  if (max_points < 2 || n <= static_cast<size_t>(max_points)) return points;
  const size_t inner = n - 2;
  const size_t buckets = static_cast<size_t>(max_points - 2) / 2;
  std::vector<MetricPoint> out;
  out.reserve(static_cast<size_t>(max_points));
  out.push_back(std::move(points.front()));
  for (size_t b = 0; b < buckets; ++b) {
    const size_t begin = 1 + b * inner / buckets;
    const size_t end = 1 + (b + 1) * inner / buckets;
    if (begin == end) continue;
    size_t low = begin, high = begin;
    bool low_is_odd = !std::isfinite(points[begin].value);
    for (size_t i = begin; i < end; ++i) {
      const double v = points[i].value;
      if (!std::isfinite(v)) {
        if (!low_is_odd) low = i, low_is_odd = true;
        continue;
      }
      if (!low_is_odd && v < points[low].value) low = i;
      if (!std::isfinite(points[high].value) || v > points[high].value) {
        high = i;
      }
    }
    if (low > high) std::swap(low, high);
    out.push_back(points[low]);
    if (high != low) out.push_back(points[high]);
  }
  out.push_back(std::move(points.back()));
  return out;
}

}  // namespace tailsweep
