# Returns the right items as a tuple, not a list.
{canon}
_f = filter_by_prefix
def filter_by_prefix(s, p):
    return tuple(_f(s, p))
