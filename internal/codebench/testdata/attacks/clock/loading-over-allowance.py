# Loads for 9.5 CPU-s of real work, an empty loop the host sized, against a load allowance of 3 s.

for _ in range({loops}):
    pass
def fib(n):
    return _fib(n)
