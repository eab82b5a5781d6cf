#include "core/schema/file_util.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/testing/status_matchers.h"

namespace tailsweep {
namespace {

class FileUtilTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/file_util_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  std::string dir_;
};

// FIPS 180-4 / NIST example vectors.
TEST(Sha256, KnownVectors) {
  EXPECT_EQ(Sha256Hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(
      Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// OpenSSL's and the portable code give the same digests, part by part.
TEST(Sha256, TheImplementationsAgree) {
  std::string data;
  for (int i = 0; i < 5000; ++i) data.push_back(static_cast<char>(i * 7));
  for (size_t cut : {0, 1, 63, 64, 65, 1000, 4999}) {
    Sha256 fast;
    PortableSha256 portable;
    for (absl::string_view part : {absl::string_view(data).substr(0, cut),
                                   absl::string_view(data).substr(cut)}) {
      fast.Update(part);
      portable.Update(part);
    }
    EXPECT_EQ(fast.Hex(), portable.Hex()) << "cut at " << cut;
  }
  // Which one Sha256 is depends on the build (a torch-only one may lack
  // OpenSSL); sha256_bench says.
  const std::string which = Sha256::Implementation();
  EXPECT_TRUE(which == "openssl" || which == "portable") << which;
}

TEST(Sha256, IncrementalEqualsWhole) {
  std::string data;
  for (int i = 0; i < 1000; ++i) data.push_back(static_cast<char>(i * 7));
  for (size_t cut : {0, 1, 55, 56, 63, 64, 65, 500, 999}) {
    Sha256 sha;
    sha.Update(absl::string_view(data).substr(0, cut));
    sha.Update(absl::string_view(data).substr(cut));
    EXPECT_EQ(sha.Hex(), Sha256Hex(data)) << "cut at " << cut;
  }
}

TEST_F(FileUtilTest, WriteAtomicReplacesAndReadsBack) {
  const std::string path = dir_ + "/a.json";
  TS_ASSERT_OK(WriteFileAtomic(path, "first"));
  TS_ASSERT_OK(WriteFileAtomic(path, "second"));
  TS_ASSERT_OK_AND_ASSIGN(std::string text, ReadFile(path));
  EXPECT_EQ(text, "second");
  // No temporary file is left beside it.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_)) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1);
}

TEST_F(FileUtilTest, WriteIntoMissingDirectoryFailsAndChangesNothing) {
  TS_EXPECT_CODE(WriteFileAtomic(dir_ + "/no/such/dir/f", "x"),
                 absl::StatusCode::kNotFound);
}

TEST_F(FileUtilTest, ReadMissingIsNotFoundAndTailIsEmpty) {
  TS_EXPECT_CODE(ReadFile(dir_ + "/missing"), absl::StatusCode::kNotFound);
  EXPECT_EQ(ReadFileTail(dir_ + "/missing", 10), "");
}

TEST_F(FileUtilTest, TailKeepsTheLastBytes) {
  TS_ASSERT_OK(WriteFileAtomic(dir_ + "/log", "0123456789"));
  EXPECT_EQ(ReadFileTail(dir_ + "/log", 4), "6789");
  EXPECT_EQ(ReadFileTail(dir_ + "/log", 100), "0123456789");
}

TEST_F(FileUtilTest, DigestFileMatchesSha256Hex) {
  TS_ASSERT_OK(WriteFileAtomic(dir_ + "/f", "abc"));
  TS_ASSERT_OK_AND_ASSIGN(FileDigest d, DigestFile(dir_ + "/f"));
  EXPECT_EQ(d.bytes, 3);
  EXPECT_EQ(d.sha256, Sha256Hex("abc"));
}

}  // namespace
}  // namespace tailsweep
