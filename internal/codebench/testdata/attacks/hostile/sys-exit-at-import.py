# Calls sys.exit(0) while it loads.
import sys
sys.exit(0)
