# Raises an exception in every call.
def longest(strings):
    raise ValueError('no')
