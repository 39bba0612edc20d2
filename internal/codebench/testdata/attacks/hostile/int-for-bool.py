# Returns 1 and 0 for True and False, which EvalPlus also passes.
{canon}
_f = has_close_elements
def has_close_elements(n, t):
    return int(_f(n, t))
