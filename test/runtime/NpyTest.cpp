//===- NpyTest.cpp - .npy reading and writing -----------------------------===//

#include "common/Npy.h"
#include "TestUtil.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

namespace trainc::test {
namespace {

using rt::DType;
using rt::NpyArray;
using rt::NpyWriter;

void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// A .npy file of format `major`.0 with `dict` as its header (padded to 64
/// bytes as NumPy does) followed by `data`.
std::string npyBytes(int major, std::string dict, const std::string &data) {
  size_t lengthBytes = major == 1 ? 2 : 4;
  size_t prefix = 8 + lengthBytes;
  dict.append((64 - (prefix + dict.size() + 1) % 64) % 64, ' ');
  dict += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += char(major);
  bytes += char(0);
  for (size_t i = 0; i < lengthBytes; ++i)
    bytes += char((dict.size() >> (8 * i)) & 0xff);
  return bytes + dict + data;
}

std::string floatBytes(std::vector<float> values) {
  return std::string(reinterpret_cast<const char *>(values.data()),
                     values.size() * sizeof(float));
}

class NpyTest : public ::testing::Test {
protected:
  TempDir tempDir;
  std::string dir = tempDir.path();
  std::string path(const std::string &name) { return dir + "/" + name; }

  /// Writes `bytes` to `name` and expects NpyArray::open to fail with a
  /// message that names the file and contains `needle`.
  void expectMalformed(const std::string &name, const std::string &bytes,
                       const std::string &needle) {
    SCOPED_TRACE(name);
    writeFile(path(name), bytes);
    NpyArray array;
    rt::Status status = NpyArray::open(path(name), array);
    ASSERT_FALSE(status.ok());
    EXPECT_NE(status.message().find(path(name)), std::string::npos)
        << status.message();
    EXPECT_NE(status.message().find(needle), std::string::npos)
        << status.message();
  }
};

TEST_F(NpyTest, RoundTripsEveryDType) {
  struct Case {
    DType dtype;
    std::vector<int64_t> shape;
  };
  for (const Case &c :
       {Case{DType::F32, {2, 3, 4}}, Case{DType::F64, {5}},
        Case{DType::I64, {3, 1}}, Case{DType::I32, {}}, Case{DType::I1, {7}},
        Case{DType::F16, {2, 2}}, Case{DType::F32, {0, 3}}}) {
    SCOPED_TRACE(rt::dtypeName(c.dtype));
    int64_t count = 1;
    for (int64_t d : c.shape)
      count *= d;
    std::string data(count * rt::dtypeSize(c.dtype), '\0');
    for (size_t i = 0; i < data.size(); ++i)
      data[i] = char(c.dtype == DType::I1 ? i % 2 : i * 37 + 1);
    std::string file = path(std::string(rt::dtypeName(c.dtype)) + ".npy");
    EXPECT_OK(rt::writeNpy(file, c.dtype, c.shape, data.data()));
    // NumPy aligns the data to 64 bytes; so do we.
    EXPECT_EQ((readFile(file).size() - data.size()) % 64, 0u);
    NpyArray array;
    EXPECT_OK(NpyArray::open(file, array));
    EXPECT_EQ(array.dtype(), c.dtype);
    EXPECT_EQ(array.shape(), c.shape);
    EXPECT_EQ(array.numElements(), count);
    ASSERT_EQ(array.dataBytes(), data.size());
    std::vector<char> read;
    EXPECT_OK(array.readAll(read));
    EXPECT_EQ(std::string(read.begin(), read.end()), data);
  }
}

TEST_F(NpyTest, WrittenHeaderIsWhatNumPyWrites) {
  // Byte for byte what NumPy 1.x's np.save writes for float32 [1, 2, 3]:
  // header length 0x76, dict padded with spaces to a 128-byte prefix.
  std::string dict = "{'descr': '<f4', 'fortran_order': False, "
                     "'shape': (3,), }";
  std::string expected = std::string("\x93NUMPY\x01\x00\x76\x00", 10) + dict;
  expected.append(127 - expected.size(), ' ');
  expected += '\n';
  std::vector<float> values = {1, 2, 3};
  EXPECT_OK(rt::writeNpy(path("a.npy"), DType::F32, {3}, values.data()));
  EXPECT_EQ(readFile(path("a.npy")), expected + floatBytes(values));
}

TEST_F(NpyTest, ReadsFormatVersions2And3AndOldHeaders) {
  std::string data = floatBytes({1.5f, -2.0f});
  for (int major : {2, 3}) {
    writeFile(path("v.npy"),
              npyBytes(major,
                       "{'descr': '<f4', 'fortran_order': False, "
                       "'shape': (2,), }",
                       data));
    NpyArray array;
    EXPECT_OK(NpyArray::open(path("v.npy"), array));
    EXPECT_EQ(array.shape(), (std::vector<int64_t>{2}));
    std::vector<float> values;
    EXPECT_OK(array.readAll(values));
    EXPECT_EQ(values, (std::vector<float>{1.5f, -2.0f}));
  }
  // Double quotes, no trailing comma, keys in another order, Python 2 longs.
  writeFile(path("old.npy"),
            npyBytes(1,
                     "{\"shape\": (1L, 2L), \"fortran_order\": False, "
                     "\"descr\": \"<f4\"}",
                     data));
  NpyArray array;
  EXPECT_OK(NpyArray::open(path("old.npy"), array));
  EXPECT_EQ(array.shape(), (std::vector<int64_t>{1, 2}));
}

TEST_F(NpyTest, MalformedFilesAreReportedWithTheFileName) {
  const std::string header =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  const std::string data = floatBytes({1, 2});
  std::string good = npyBytes(1, header, data);
  expectMalformed("empty.npy", "", "bad magic");
  expectMalformed("magic.npy", "PK\x03\x04 not numpy at all", "bad magic");
  expectMalformed("short.npy", "\x93NUM", "truncated header");
  expectMalformed("prefix.npy", std::string("\x93NUMPY\x01", 7),
                  "truncated header");
  expectMalformed("cut.npy", good.substr(0, 40), "truncated header");
  expectMalformed("version.npy", npyBytes(4, header, data),
                  "unsupported .npy format version 4.0");
  std::string huge = npyBytes(2, header, data);
  huge[8] = huge[9] = huge[10] = 0;
  huge[11] = 0x40; // 1 GiB header
  expectMalformed("huge.npy", huge, "header too long");
  expectMalformed("bigendian.npy",
                  npyBytes(1,
                           "{'descr': '>f4', 'fortran_order': False, "
                           "'shape': (2,), }",
                           data),
                  "unsupported dtype '>f4'");
  expectMalformed("u2.npy",
                  npyBytes(1,
                           "{'descr': '<u2', 'fortran_order': False, "
                           "'shape': (4,), }",
                           data),
                  "unsupported dtype '<u2'");
  expectMalformed("struct.npy",
                  npyBytes(1,
                           "{'descr': [('a', '<f4')], 'fortran_order': "
                           "False, 'shape': (2,), }",
                           data),
                  "unsupported dtype");
  expectMalformed("fortran.npy",
                  npyBytes(1,
                           "{'descr': '<f4', 'fortran_order': True, "
                           "'shape': (1, 2), }",
                           data),
                  "fortran_order");
  expectMalformed("truncdata.npy", good.substr(0, good.size() - 1),
                  "shape/data size mismatch: shape (2,) of <f4 needs 8 data "
                  "bytes, file has 7");
  expectMalformed("extra.npy", good + "xx", "file has 10");
  expectMalformed("nokey.npy",
                  npyBytes(1, "{'descr': '<f4', 'shape': (2,), }", data),
                  "missing key 'fortran_order'");
  expectMalformed("negative.npy",
                  npyBytes(1,
                           "{'descr': '<f4', 'fortran_order': False, "
                           "'shape': (-2,), }",
                           data),
                  "negative dimension");
  expectMalformed("overflow.npy",
                  npyBytes(1,
                           "{'descr': '<f4', 'fortran_order': False, "
                           "'shape': (99999999999, 99999999999), }",
                           data),
                  "too many elements");
  expectMalformed("notdict.npy", npyBytes(1, "[1, 2]", data),
                  "malformed header: header is not a dict");
  expectMalformed("unknown.npy",
                  npyBytes(1,
                           "{'descr': '<f4', 'fortran_order': False, "
                           "'shape': (2,), 'extra': 1}",
                           data),
                  "unexpected key 'extra'");
}

TEST_F(NpyTest, MissingFileAndDirectory) {
  NpyArray array;
  EXPECT_ERROR(NpyArray::open(path("nope.npy"), array), "cannot open");
  EXPECT_ERROR(NpyArray::open(dir, array), "not a regular file");
}

TEST_F(NpyTest, WriterChecksByteCounts) {
  NpyWriter writer;
  EXPECT_OK(writer.open(path("w.npy"), DType::F32, {2, 2}));
  std::vector<float> row = {1, 2};
  EXPECT_OK(writer.append(row.data(), 8));
  EXPECT_ERROR(writer.append(row.data(), 16), "the shape holds 16");
  EXPECT_ERROR(writer.close(), "incomplete: wrote 8 of 16");
  EXPECT_ERROR(rt::writeNpy(path("b.npy"), DType::BF16, {1}, row.data()),
               "NumPy has no such dtype");
  EXPECT_ERROR(
      rt::writeNpy(dir + "/missing/x.npy", DType::F32, {1}, row.data()),
      "cannot create");
}

TEST_F(NpyTest, ArraysMoveWithoutDoubleClose) {
  EXPECT_OK(
      rt::writeNpy(path("m.npy"), DType::F32, {2}, floatBytes({3, 4}).data()));
  NpyArray first;
  EXPECT_OK(NpyArray::open(path("m.npy"), first));
  NpyArray second = std::move(first);
  std::vector<NpyArray> many;
  many.push_back(std::move(second));
  many.emplace_back();
  float value = 0;
  EXPECT_OK(many[0].readBytes(4, 4, &value));
  EXPECT_EQ(value, 4.0f);
  EXPECT_ERROR(many[1].readBytes(0, 0, &value), "not open");
}

TEST_F(NpyTest, ReadsRowsAndRefusesRangesOutsideTheData) {
  std::vector<float> values(5 * 3);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = float(i);
  EXPECT_OK(rt::writeNpy(path("r.npy"), DType::F32, {5, 3}, values.data()));
  NpyArray array;
  EXPECT_OK(NpyArray::open(path("r.npy"), array));
  EXPECT_EQ(array.numRows(), 5);
  EXPECT_EQ(array.rowBytes(), 12u);
  std::vector<float> rows(6, -1);
  EXPECT_OK(array.readRows(3, 2, rows.data()));
  EXPECT_EQ(rows, (std::vector<float>{9, 10, 11, 12, 13, 14}));
  EXPECT_ERROR(array.readRows(4, 2, rows.data()), path("r.npy"));
  EXPECT_ERROR(array.readRows(-1, 1, rows.data()), "reading rows");
  EXPECT_ERROR(array.readBytes(56, 8, rows.data()), "outside the 60 data bytes");
  // A scalar is one row.
  EXPECT_OK(rt::writeNpy(path("s.npy"), DType::F32, {}, values.data() + 7));
  EXPECT_OK(NpyArray::open(path("s.npy"), array));
  EXPECT_EQ(array.numRows(), 1);
  EXPECT_OK(array.readRows(0, 1, rows.data()));
  EXPECT_EQ(rows[0], 7.0f);
}

// The data is read with pread (or copied from memory after a check of the
// file's size), so a file cut short after it was opened is an
// error naming it ("truncated"), not a SIGBUS as with a mapping.
TEST_F(NpyTest, FileTruncatedAfterOpenIsAnErrorNamingIt) {
  std::vector<float> values(100 * 4, 1.0f);
  EXPECT_OK(rt::writeNpy(path("t.npy"), DType::F32, {100, 4}, values.data()));
  NpyArray array;
  EXPECT_OK(NpyArray::open(path("t.npy"), array));
  ASSERT_EQ(::truncate(path("t.npy").c_str(), 128 + 50 * 16), 0);
  std::vector<float> rows(10 * 4);
  EXPECT_OK(array.readRows(40, 10, rows.data())); // still there
  EXPECT_ERROR(array.readRows(45, 10, rows.data()), path("t.npy") + " was truncated");
  EXPECT_ERROR(array.readRows(90, 10, rows.data()), "truncated");
  std::vector<float> all;
  EXPECT_ERROR(array.readAll(all), "truncated");
}

// A file larger than its caller allows (a parameter of known size given as
// an 8 GB sparse file, or as a symlink to /dev/zero) is refused unread.
TEST_F(NpyTest, SizeLimitAndSpecialFilesAreRefusedUnread) {
  std::vector<float> values(4, 2.0f);
  EXPECT_OK(rt::writeNpy(path("p.npy"), DType::F32, {4}, values.data()));
  NpyArray array;
  EXPECT_OK(NpyArray::open(path("p.npy"), array, rt::npyMaxFileBytes(16)));
  EXPECT_ERROR(NpyArray::open(path("p.npy"), array, 100), "more than the 100 bytes");
  {
    std::ofstream(path("sparse.npy")) << readFile(path("p.npy"));
  }
  ASSERT_EQ(::truncate(path("sparse.npy").c_str(), int64_t(8) << 30), 0);
  EXPECT_ERROR(NpyArray::open(path("sparse.npy"), array, rt::npyMaxFileBytes(16)),
               "is 8589934592 bytes, more than");
  // Without a limit the header is read, and the size does not match it.
  EXPECT_ERROR(NpyArray::open(path("sparse.npy"), array), "shape/data size mismatch");
  ASSERT_EQ(::symlink("/dev/zero", path("zero.npy").c_str()), 0);
  EXPECT_ERROR(NpyArray::open(path("zero.npy"), array), "is a character device");
}

// Outputs replace their target only when complete: an unclosed or failed
// writer leaves the old file, and what is not a regular file is refused.
TEST_F(NpyTest, WriterReplacesTheTargetOnlyWhenClosed) {
  std::vector<float> values = {1, 2, 3, 4};
  EXPECT_OK(rt::writeNpy(path("o.npy"), DType::F32, {2}, values.data()));
  const std::string before = readFile(path("o.npy"));
  {
    NpyWriter writer;
    EXPECT_OK(writer.open(path("o.npy"), DType::F32, {4}));
    EXPECT_OK(writer.append(values.data(), 8));
  }
  EXPECT_EQ(readFile(path("o.npy")), before);
  {
    NpyWriter writer;
    EXPECT_OK(writer.open(path("o.npy"), DType::F32, {4}));
    EXPECT_OK(writer.append(values.data(), 8));
    EXPECT_ERROR(writer.close(), "is unchanged");
  }
  EXPECT_EQ(readFile(path("o.npy")), before);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir),
                          std::filesystem::directory_iterator()),
            1)
      << "a temporary file was left behind";
  EXPECT_OK(rt::writeNpy(path("o.npy"), DType::F32, {4}, values.data()));
  NpyArray array;
  EXPECT_OK(NpyArray::open(path("o.npy"), array));
  EXPECT_EQ(array.shape(), (std::vector<int64_t>{4}));

  ASSERT_EQ(::mkfifo(path("fifo.npy").c_str(), 0600), 0);
  ASSERT_EQ(::symlink("/dev/null", path("null.npy").c_str()), 0);
  NpyWriter writer;
  EXPECT_ERROR(writer.open(path("fifo.npy"), DType::F32, {4}, "--out"),
               "--out: " + path("fifo.npy") + " exists and is a FIFO");
  EXPECT_ERROR(writer.open(path("null.npy"), DType::F32, {4}), "is a symbolic link");
  EXPECT_ERROR(writer.open(dir, DType::F32, {4}), "is a folder");
  EXPECT_TRUE(std::filesystem::is_fifo(path("fifo.npy")));
  EXPECT_TRUE(std::filesystem::is_symlink(path("null.npy")));
}

} // namespace
} // namespace trainc::test
