//===- TestUtil.h - helpers shared by the runtime tests --------*- C++ -*-===//
//
// Random inputs, a CPU context, and a closeness check that reports the first
// mismatches with their indices. References are computed in double straight
// from the ONNX operator definitions, never by calling the code under test.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_TEST_RUNTIME_TESTUTIL_H
#define TRAINC_TEST_RUNTIME_TESTUTIL_H

#include "cpu/Dnnl.h"
#include "trainc_rt/kernels.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace trainc::test {

using rt::Status;

inline std::unique_ptr<rt::Context> makeContext() {
  std::unique_ptr<rt::Context> context;
  Status status = rt::createContext(context);
  EXPECT_TRUE(status.ok()) << status.message();
  return context;
}

inline std::vector<float> randomFloats(size_t count, unsigned seed,
                                       float low = -1.0f, float high = 1.0f) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> dist(low, high);
  std::vector<float> values(count);
  for (float &v : values)
    v = dist(engine);
  return values;
}

/// |actual - expected| <= atol + rtol * |expected| element-wise, NaN only
/// where NaN is expected.
inline ::testing::AssertionResult allClose(const std::vector<float> &actual,
                                           const std::vector<double> &expected,
                                           double rtol, double atol) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure()
           << "size " << actual.size() << " != " << expected.size();
  size_t bad = 0;
  std::string first;
  for (size_t i = 0; i < actual.size(); ++i) {
    double a = actual[i], e = expected[i];
    bool ok =
        std::isnan(e)
            ? std::isnan(a)
            : (std::isinf(e) ? a == e
                             : std::fabs(a - e) <= atol + rtol * std::fabs(e));
    if (!ok && bad++ < 5)
      first += " [" + std::to_string(i) + "] got " + std::to_string(a) +
               " want " + std::to_string(e) + ";";
  }
  if (bad)
    return ::testing::AssertionFailure()
           << bad << " of " << actual.size() << " elements differ:" << first;
  return ::testing::AssertionSuccess();
}

#define EXPECT_OK(expr)                                                        \
  do {                                                                         \
    ::trainc::rt::Status status_ = (expr);                                     \
    EXPECT_TRUE(status_.ok()) << status_.message();                            \
  } while (0)

/// Expects `expr` to fail with a message containing `needle`.
#define EXPECT_ERROR(expr, needle)                                             \
  do {                                                                         \
    ::trainc::rt::Status status_ = (expr);                                     \
    EXPECT_FALSE(status_.ok()) << "expected an error containing: " << needle;  \
    EXPECT_NE(status_.message().find(needle), std::string::npos)               \
        << "message: " << status_.message();                                   \
  } while (0)

/// A fresh empty folder under gtest's temporary directory, removed with
/// everything in it when the object goes (at the end of the test that owns
/// it), so that test runs leave no trainc-rt-* folders behind.
class TempDir {
public:
  TempDir() {
    std::string pattern = ::testing::TempDir() + "trainc-rt-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    EXPECT_NE(mkdtemp(buffer.data()), nullptr) << pattern << ": " << std::strerror(errno);
    folder = buffer.data();
  }
  ~TempDir() {
    std::error_code error; // a test that failed half-way may leave anything
    std::filesystem::remove_all(folder, error);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;

  const std::string &path() const { return folder; }
  operator const std::string &() const { return folder; }
  std::string operator/(const std::string &name) const { return folder + "/" + name; }

private:
  std::string folder;
};

/// Runs `body` with OpenMP (and hence OpenBLAS) limited to each of the given
/// thread counts, so that both the serial and the parallel code paths of a
/// kernel are exercised whatever the machine.
template <typename Body> void forEachThreadCount(Body body) {
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE("threads=" + std::to_string(threads));
    omp_set_num_threads(threads);
    body();
  }
  omp_set_num_threads(omp_get_num_procs());
}

/// Runs `body` on the oneDNN path of a kind of kernel (environment
/// variable `variable` unset; oneDNN must then have run, as `runs` counts,
/// unless `oneDnnRuns` is false) and on the path oneDNN replaced
/// (`variable`=`value`).
template <typename Body>
void forEachOneDnnPath(const char *variable, const char *value, uint64_t (*runs)(), Body body,
                       bool oneDnnRuns) {
  const uint64_t before = runs();
  unsetenv(variable);
  {
    SCOPED_TRACE("oneDNN");
    body();
  }
  if (oneDnnRuns) {
    EXPECT_GT(runs(), before) << "oneDNN ran nothing (" << variable << ")";
  }
  setenv(variable, value, 1);
  {
    SCOPED_TRACE(value);
    body();
  }
  unsetenv(variable);
}

/// Runs `body` on both convolution paths of the CPU target: oneDNN (which
/// must then have run a convolution, unless `oneDnnRuns` is false: the
/// filter gradient, and the input gradient of fewer than 4 channels, stay
/// on im2col) and im2col + GEMM blocks (TRAINC_CPU_CONV=im2col).
template <typename Body> void forEachConvPath(Body body, bool oneDnnRuns = true) {
  forEachOneDnnPath("TRAINC_CPU_CONV", "im2col", cpu::dnnl_conv::runs, body, oneDnnRuns);
}

/// Runs `body` on both GEMM paths of the CPU target: blocks on oneDNN
/// (which must then have run one, unless `oneDnnRuns` is false: blocks
/// below dnnl_matmul::worthIt stay on OpenBLAS) and every block on OpenBLAS
/// (TRAINC_CPU_GEMM=openblas).
template <typename Body> void forEachGemmPath(Body body, bool oneDnnRuns = true) {
  forEachOneDnnPath("TRAINC_CPU_GEMM", "openblas", cpu::dnnl_matmul::runs, body, oneDnnRuns);
}

} // namespace trainc::test

#endif // TRAINC_TEST_RUNTIME_TESTUTIL_H
