// Checkpoint bundles are plain tar: `tar` opens what PackCheckpointDir
// writes, UnpackCheckpointBundle opens what `tar` writes, and no entry can
// land outside the destination.

#include "core/schema/checkpoint_bundle.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/schema/file_util.h"

namespace tailsweep {
namespace {

namespace fs = std::filesystem;

class CheckpointBundleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ =
        fs::path(::testing::TempDir()) /
        absl::StrCat(
            "bundle_",
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void Write(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
  }
  std::string Read(const fs::path& p) {
    absl::StatusOr<std::string> s = ReadFile(p.string());
    return s.ok() ? *s : "<missing>";
  }
  int Shell(const std::string& command) {
    return std::system(absl::StrCat("cd '", root_.string(), "' && ", command,
                                    " >/dev/null 2>&1")
                           .c_str());
  }
  // A checkpoint directory with nested, empty, binary and long-named files.
  fs::path MakeCheckpoint() {
    const fs::path dir = root_ / "src" / "step-40";
    Write(dir / "model.bin", std::string("\0\1\2\xff weights", 12));
    Write(dir / "opt" / "state.txt", "adam\n");
    Write(dir / "empty", "");
    Write(dir / std::string(120, 'd') / std::string(90, 'f'), "deep");
    Write(dir / std::string(150, 'e') / std::string(120, 'g'), "pax");
    Write(dir / kCheckpointCompleteMarker, "");
    fs::create_directories(dir / "no_files");
    ::chmod((dir / "opt" / "state.txt").c_str(), 0600);
    return dir;
  }
  fs::path root_;
};

TEST_F(CheckpointBundleTest, TarExtractsWhatIsPackedAndBack) {
  const fs::path dir = MakeCheckpoint();
  const fs::path bundle = root_ / "step-00000040.pt";
  ASSERT_TRUE(PackCheckpointDir(dir.string(), bundle.string()).ok());
  EXPECT_TRUE(IsCheckpointBundle(bundle.string()));
  fs::create_directories(root_ / "by_tar");
  ASSERT_EQ(Shell("tar -xf step-00000040.pt -C by_tar"), 0);
  ASSERT_EQ(Shell("diff -r src/step-40 by_tar/step-40"), 0);
  EXPECT_TRUE(fs::is_directory(root_ / "by_tar/step-40/no_files"));

  absl::StatusOr<std::string> top =
      UnpackCheckpointBundle(bundle.string(), (root_ / "ours").string());
  ASSERT_TRUE(top.ok()) << top.status();
  EXPECT_EQ(*top, "step-40");
  ASSERT_EQ(Shell("diff -r src/step-40 ours/step-40"), 0);
  struct stat st;
  ASSERT_EQ(::stat((root_ / "ours/step-40/opt/state.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  // What GNU tar writes (its own long-name and directory conventions).
  ASSERT_EQ(Shell("cd src && tar --format=pax -cf ../by_gnu.tar step-40"), 0);
  top = UnpackCheckpointBundle((root_ / "by_gnu.tar").string(),
                               (root_ / "gnu").string());
  ASSERT_TRUE(top.ok()) << top.status();
  ASSERT_EQ(Shell("diff -r src/step-40 gnu/step-40"), 0);
}

// A copy of the tar `bytes` whose entry at `offset` is named `name`, with
// its header checksum made right again (what a hostile bundle would be).
std::string Renamed(std::string bytes, size_t offset, const std::string& name) {
  char* h = &bytes[offset];
  std::fill(h, h + 100, '\0');
  std::copy(name.begin(), name.end(), h);
  std::fill(h + 148, h + 156, ' ');
  unsigned sum = 0;
  for (int i = 0; i < 512; ++i) sum += static_cast<unsigned char>(h[i]);
  std::snprintf(h + 148, 8, "%06o", sum);
  return bytes;
}

TEST_F(CheckpointBundleTest, RefusesEntriesOutsideTheDestination) {
  Write(root_ / "a" / "step-1" / "x", "x");
  Write(root_ / "evil", "evil");
  ASSERT_EQ(Shell("cd a && tar -cf ../plain.tar step-1/x"), 0);
  const std::string plain = Read(root_ / "plain.tar");
  Write(root_ / "dotdot.tar", Renamed(plain, 0, "step-1/../../evil"));
  Write(root_ / "absolute.tar", Renamed(plain, 0, "/tmp/ts-step-1/x"));
  ASSERT_EQ(Shell("tar -cf two_tops.tar a evil"), 0);
  ASSERT_EQ(Shell("ln -s /etc a/step-1/link"), 0);
  ASSERT_EQ(Shell("cd a && tar -cf ../link.tar step-1"), 0);
  struct Case {
    const char* name;
    const char* says;
  };
  const Case cases[] = {
      {"dotdot", "'..'"},
      {"absolute", "absolute"},
      {"link", "link"},
      {"two_tops", "more than one"},
  };
  for (const Case& c : cases) {
    const fs::path dest = root_ / "out" / c.name;
    absl::StatusOr<std::string> top = UnpackCheckpointBundle(
        (root_ / absl::StrCat(c.name, ".tar")).string(), dest.string());
    EXPECT_FALSE(top.ok()) << c.name;
    EXPECT_EQ(top.status().code(), absl::StatusCode::kInvalidArgument)
        << c.name;
    EXPECT_NE(top.status().message().find(c.says), std::string::npos)
        << c.name << ": " << top.status();
    EXPECT_FALSE(fs::exists(root_ / "out" / "evil"));
    EXPECT_FALSE(fs::exists("/tmp/ts-step-1"));
    // Nothing of a refused bundle is left behind.
    EXPECT_TRUE(!fs::exists(dest) || fs::is_empty(dest)) << c.name;
  }
}

TEST_F(CheckpointBundleTest, RefusesDamage) {
  const fs::path dir = MakeCheckpoint();
  const fs::path bundle = root_ / "b.tar";
  ASSERT_TRUE(PackCheckpointDir(dir.string(), bundle.string()).ok());
  std::string bytes = Read(bundle);
  std::string flipped = bytes;
  flipped[10] ^= 1;  // inside the first header's name: its checksum fails
  Write(root_ / "flipped.tar", flipped);
  Write(root_ / "short.tar", bytes.substr(0, 1024 + 5));
  for (const char* name : {"flipped.tar", "short.tar"}) {
    absl::StatusOr<std::string> top = UnpackCheckpointBundle(
        (root_ / name).string(), (root_ / "out").string());
    EXPECT_EQ(top.status().code(), absl::StatusCode::kInvalidArgument) << name;
  }
  EXPECT_FALSE(fs::exists(root_ / "out" / "step-40"));
}

TEST_F(CheckpointBundleTest, ReadsTheFormatBeforeTar) {
  Write(root_ / "old",
        "TAILSWEEP-BUNDLE 1\nF 5 step-3/a.txt\nhelloF 0 step-3/COMPLETE\nE\n");
  EXPECT_TRUE(IsCheckpointBundle((root_ / "old").string()));
  absl::StatusOr<std::string> top =
      UnpackCheckpointBundle((root_ / "old").string(), (root_ / "o").string());
  ASSERT_TRUE(top.ok()) << top.status();
  EXPECT_EQ(Read(root_ / "o/step-3/a.txt"), "hello");
  EXPECT_TRUE(fs::exists(root_ / "o/step-3/COMPLETE"));
}

}  // namespace
}  // namespace tailsweep
