# Loops for ever while it loads.
while True:
    pass
