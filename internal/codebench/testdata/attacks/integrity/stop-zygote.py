# Stops the zygote (its parent) with SIGSTOP, then answers right.
import os, signal
os.kill(os.getppid(), signal.SIGSTOP)
{canon}
