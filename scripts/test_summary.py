#!/usr/bin/env python3
"""Prints `N passed, N failed, N skipped` from ctest's JUnit report (ctest --output-junit FILE).

A test that exits with its SKIP_RETURN_CODE (or matches SKIP_REGULAR_EXPRESSION) is skipped, not
passed: a machine without a GPU or without a model skips tests, and the count says how many.

usage: test_summary.py RESULTS.xml
"""
import sys
import xml.etree.ElementTree as ET


def counts(path):
    passed = failed = skipped = 0
    for case in ET.parse(path).getroot().iter("testcase"):
        status = case.get("status", "")
        if case.find("failure") is not None or case.find("error") is not None or status == "fail":
            failed += 1
        elif case.find("skipped") is not None or status in ("notrun", "disabled"):
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    passed, failed, skipped = counts(sys.argv[1])
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
