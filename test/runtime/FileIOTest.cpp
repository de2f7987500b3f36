//===- FileIOTest.cpp - opening, reading and replacing user-named files ---===//
//
// FIFOs, devices, symlinks and folders are refused without blocking; reads
// report truncation; AtomicFile replaces its target only on commit, leaves
// no temporary file behind, and a write error (EFBIG under a file-size
// limit) leaves the target as it was.
//
//===----------------------------------------------------------------------===//

#include "common/FileIO.h"
#include "TestUtil.h"

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

namespace trainc::test {
namespace {

using rt::AtomicFile;
using rt::FileHandle;

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

/// The names in a folder, to check that no temporary file is left.
std::vector<std::string> listFolder(const std::string &dir) {
  std::vector<std::string> names;
  for (const auto &entry : std::filesystem::directory_iterator(dir))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

class FileIOTest : public ::testing::Test {
protected:
  // A regression that blocks on a FIFO fails the test instead of hanging it.
  void SetUp() override { ::alarm(60); }
  void TearDown() override { ::alarm(0); }

  TempDir dir;
};

TEST_F(FileIOTest, OpenRegularFileRefusesWhatIsNotOneWithoutBlocking) {
  writeFile(dir / "a", "hello");
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  ASSERT_EQ(::symlink("/dev/zero", (dir / "zero").c_str()), 0);
  ASSERT_EQ(::symlink("a", (dir / "link").c_str()), 0);
  FileHandle file;
  uint64_t size = 0;
  EXPECT_OK(rt::openRegularFile(dir / "a", "--data", file, size));
  EXPECT_TRUE(file.valid());
  EXPECT_EQ(size, 5u);
  EXPECT_OK(rt::openRegularFile(dir / "link", "--data", file, size)); // followed
  EXPECT_ERROR(rt::openRegularFile(dir / "fifo", "--data", file, size),
               "--data: " + dir / "fifo" + " is a FIFO, not a regular file");
  EXPECT_ERROR(rt::openRegularFile(dir / "zero", "--params", file, size),
               "is a character device");
  EXPECT_ERROR(rt::openRegularFile(dir, "--data", file, size), "is a folder");
  EXPECT_ERROR(rt::openRegularFile(dir / "none", "--data", file, size),
               "--data: cannot open " + dir / "none" + ": No such file");
  EXPECT_ERROR(rt::openRegularFile(dir / "a", "--data", file, size, 4),
               "is 5 bytes, more than the 4 bytes it can be");
  // An empty `what` leaves the prefix out.
  EXPECT_ERROR(rt::openRegularFile(dir / "none", "", file, size), "cannot open " + dir / "none");
  std::string bytes;
  EXPECT_ERROR(rt::readRegularFile(dir / "fifo", "manifest", 100, bytes), "is a FIFO");
  EXPECT_OK(rt::readRegularFile(dir / "a", "manifest", 100, bytes));
  EXPECT_EQ(bytes, "hello");
}

TEST_F(FileIOTest, ReadAtReportsTruncation) {
  writeFile(dir / "a", std::string(1000, 'x'));
  FileHandle file;
  uint64_t size = 0;
  EXPECT_OK(rt::openRegularFile(dir / "a", "data", file, size));
  ASSERT_EQ(::truncate((dir / "a").c_str(), 600), 0);
  char buffer[200];
  EXPECT_OK(rt::readAt(file, dir / "a", 400, buffer, 200));
  EXPECT_ERROR(rt::readAt(file, dir / "a", 500, buffer, 200),
               dir / "a" + " was truncated while it was read (byte 600 is missing)");
}

TEST_F(FileIOTest, CheckReplaceableAndAppend) {
  writeFile(dir / "a", "old");
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  ASSERT_EQ(::symlink("/dev/null", (dir / "null").c_str()), 0);
  EXPECT_OK(rt::checkReplaceable(dir / "a", "--out"));
  EXPECT_OK(rt::checkReplaceable(dir / "new", "--out"));
  EXPECT_ERROR(rt::checkReplaceable(dir / "fifo", "--out"), "exists and is a FIFO");
  EXPECT_ERROR(rt::checkReplaceable(dir / "null", "--out"), "exists and is a symbolic link");
  EXPECT_ERROR(rt::checkReplaceable(dir.path(), "--out"), "exists and is a folder");
  EXPECT_ERROR(rt::checkReplaceable(dir / "a/b", "--out"), "cannot check");
  FileHandle log;
  EXPECT_ERROR(rt::openAppendFile(dir / "fifo", "--log", log), "is a FIFO");
  EXPECT_ERROR(rt::openAppendFile(dir / "null", "--log", log), "is a symbolic link");
  EXPECT_OK(rt::openAppendFile(dir / "a", "--log", log));
  EXPECT_OK(rt::writeAll(log, dir / "a", " new", 4));
  EXPECT_OK(log.close(dir / "a"));
  EXPECT_EQ(readFile(dir / "a"), "old new");
}

TEST_F(FileIOTest, AtomicFileReplacesOnlyOnCommit) {
  writeFile(dir / "out", "old");
  {
    AtomicFile file;
    EXPECT_OK(file.open(dir / "out", "--out"));
    EXPECT_TRUE(file.isOpen());
    EXPECT_OK(file.write("new contents", 12));
    EXPECT_EQ(readFile(dir / "out"), "old");
  } // destroyed uncommitted
  EXPECT_EQ(readFile(dir / "out"), "old");
  EXPECT_EQ(listFolder(dir), (std::vector<std::string>{"out"}));
  {
    AtomicFile file;
    EXPECT_OK(file.open(dir / "out", "--out"));
    EXPECT_OK(file.write("new", 3));
    file.abandon();
    EXPECT_FALSE(file.isOpen());
    EXPECT_ERROR(file.commit(), "not open for writing");
  }
  EXPECT_EQ(listFolder(dir), (std::vector<std::string>{"out"}));
  AtomicFile file;
  EXPECT_OK(file.open(dir / "out", "--out"));
  EXPECT_OK(file.write("new", 3));
  AtomicFile moved = std::move(file);
  EXPECT_OK(moved.write("er", 2));
  EXPECT_OK(moved.commit());
  EXPECT_EQ(readFile(dir / "out"), "newer");
  EXPECT_EQ(listFolder(dir), (std::vector<std::string>{"out"}));
  EXPECT_OK(rt::writeFileAtomically(dir / "second", "--export", "x", 1));
  EXPECT_EQ(readFile(dir / "second"), "x");
}

TEST_F(FileIOTest, AtomicFileRefusesTargetsThatAreNotRegularFiles) {
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  ASSERT_EQ(::symlink("/dev/null", (dir / "null").c_str()), 0);
  AtomicFile file;
  EXPECT_ERROR(file.open(dir / "fifo", "--out"),
               "--out: " + dir / "fifo" + " exists and is a FIFO");
  EXPECT_ERROR(file.open(dir / "null", "--out"), "is a symbolic link");
  EXPECT_ERROR(file.open(dir / "missing/x", "--out"), "cannot create a temporary file");
  // Replaced by a FIFO between open() and commit(): refused at commit.
  EXPECT_OK(file.open(dir / "late", "--out"));
  ASSERT_EQ(::mkfifo((dir / "late").c_str(), 0600), 0);
  EXPECT_ERROR(file.commit(), "exists and is a FIFO");
  EXPECT_TRUE(std::filesystem::is_fifo(dir / "late"));
  EXPECT_TRUE(std::filesystem::is_symlink(dir / "null"));
  EXPECT_EQ(listFolder(dir), (std::vector<std::string>{"fifo", "late", "null"}));
}

/// Sets a soft file-size limit with SIGXFSZ ignored (so that a write past it
/// fails with EFBIG), and restores both.
class FileSizeLimit {
public:
  explicit FileSizeLimit(rlim_t bytes) {
    EXPECT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
    previous = std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit = saved;
    limit.rlim_cur = bytes;
    EXPECT_EQ(::setrlimit(RLIMIT_FSIZE, &limit), 0);
  }
  ~FileSizeLimit() {
    (void)::setrlimit(RLIMIT_FSIZE, &saved);
    std::signal(SIGXFSZ, previous);
  }

private:
  struct rlimit saved;
  void (*previous)(int);
};

TEST_F(FileIOTest, WriteErrorLeavesTheTargetAndNoTemporaryFile) {
  writeFile(dir / "out", "old");
  const std::string big(64 * 1024, 'z');
  AtomicFile file;
  EXPECT_OK(file.open(dir / "out", "--save-params"));
  {
    FileSizeLimit limit(16 * 1024);
    EXPECT_ERROR(file.write(big.data(), big.size()),
                 "--save-params: cannot write " + dir / "out" + ": File too large (" +
                     dir / "out" + " is unchanged)");
  }
  EXPECT_FALSE(file.isOpen());
  EXPECT_ERROR(file.commit(), "not open for writing");
  EXPECT_EQ(readFile(dir / "out"), "old");
  EXPECT_EQ(listFolder(dir), (std::vector<std::string>{"out"}));
  {
    FileSizeLimit limit(16 * 1024);
    EXPECT_ERROR(rt::writeFileAtomically(dir / "other", "--export", big.data(), big.size()),
                 "File too large");
  }
  EXPECT_EQ(listFolder(dir), (std::vector<std::string>{"out"}));
}

TEST_F(FileIOTest, AtomicFileHonoursTheUmask) {
  mode_t old = ::umask(027);
  EXPECT_OK(rt::writeFileAtomically(dir / "private", "--out", "x", 1));
  ::umask(022);
  EXPECT_OK(rt::writeFileAtomically(dir / "shared", "--out", "x", 1));
  ::umask(old);
  struct stat info;
  ASSERT_EQ(::stat((dir / "private").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0640u);
  ASSERT_EQ(::stat((dir / "shared").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0644u);
}

TEST_F(FileIOTest, AtomicFileKeepsTheModeOfWhatItReplaces) {
  writeFile(dir / "secret", "old");
  ASSERT_EQ(::chmod((dir / "secret").c_str(), 0600), 0);
  EXPECT_OK(rt::writeFileAtomically(dir / "secret", "--export", "new", 3));
  struct stat info;
  ASSERT_EQ(::stat((dir / "secret").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  EXPECT_EQ(readFile(dir / "secret"), "new");
}

// The temporary name does not grow with the target's: a 255-byte file name
// (the limit of most file systems) can still be replaced.
TEST_F(FileIOTest, AtomicFileTakesTargetsOfTheLongestName) {
  std::string name(251, 'p');
  name += ".npy";
  EXPECT_OK(rt::writeFileAtomically(dir / name, "--save-params", "x", 1));
  EXPECT_EQ(listFolder(dir), (std::vector<std::string>{name}));
}

TEST_F(FileIOTest, StaleTemporariesAreRemoved) {
  writeFile(dir / ".trainc-tmp-Ab12Cd", "left by a kill");
  writeFile(dir / ".trainc-tmp-toolong", "not ours");
  writeFile(dir / "checkpoint.json", "{}");
  ASSERT_EQ(::mkfifo((dir / ".trainc-tmp-fifo00").c_str(), 0600), 0);
  EXPECT_OK(rt::removeStaleTemporaries(dir));
  EXPECT_EQ(listFolder(dir), (std::vector<std::string>{".trainc-tmp-fifo00",
                                                       ".trainc-tmp-toolong",
                                                       "checkpoint.json"}));
}

// The helper every runtime test uses for its files removes them.
TEST(TempDir, IsRemovedWithWhatItHolds) {
  std::string path;
  {
    TempDir dir;
    path = dir.path();
    EXPECT_NE(path.find("trainc-rt-"), std::string::npos);
    std::filesystem::create_directories(dir / "a/b");
    writeFile(dir / "a/b/c", "x");
    EXPECT_TRUE(std::filesystem::exists(dir / "a/b/c"));
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

} // namespace
} // namespace trainc::test
