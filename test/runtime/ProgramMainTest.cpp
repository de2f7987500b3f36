//===- ProgramMainTest.cpp - programMain end to end -----------------------===//
//
// A hand-written Program stands in for generated code: inputs x f32[4, 3]
// and idx i64[4], one parameter p f32[3] (stored 8 bytes into the blob) and
// an unused constant c f32[2]; outputs y = 2 * x + p and code = 10 * idx + 1.
// Batch size 4.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"
#include "common/Npy.h"
#include "trainc_rt/program.h"

#include <cstring>
#include <filesystem>
#include <fstream>

namespace trainc::test {
namespace {

using rt::DType;
using rt::ForwardArgs;
using rt::NpyArray;
using rt::Program;

constexpr int64_t kBatch = 4;

/// What the last forward call saw, for the padding check.
std::vector<float> lastBatchX;
int forwardCalls = 0;
bool failForward = false;

Status forwardTwoXPlusP(rt::Context &ctx, const ForwardArgs &args) {
  (void)ctx;
  ++forwardCalls;
  if (failForward)
    return Status::error("tc.add @ node_7: simulated failure");
  if (reinterpret_cast<uintptr_t>(args.arena) % 256 != 0)
    return Status::error("arena is not 256-byte aligned");
  std::memset(args.arena, 0xff, 64); // the arena must be writable
  const float *x = static_cast<const float *>(args.inputs[0]);
  const int64_t *idx = static_cast<const int64_t *>(args.inputs[1]);
  const float *p = static_cast<const float *>(args.params[0]);
  float *y = static_cast<float *>(args.outputs[0]);
  int64_t *code = static_cast<int64_t *>(args.outputs[1]);
  lastBatchX.assign(x, x + kBatch * 3);
  for (int64_t i = 0; i < kBatch; ++i) {
    for (int64_t j = 0; j < 3; ++j)
      y[i * 3 + j] = 2 * x[i * 3 + j] + p[j];
    code[i] = 10 * idx[i] + 1;
  }
  return Status();
}

const rt::TensorInfo kInputs[] = {{"x", DType::F32, 2, {kBatch, 3}},
                                  {"idx", DType::I64, 1, {kBatch}}};
const rt::TensorInfo kOutputs[] = {{"y", DType::F32, 2, {kBatch, 3}},
                                   {"code", DType::I64, 1, {kBatch}}};
const rt::TensorInfo kScalarOutput[] = {{"loss", DType::F32, 0, {}}};

struct Blob {
  float c[2] = {-1, -1};
  float p[3] = {10, 20, 30};
};
const Blob kBlob;
const rt::ParamInfo kParams[] = {
    {{"p", DType::F32, 1, {3}}, offsetof(Blob, p), 12, true, false},
    // A constant of the computation (uploaded, not a model parameter).
    {{"c", DType::F32, 1, {2}}, offsetof(Blob, c), 8, false, true}};

Program makeProgram() {
  Program program{};
  program.modelName = "two_x_plus_p";
  program.target = "cpu";
  program.batchSize = kBatch;
  program.numInputs = 2;
  program.inputs = kInputs;
  program.numOutputs = 2;
  program.outputs = kOutputs;
  program.numParams = 2;
  program.params = kParams;
  program.paramBlob = reinterpret_cast<const unsigned char *>(&kBlob);
  program.paramBlobBytes = sizeof(Blob);
  program.arenaBytes = 1000;
  program.forward = forwardTwoXPlusP;
  return program;
}

struct Result {
  int code;
  std::string out, err;
};

Result runMain(std::vector<std::string> args,
               const Program &program = makeProgram()) {
  args.insert(args.begin(), "prog");
  std::vector<char *> argv;
  for (std::string &arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  int code = rt::programMain(int(args.size()), argv.data(), program);
  std::string out = ::testing::internal::GetCapturedStdout();
  std::string err = ::testing::internal::GetCapturedStderr();
  return {code, out, err};
}

class ProgramMainTest : public ::testing::Test {
protected:
  void SetUp() override {
    failForward = false;
    forwardCalls = 0;
    std::filesystem::create_directories(data);
  }

  /// Writes x (samples x 3, value 100 * sample + column) and idx.
  void writeInputs(int64_t samples, int64_t idxSamples = -1) {
    std::vector<float> x(samples * 3);
    for (int64_t i = 0; i < samples * 3; ++i)
      x[i] = float(100 * (i / 3) + i % 3);
    EXPECT_OK(
        rt::writeNpy(data + "/x.npy", DType::F32, {samples, 3}, x.data()));
    if (idxSamples < 0)
      idxSamples = samples;
    std::vector<int64_t> idx(idxSamples);
    for (int64_t i = 0; i < idxSamples; ++i)
      idx[i] = i + 7;
    EXPECT_OK(
        rt::writeNpy(data + "/idx.npy", DType::I64, {idxSamples}, idx.data()));
  }

  Result predict() {
    return runMain({"--predict", "--data", data, "--out", out});
  }

  TempDir tempDir;
  std::string dir = tempDir.path();
  std::string data = dir + "/data";
  std::string out = dir + "/out/nested";
};

TEST_F(ProgramMainTest, PredictWithShortLastBatch) {
  writeInputs(10); // batches of 4, 4 and 2
  Result r = predict();
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(forwardCalls, 3);
  EXPECT_NE(r.err.find("predict: 10 samples, 3 batches of 4"),
            std::string::npos)
      << r.err;
  // The padding rows of the last batch are zeros.
  ASSERT_EQ(lastBatchX.size(), 12u);
  for (int i = 6; i < 12; ++i)
    EXPECT_EQ(lastBatchX[i], 0.0f) << i;
  EXPECT_EQ(lastBatchX[3], 900.0f); // sample 9, column 0

  NpyArray y, code;
  EXPECT_OK(NpyArray::open(out + "/y.npy", y));
  EXPECT_OK(NpyArray::open(out + "/code.npy", code));
  ASSERT_EQ(y.shape(), (std::vector<int64_t>{10, 3}));
  ASSERT_EQ(code.shape(), (std::vector<int64_t>{10}));
  EXPECT_EQ(code.dtype(), DType::I64);
  std::vector<float> yv;
  std::vector<int64_t> cv;
  ASSERT_TRUE(y.readAll(yv).ok() && code.readAll(cv).ok());
  for (int64_t i = 0; i < 10; ++i) {
    for (int64_t j = 0; j < 3; ++j)
      EXPECT_EQ(yv[i * 3 + j], 2.0f * (100 * i + j) + 10 * (j + 1));
    EXPECT_EQ(cv[i], 10 * (i + 7) + 1);
  }
}

TEST_F(ProgramMainTest, PredictExactBatchesAndThreads) {
  writeInputs(8);
  Result r = runMain(
      {"--predict", "--data=" + data, "--out=" + out, "--threads", "1"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(forwardCalls, 2);
  omp_set_num_threads(omp_get_num_procs());
}

TEST_F(ProgramMainTest, WrongDType) {
  writeInputs(5);
  std::vector<double> x(15);
  EXPECT_OK(rt::writeNpy(data + "/x.npy", DType::F64, {5, 3}, x.data()));
  Result r = predict();
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("input x: " + data +
                       "/x.npy has dtype f64 (<f8), expected f32 (<f4)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(forwardCalls, 0);
}

TEST_F(ProgramMainTest, WrongShape) {
  writeInputs(5);
  std::vector<float> x(20);
  EXPECT_OK(rt::writeNpy(data + "/x.npy", DType::F32, {5, 4}, x.data()));
  Result r = predict();
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("has shape (5, 4), expected (N, 3)"), std::string::npos)
      << r.err;
  EXPECT_OK(rt::writeNpy(data + "/x.npy", DType::F32, {15}, x.data()));
  r = predict();
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("has shape (15,), expected (N, 3)"), std::string::npos)
      << r.err;
}

TEST_F(ProgramMainTest, MismatchedSampleCounts) {
  writeInputs(10, 9);
  Result r = predict();
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("input idx: " + data + "/idx.npy has 9 samples, but " +
                       data + "/x.npy has 10"),
            std::string::npos)
      << r.err;
}

TEST_F(ProgramMainTest, MissingInputFile) {
  writeInputs(3);
  std::filesystem::remove(data + "/idx.npy");
  Result r = predict();
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("input idx: cannot open " + data + "/idx.npy"),
            std::string::npos)
      << r.err;
}

TEST_F(ProgramMainTest, MalformedInputFile) {
  writeInputs(3);
  std::ofstream(data + "/x.npy") << "garbage";
  Result r = predict();
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("x.npy: bad magic"), std::string::npos) << r.err;
}

TEST_F(ProgramMainTest, OutputWithoutBatchAxisFailsBeforeRunning) {
  writeInputs(3);
  Program program = makeProgram();
  program.numOutputs = 1;
  program.outputs = kScalarOutput;
  Result r = runMain({"--predict", "--data", data, "--out", out}, program);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("output loss f32[] has no batch axis; --predict needs "
                       "per-sample outputs"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(forwardCalls, 0);
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST_F(ProgramMainTest, ForwardFailureIsReported) {
  writeInputs(6);
  failForward = true;
  Result r = predict();
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("forward failed on batch 0 (samples 0 to 3): tc.add "
                       "@ node_7: simulated failure"),
            std::string::npos)
      << r.err;
}

TEST_F(ProgramMainTest, ZeroSamplesWriteEmptyOutputs) {
  writeInputs(0);
  Result r = predict();
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(forwardCalls, 0);
  NpyArray y;
  EXPECT_OK(NpyArray::open(out + "/y.npy", y));
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{0, 3}));
}

TEST_F(ProgramMainTest, HelpInfoAndBadArguments) {
  Result r = runMain({"--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("prog --predict --data DIR --out OUTDIR"),
            std::string::npos);

  r = runMain({"--info"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("model: two_x_plus_p\ntarget: cpu\nbatch size: 4\n"
                       "inputs:\n  x: f32[4, 3]\n  idx: i64[4]\noutputs:\n"
                       "  y: f32[4, 3]\n  code: i64[4]\n"
                       "parameters: 1 (1 trainable), 12 bytes\n"
                       "constants: 1, 8 bytes\n"
                       "arena: 1000 bytes\n"),
            std::string::npos)
      << r.out;
  // Without a fingerprint (an older program), --info says what that means.
  EXPECT_NE(r.out.find("fingerprint: none (--resume cannot check"), std::string::npos) << r.out;

  r = runMain({});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("usage:"), std::string::npos);
  r = runMain({"--frobnicate"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("unknown argument '--frobnicate'"), std::string::npos);
  r = runMain({"--predict", "--data", data});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--predict needs --data DIR and --out OUTDIR"),
            std::string::npos);
  r = runMain({"--predict", "--data"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--data needs a value"), std::string::npos);
  r = runMain({"--predict", "--threads", "zero"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--threads needs an integer in [1, 4096], got 'zero'"),
            std::string::npos);
}

TEST_F(ProgramMainTest, InconsistentProgramIsRejected) {
  Program program = makeProgram();
  rt::ParamInfo badParams[] = {kParams[0], kParams[1]};
  badParams[0].blobOffset = 16; // 16 + 12 > sizeof(Blob) = 20
  program.params = badParams;
  Result r = runMain({"--info"}, program);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("parameter p: initial value lies outside the "
                       "parameter blob"),
            std::string::npos)
      << r.err;
}

} // namespace
} // namespace trainc::test
