# Spends 1.5 CPU-s in input 0's call, over its limit of 1 s, then answers right.

_first = True
def fib(n):
    global _first
    if _first:
        _first = False
        _burn(1.5)
    return _fib(n)
