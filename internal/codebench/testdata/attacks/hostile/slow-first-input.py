# Loops for ever in its first call.
def add(x, y):
    while True:
        pass
