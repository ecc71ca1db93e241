"""The demo's verify: a test that keeps failing, the way a stuck task does."""

import sys

print("FAILED test_price.py::test_rounds_half_up - assert round_price(2.675) == 2.68")
print("AssertionError: 2.67 != 2.68")
sys.exit(1)
