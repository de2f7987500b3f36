//===- TensorBoard.h - scalars as TensorBoard event files -------*- C++ -*-===//
//
// Internal to the runtime: --tensorboard DIR. Each run writes a new file
// DIR/events.out.tfevents.<seconds>.<host>.<pid>.trainc in TensorBoard's
// format: TFRecords (length, masked CRC-32C of the length, an Event, masked
// CRC-32C of the Event) whose Events are the file version and then one
// Summary of simple_value scalars per step and per evaluation. TensorBoard
// shows them while the run trains; a resumed run's new file starts again at
// the checkpoint's step, and TensorBoard drops the killed run's later steps
// (its purge of orphaned data).
//
// The three messages (Event, Summary, Summary.Value) are encoded by hand,
// seven fields of protobuf's wire format: linking libprotobuf and
// TensorBoard's .proto tree into every trainer for them would cost more
// than the encoding; test/lit/train/tensorboard.test reads the files back
// with TensorBoard's own EventAccumulator.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_TENSORBOARD_H
#define TRAINC_RT_COMMON_TENSORBOARD_H

#include "FileIO.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace trainc::rt::detail {

/// CRC-32C (Castagnoli), as TFRecords checksum their parts.
uint32_t crc32c(const void *data, size_t bytes);

class TensorBoardWriter {
public:
  bool enabled() const { return file.valid(); }
  /// Creates `dir` if needed and a new event file in it (never an existing
  /// one), with the file-version event.
  Status open(const std::string &dir);
  /// One event: the scalars `values` (tag, value) at `step`.
  Status scalars(int64_t step, double wallTime,
                 const std::vector<std::pair<std::string, double>> &values);
  /// fsync(): the events so far survive a crash.
  Status sync();
  const std::string &path() const { return filePath; }

private:
  Status record(const std::string &event);
  std::string filePath;
  FileHandle file;
};

} // namespace trainc::rt::detail

#endif // TRAINC_RT_COMMON_TENSORBOARD_H
