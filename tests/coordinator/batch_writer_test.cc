#include "coordinator/batch_writer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "tests/testing/run_command.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/wait.h"

namespace tailsweep::sql {
namespace {

class BatchWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("tailsweep_batch_");
    auto db = Db::Open(dir_ + "/t.db");
    ASSERT_TRUE(db.ok()) << db.status();
    TS_ASSERT_OK((*db)->Exec("CREATE TABLE t (k INTEGER PRIMARY KEY)"));
    writer_ = std::make_unique<BatchWriter>(std::move(*db), &clock_);
  }
  void TearDown() override {
    writer_.reset();
    std::filesystem::remove_all(dir_);
  }
  static absl::Status Insert(Db& db, int64_t k) {
    absl::StatusOr<Statement> st = db.Prepare("INSERT INTO t (k) VALUES (?)");
    if (!st.ok()) return st.status();
    return st->Bind(1, k).Run();
  }
  int64_t Rows() {
    auto db = Db::Open(dir_ + "/t.db");
    auto st = (*db)->Prepare("SELECT COUNT(*) FROM t");
    EXPECT_TRUE(st->Step().value());
    return st->Int(0);
  }

  ManualClock clock_;
  std::string dir_;
  std::unique_ptr<BatchWriter> writer_;
};

TEST_F(BatchWriterTest, MutationsThatWaitShareOneTransactionAndFailAlone) {
  // Hold the writer inside a first mutation while eight others queue up.
  absl::Notification entered, release;
  std::thread first([&] {
    TS_EXPECT_OK(writer_->Run([&](Db& db) {
      entered.Notify();
      release.WaitForNotification();
      return Insert(db, 1);
    }));
  });
  entered.WaitForNotification();
  std::vector<std::thread> others;
  std::atomic<int> failed{0};
  for (int i = 0; i < 8; ++i) {
    others.emplace_back([&, i] {
      // Key 5 twice: one of the two breaks the primary key and fails alone.
      const int64_t key = i == 7 ? 5 : 2 + i;
      const absl::Status s = writer_->Run([&](Db& db) -> absl::Status {
        if (absl::Status s = Insert(db, 100 + i); !s.ok()) return s;
        return Insert(db, key);
      });
      if (!s.ok()) ++failed;
    });
  }
  // All eight queued behind it (not ASSERT: the threads must be joined).
  EXPECT_TRUE(testing::WaitUntil([&] { return writer_->waiting() >= 8; },
                                 testing::EventDeadline(),
                                 std::chrono::milliseconds(5)))
      << writer_->waiting() << " waiting";
  release.Notify();
  first.join();
  for (std::thread& t : others) t.join();
  EXPECT_EQ(failed.load(), 1);
  // 1 + 7 keys + 7 of the 100+i rows: the failed mutation left nothing.
  EXPECT_EQ(Rows(), 15);
  EXPECT_EQ(writer_->transactions(), 2);
}

TEST_F(BatchWriterTest, AnOkAnswerIsCommittedAndVisibleToOtherConnections) {
  TS_ASSERT_OK(writer_->Run([](Db& db) { return Insert(db, 7); }));
  EXPECT_EQ(Rows(), 1);
  TS_EXPECT_CODE(writer_->Run([](Db& db) { return Insert(db, 7); }),
                 absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Rows(), 1);
}

}  // namespace
}  // namespace tailsweep::sql
