#ifndef TAILSWEEP_COORDINATOR_DOWNSAMPLE_H_
#define TAILSWEEP_COORDINATOR_DOWNSAMPLE_H_

// Curves for a screen: one metric's points cut to a budget while keeping
// what a reader looks for (a spike, the collapse, the diverged step). The
// first and last point are kept; the points between are cut into buckets of
// consecutive steps, and each bucket keeps its lowest and highest value (a
// non-finite value in place of the lowest), in step order. Used by GetMetrics'
// max_points (proto/tailsweep.proto).

#include <vector>

#include "coordinator/store.h"

namespace tailsweep {

// `points`: one metric, in step order. Returns them unchanged when there are
// at most `max_points` (>= 2), else at most `max_points` of them.
std::vector<MetricPoint> DownsampleMinMax(std::vector<MetricPoint> points,
                                          int max_points);

}  // namespace tailsweep

#endif  // TAILSWEEP_COORDINATOR_DOWNSAMPLE_H_
