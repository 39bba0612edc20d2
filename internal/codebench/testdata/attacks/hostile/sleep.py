# Sleeps for an hour in its call.
import time
def add(x, y):
    time.sleep(3600)
