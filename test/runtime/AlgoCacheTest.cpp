//===- AlgoCacheTest.cpp - the cuDNN choices file (--cudnn-cache) ---------===//
//
// The file is untrusted input: a round trip keeps every choice; a file of
// another identity, a malformed one, one that is not ours, a symlink or an
// oversized file is not used, and one that is not ours is not replaced.
//
//===----------------------------------------------------------------------===//

#include "common/AlgoCache.h"
#include "common/FileIO.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace {

using trainc::rt::AlgoCache;
using trainc::rt::AlgoChoice;

std::string tempDir() {
  std::string dir = (std::filesystem::temp_directory_path() /
                     ("trainc-algo-cache-" + std::to_string(getpid())))
                        .string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void writeText(const std::string &path, const std::string &text) {
  std::ofstream(path, std::ios::binary) << text;
}

TEST(AlgoCacheTest, RoundTripAndIdentity) {
  std::string dir = tempDir(), path = dir + "/prog.cudnn-cache";
  std::string fwd = AlgoCache::keyOf("fwd", {32, 3, 224, 224, 64, 7, 7});
  std::string data = AlgoCache::keyOf("data", {32, 64, 56, 56});
  {
    AlgoCache cache("H200 sm_90 cudnn 90100 deterministic 0 program abc");
    std::string note;
    cache.load(path, note); // absent: empty, no note
    EXPECT_EQ(note, "");
    EXPECT_EQ(cache.size(), 0u);
    EXPECT_FALSE(cache.changed());
    cache.insert(fwd, {1, 1});
    cache.insert(data, {4, 2});
    EXPECT_TRUE(cache.changed());
    ASSERT_TRUE(cache.save(path).ok());
    EXPECT_FALSE(cache.changed());
  }
  {
    AlgoCache cache("H200 sm_90 cudnn 90100 deterministic 0 program abc");
    std::string note;
    cache.load(path, note);
    EXPECT_EQ(note, "");
    ASSERT_EQ(cache.size(), 2u);
    const AlgoChoice *f = cache.find(fwd);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->algo, 1);
    EXPECT_EQ(f->mathType, 1);
    EXPECT_EQ(cache.find(data)->algo, 4);
    EXPECT_EQ(cache.find(AlgoCache::keyOf("filter", {32, 64, 56, 56})), nullptr);
    // The same choice again changes nothing.
    cache.insert(fwd, {1, 1});
    EXPECT_FALSE(cache.changed());
  }
  {
    // Another device (or cuDNN, program, --deterministic): not used, and
    // replaced at save.
    AlgoCache cache("A100 sm_80 cudnn 90100 deterministic 0 program abc");
    std::string note;
    cache.load(path, note);
    EXPECT_NE(note.find("another device"), std::string::npos) << note;
    EXPECT_EQ(cache.size(), 0u);
    cache.insert(fwd, {0, 1});
    ASSERT_TRUE(cache.save(path).ok());
    EXPECT_NE(readAll(path).find("identity A100"), std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

TEST(AlgoCacheTest, MalformedFilesAreNotUsed) {
  std::string dir = tempDir(), path = dir + "/c";
  const std::string id = "dev sm_90 cudnn 1 deterministic 0 program p";
  const std::string head = "trainc cudnn-cache 1\nidentity " + id + "\n";
  const char *bad[] = {
      "fwd 1,2,3 1\n",            // a field missing
      "fwd 1,2,3 1 1 1\n",        // one too many
      "conv 1,2,3 1 1\n",         // an unknown direction
      "fwd 1,-2,3 1 1\n",         // a sign
      "fwd 1,,3 1 1\n",           // an empty value
      "fwd 1,2,3 64 1\n",         // beyond cuDNN's algorithms
      "fwd 1,2,3 1 16\n",         // beyond its math types
      "fwd 1,2,3 1 1",            // no final newline
      "fwd 1,2,3 99999999999999999999 1\n", // too long a number
      "fwd 1,2,3  1 1\n",         // two spaces
  };
  for (const char *line : bad) {
    writeText(path, head + "data 4,5 2 1\n" + line);
    AlgoCache cache(id);
    std::string note;
    cache.load(path, note);
    EXPECT_FALSE(note.empty()) << line;
    EXPECT_EQ(cache.size(), 0u) << line;
    // Ours, only damaged: replaced by this run's choices.
    cache.insert(AlgoCache::keyOf("fwd", {1}), {0, 0});
    EXPECT_TRUE(cache.save(path).ok()) << line;
  }
  // More than 32 key values.
  std::string many = "fwd ";
  for (int i = 0; i < 33; ++i)
    many += (i ? "," : "") + std::to_string(i);
  writeText(path, head + many + " 1 1\n");
  AlgoCache cache(id);
  std::string note;
  cache.load(path, note);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_FALSE(note.empty());
  std::filesystem::remove_all(dir);
}

TEST(AlgoCacheTest, ForeignFilesAreLeftAlone) {
  std::string dir = tempDir();
  const std::string id = "dev sm_90 cudnn 1 deterministic 0 program p";
  // Someone else's file at that path: not used, not replaced.
  std::string other = dir + "/notes.txt";
  writeText(other, "my notes\n");
  {
    AlgoCache cache(id);
    std::string note;
    cache.load(other, note);
    EXPECT_NE(note.find("not a trainc cuDNN cache file"), std::string::npos) << note;
    cache.insert(AlgoCache::keyOf("fwd", {1}), {0, 0});
    EXPECT_FALSE(cache.save(other).ok());
    EXPECT_EQ(readAll(other), "my notes\n");
  }
  // A symlink (to a cache file, even): refused.
  std::string real = dir + "/real", link = dir + "/link";
  writeText(real, "trainc cudnn-cache 1\nidentity " + id + "\n");
  ASSERT_EQ(symlink(real.c_str(), link.c_str()), 0);
  {
    AlgoCache cache(id);
    std::string note;
    cache.load(link, note);
    EXPECT_FALSE(note.empty());
    cache.insert(AlgoCache::keyOf("fwd", {1}), {0, 0});
    EXPECT_FALSE(cache.save(link).ok());
    EXPECT_TRUE(std::filesystem::is_symlink(link));
  }
  // A folder, and a file over 1 MiB.
  std::string folder = dir + "/folder";
  std::filesystem::create_directories(folder);
  std::string big = dir + "/big";
  writeText(big, "trainc cudnn-cache 1\nidentity " + id + "\n" +
                     std::string(AlgoCache::kMaxBytes, '#') + "\n");
  for (const std::string &path : {folder, big}) {
    AlgoCache cache(id);
    std::string note;
    cache.load(path, note);
    EXPECT_FALSE(note.empty()) << path;
    EXPECT_EQ(cache.size(), 0u) << path;
    cache.insert(AlgoCache::keyOf("fwd", {1}), {0, 0});
    EXPECT_FALSE(cache.save(path).ok()) << path;
  }
  std::filesystem::remove_all(dir);
}

TEST(AlgoCacheTest, IdentityIsOneLine) {
  AlgoCache cache("dev\nfwd 1 0 0");
  EXPECT_EQ(cache.text(), "trainc cudnn-cache 1\nidentity dev fwd 1 0 0\n");
}

} // namespace
