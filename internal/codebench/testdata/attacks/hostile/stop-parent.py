# Stops its parent, the zygote, then sleeps.
import os, signal, time
os.kill(os.getppid(), signal.SIGSTOP)
time.sleep(3600)
