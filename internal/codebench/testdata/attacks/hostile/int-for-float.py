# Returns an int where a float is wanted.
def truncate_number(x):
    return int(x)
