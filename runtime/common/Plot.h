//===- Plot.h - curves drawn by matplotlib ----------------------*- C++ -*-===//
//
// Internal to the runtime (and `trainc plot`): python/trainc_plot.py, whose
// text is compiled in, run by the python3 on PATH with matplotlib. No C++
// plotting library draws as the field's tools do; the script is the one
// place that knows the curves' layout.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_PLOT_H
#define TRAINC_RT_COMMON_PLOT_H

#include "trainc_rt/status.h"

#include <string>
#include <vector>

namespace trainc::rt::detail {

/// Runs the plot script with `args` (its command line: LOG.jsonl... -o
/// OUT.png); the arguments go to python3 as they are, through no shell. An
/// error says why nothing was drawn (no python3, no matplotlib, the
/// script's own message).
Status drawCurves(const std::vector<std::string> &args);

} // namespace trainc::rt::detail

#endif // TRAINC_RT_COMMON_PLOT_H
