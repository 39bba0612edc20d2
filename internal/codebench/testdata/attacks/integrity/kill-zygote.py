# Kills the zygote (its parent) with SIGKILL, then answers right.
import os, signal
os.kill(os.getppid(), signal.SIGKILL)
{canon}
