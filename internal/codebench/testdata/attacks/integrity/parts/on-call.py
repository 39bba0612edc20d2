# Wraps the canonical fib so that ON_CALL[k](), where the program sets it, runs as fib's k-th call begins.

_fib = fib
_calls = 0
def fib(n):
    global _calls
    _calls += 1
    ON_CALL.get(_calls, lambda: None)()
    return _fib(n)
