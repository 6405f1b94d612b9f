"""Unit tests of the GPU simulator (tests/testbed/gpusim): put tests/testbed on sys.path."""
import os
import sys

TESTBED = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "testbed"))
if TESTBED not in sys.path:
    sys.path.insert(0, TESTBED)
