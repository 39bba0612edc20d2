# Returns a string of 300 MiB.
def longest(strings):
    return 'x' * (300 << 20)
