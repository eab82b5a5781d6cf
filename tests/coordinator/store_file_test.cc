// The store's database file as a file: its marks (coordinator/store.h
// kStoreApplicationId, kStoreSchemaVersion).

#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "coordinator/sqlite_db.h"
#include "coordinator/store.h"
#include "tests/coordinator/store_fixture.h"
#include "tests/testing/status_matchers.h"

namespace tailsweep {
namespace {

// The file's marks: a store sets them; a file of another application, or
// of a newer schema, is refused before anything is written to it.
TEST_F(StoreTest, AStoreMarksItsFileAndRefusesForeignOrNewerOnes) {
  const std::string path = dir_ + "/marked.db";
  { TS_ASSERT_OK_AND_ASSIGN(auto store, Store::Open(path, &clock_)); }
  for (const auto& [pragma, value, message] :
       {std::tuple<const char*, int64_t, const char*>{
            "user_version", kStoreSchemaVersion + 1, "newer than this build's"},
        {"application_id", 1234, "not a tailsweep database"}}) {
    TS_ASSERT_OK_AND_ASSIGN(auto db, sql::Db::Open(path));
    {
      TS_ASSERT_OK_AND_ASSIGN(sql::Statement st,
                              db->Prepare(absl::StrCat("PRAGMA ", pragma)));
      ASSERT_TRUE(st.Step().ok());
      EXPECT_EQ(st.Int(0), std::string(pragma) == "user_version"
                               ? kStoreSchemaVersion
                               : kStoreApplicationId);
    }  // the statement goes before its database
    TS_ASSERT_OK(db->Exec(absl::StrCat("PRAGMA ", pragma, " = ", value)));
    db.reset();
    absl::StatusOr<std::unique_ptr<Store>> refused = Store::Open(path, &clock_);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(refused.status().message().find(message), std::string::npos)
        << refused.status().message();
    TS_ASSERT_OK_AND_ASSIGN(db, sql::Db::Open(path));
    TS_ASSERT_OK(db->Exec(absl::StrCat("PRAGMA ", pragma, " = ",
                                       std::string(pragma) == "user_version"
                                           ? kStoreSchemaVersion
                                           : kStoreApplicationId)));
  }
}

}  // namespace
}  // namespace tailsweep
