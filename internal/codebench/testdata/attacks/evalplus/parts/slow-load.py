# Loads for 0.1 s, as a slow import would, before a later sample's add.
import time
time.sleep(0.1)
