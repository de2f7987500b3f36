"""Whether two trainer logs are the same run: every record equal, byte for
byte, once the timing fields (wall_time, samples_per_s) are taken out.
Prints 'same' or the first difference."""
import re
import sys

TIMING = re.compile(r', "(wall_time|samples_per_s)": [0-9.e+-]+')


def records(path):
    with open(path, "rb") as stream:
        return [TIMING.sub("", line.decode()) for line in stream]


a, b = records(sys.argv[1]), records(sys.argv[2])
for number, (x, y) in enumerate(zip(a, b), 1):
    if x != y:
        print("line %d differs:\n%s%s" % (number, x, y))
        sys.exit(1)
print("same" if len(a) == len(b) else "%d lines against %d" % (len(a), len(b)))
