"""The frame of a check suite (test/train/check_*.py): `SUITE TRAINC WORKDIR`,
one line per check ('PASS what' or 'FAIL what') and a closing
'N passed, N failed' that test/run_tests.py reads."""

import os
import sys


def suite_main(body):
    """Runs body(check, trainc, work) with TRAINC and WORKDIR from the
    command line (WORKDIR made if needed); returns the exit status."""
    trainc, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    os.makedirs(work, exist_ok=True)
    results = []

    def check(ok, what):
        results.append(bool(ok))
        print(("PASS " if ok else "FAIL ") + what, flush=True)

    body(check, trainc, work)
    passed = sum(results)
    print("%d passed, %d failed" % (passed, len(results) - passed))
    return 0 if passed == len(results) else 1
