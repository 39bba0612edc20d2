# Returns a list of 50 Mi items.
def filter_by_prefix(s, p):
    return [p] * (50 << 20)
