#include "worker/metrics_relay.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace tailsweep {
namespace {

// At most this much of the file is read per Fill; the rest waits.
constexpr int64_t kMaxReadBytes = 16 << 20;

}  // namespace

MetricsRelay::MetricsRelay(JobFiles* files, std::string path, std::string tag,
                           int max_batch_points, int max_unacked_batches,
                           bool generic)
    : files_(files),
      path_(std::move(path)),
      tag_(std::move(tag)),
      max_batch_points_(max_batch_points),
      max_unacked_batches_(max_unacked_batches),
      generic_(generic) {}

void MetricsRelay::Skipped(int64_t at, absl::string_view why) {
  ++skipped_;
  if (skipped_ <= kLoggedSkips) {
    spdlog::warn("{}: skipped a line of {} at byte {}: {}", tag_, path_, at,
                 std::string(why));
  } else if ((skipped_ & (skipped_ - 1)) == 0) {  // 8, 16, 32, ...
    spdlog::warn("{}: {} lines of {} skipped so far", tag_, skipped_, path_);
  }
}

void MetricsRelay::Seal(std::vector<MetricPoint>* points) {
  if (points->empty()) return;
  unacked_.push_back({next_seq_++, std::move(*points)});
  points->clear();
}

void MetricsRelay::AddBatch(std::vector<MetricPoint> points) { Seal(&points); }

void MetricsRelay::Fill() {
  FileChunk chunk = files_->ReadFrom(path_, offset_, kMaxReadBytes);
  if (!chunk.exists) {
    read_to_end_ = true;  // nothing logged yet
    return;
  }
  if (chunk.inode != inode_ || chunk.size < offset_) {
    if (offset_ > 0) {
      spdlog::info("{}: {} was rewritten; relaying it again from the start",
                   tag_, path_);
    }
    inode_ = chunk.inode;
    in_long_line_ = false;
    offset_ = 0;
    chunk = files_->ReadFrom(path_, 0, kMaxReadBytes);
  }
  const absl::string_view text = chunk.bytes;
  std::vector<MetricPoint> batch;
  size_t pos = 0;
  while (static_cast<int>(unacked_.size()) < max_unacked_batches_) {
    const size_t end = text.find('\n', pos);
    if (end == absl::string_view::npos) {
      // The end, or a partial line; a partial line already too long is
      // dropped as it comes (it could fill every read).
      const int64_t partial = static_cast<int64_t>(text.size() - pos);
      if (partial > kMaxLineBytes || (in_long_line_ && partial > 0)) {
        if (!in_long_line_) {
          Skipped(offset_ + static_cast<int64_t>(pos),
                  absl::StrCat("a line longer than ", kMaxLineBytes, " bytes"));
        }
        in_long_line_ = true;
        pos = text.size();
      }
      break;
    }
    const absl::string_view line = text.substr(pos, end - pos);
    if (in_long_line_) {  // the rest of a line already skipped
      in_long_line_ = false;
      pos = end + 1;
      continue;
    }
    if (line.empty()) {
      pos = end + 1;
      continue;
    }
    if (static_cast<int64_t>(line.size()) > kMaxLineBytes) {
      Skipped(offset_ + static_cast<int64_t>(pos),
              absl::StrCat("a line longer than ", kMaxLineBytes, " bytes"));
      pos = end + 1;
      continue;
    }
    std::vector<MetricPoint> points;
    if (generic_) {
      absl::StatusOr<FlatLine> flat = FlattenMetricsLine(line);
      if (flat.ok()) points = std::move(flat->points);
      if (!flat.ok()) {
        Skipped(offset_ + static_cast<int64_t>(pos), flat.status().message());
        pos = end + 1;
        continue;
      }
    } else {
      absl::StatusOr<StepMetrics> metrics = ParseMetricsLine(line);
      if (!metrics.ok()) {
        Skipped(offset_ + static_cast<int64_t>(pos),
                metrics.status().message());
        pos = end + 1;
        continue;
      }
      points = StepPoints(*metrics);
    }
    if (!batch.empty() &&
        static_cast<int>(batch.size() + points.size()) > max_batch_points_) {
      Seal(&batch);
      if (static_cast<int>(unacked_.size()) >= max_unacked_batches_) break;
    }
    for (const auto& watch : watches_) {
      for (const MetricPoint& p : points) watch(p);
    }
    for (MetricPoint& p : points) batch.push_back(std::move(p));
    pos = end + 1;
  }
  offset_ += static_cast<int64_t>(pos);
  Seal(&batch);
  read_to_end_ =
      text.find('\n', pos) == absl::string_view::npos &&
      offset_ + static_cast<int64_t>(text.size() - pos) >= chunk.size;
}

bool MetricsRelay::SplitFront() {
  MetricsBatch& front = unacked_.front();
  if (front.points.size() < 2) return false;
  const auto half = front.points.begin() +
                    static_cast<std::ptrdiff_t>(front.points.size() / 2);
  MetricsBatch second{
      front.seq,
      std::vector<MetricPoint>(std::make_move_iterator(half),
                               std::make_move_iterator(front.points.end()))};
  front.points.erase(half, front.points.end());
  unacked_.insert(unacked_.begin() + 1, std::move(second));
  return true;
}

}  // namespace tailsweep
