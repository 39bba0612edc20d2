# Solves add correctly in its own words.
def add(x, y):
    return y + x
