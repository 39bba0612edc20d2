# Defines a right add, then loops for ever while it loads.
def add(x, y):
    return x + y
while True:
    pass
