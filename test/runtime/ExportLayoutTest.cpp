//===- ExportLayoutTest.cpp - the export table is checked before step 1 ---===//

#include "common/TrainChecks.h"

#include <gtest/gtest.h>

using namespace trainc::rt;

namespace {

/// Two parameters (12 and 8 bytes) and a constant, with a model of three
/// segments: 5 bytes, parameter 1, 3 bytes, parameter 0, 2 bytes.
struct Layout {
  ParamInfo params[3] = {
      {{"w", DType::F32, 1, {3}}, 0, 12, true, false},
      {{"b", DType::F32, 1, {2}}, 12, 8, true, false},
      {{"c", DType::F32, 1, {1}}, 20, 4, false, true},
  };
  unsigned char segments[10] = {};
  ExportPiece pieces[3] = {{5, 1, 8}, {3, 0, 12}, {2, -1, 0}};
  ExportInfo info = {segments, 10, 3, pieces};
  Program program = {};

  Layout() {
    program.params = params;
    program.numParams = 3;
    program.exportInfo = &info;
  }
  std::string check() {
    uint64_t largest = 0;
    Status s = detail::checkExportLayout(program, largest);
    if (s.ok())
      return "ok " + std::to_string(largest);
    return s.message();
  }
};

TEST(ExportLayoutTest, AGoodTableNamesTheLargestParameter) {
  Layout l;
  EXPECT_EQ(l.check(), "ok 12");
}

TEST(ExportLayoutTest, EveryKindOfBadTableIsAnError) {
  {
    Layout l;
    l.pieces[1].paramBytes = 16;
    EXPECT_EQ(l.check(), "export table of parameter w: 16 bytes in the model, 12 in the program");
  }
  {
    Layout l;
    l.pieces[1].param = 1; // b twice, w never
    EXPECT_EQ(l.check(), "export piece 1 names no parameter of the program");
  }
  {
    Layout l;
    l.pieces[1].param = 2; // a constant
    EXPECT_EQ(l.check(), "export piece 1 names no parameter of the program");
  }
  {
    Layout l;
    l.pieces[1].param = 7;
    EXPECT_EQ(l.check(), "export piece 1 names no parameter of the program");
  }
  {
    Layout l;
    l.pieces[0].segmentBytes = 11;
    EXPECT_EQ(l.check(), "the export's segments end before piece 0");
  }
  {
    Layout l;
    l.info.segmentsBytes = 12; // two bytes no piece covers
    EXPECT_EQ(l.check(), "the export's pieces do not cover its segments");
  }
  {
    Layout l;
    l.info.numPieces = 2; // no tail, w still placed
    EXPECT_EQ(l.check(), "the export's pieces do not cover its segments");
  }
  {
    Layout l;
    l.pieces[0] = {5, -1, 0}; // the tail first: no parameter is placed
    l.info.numPieces = 1;
    EXPECT_EQ(l.check(), "parameter w is not in the export table");
  }
  {
    Layout l;
    l.program.exportInfo = nullptr;
    EXPECT_EQ(l.check(), "this program cannot export: compile it with --optimizer");
  }
}

} // namespace
