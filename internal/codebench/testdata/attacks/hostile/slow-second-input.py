# Answers its first call right, then loops for ever in the next.
n = 0
def add(x, y):
    global n
    n += 1
    while n > 1:
        pass
    return x + y
