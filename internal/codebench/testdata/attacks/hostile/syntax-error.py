# Fails to compile: the def lacks its colon.
def longest(strings)
    return None
