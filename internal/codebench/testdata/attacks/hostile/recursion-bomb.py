# Recurses without end past a raised recursion limit.
import sys
sys.setrecursionlimit(10**7)
def r(n):
    return r(n + 1) + 1
def add(x, y):
    return r(0)
