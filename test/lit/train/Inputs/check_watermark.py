"""Reads `trainc compile --report-memory` (argv[1]) and the trainer's
`--report-memory` line (argv[2]) and checks the plan against the arena's
measured high-water mark: the bytes live at the step's busiest op <= the
bytes the steps wrote <= the planned arena, and the buffer placed highest
reaches the arena's last 256-byte slot (the plan has no unused top)."""
import re
import sys

plan = open(sys.argv[1]).read()
run = open(sys.argv[2]).read()
arena = int(re.search(r"^activations\s+(\d+) bytes", plan, re.M).group(1))
peak = int(re.search(r"^  live at the peak\s+(\d+) bytes", plan, re.M).group(1))
m = re.search(r"^arena: (\d+) bytes planned, (\d+) written \(high-water mark\)$", run, re.M)
planned, written = int(m.group(1)), int(m.group(2))
problems = []
if planned != arena:
    problems.append("the trainer's arena (%d) is not the planned one (%d)" % (planned, arena))
if not peak <= written <= arena:
    problems.append("not peak %d <= written %d <= arena %d" % (peak, written, arena))
if written <= arena - 256:
    problems.append("the arena's last 256 bytes were never written (%d of %d)" % (written, arena))
print("\n".join(problems) if problems else
      "peak %d <= written %d <= arena %d" % (peak, written, arena))
sys.exit(1 if problems else 0)
