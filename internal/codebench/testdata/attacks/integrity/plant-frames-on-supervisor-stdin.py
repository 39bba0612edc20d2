# Passes, and leaves a process that writes cancels, a job and garbage to the supervisor's stdin for the next job to read.

# A job that passes plants frames for the next one (cancels of the next
# job ids, a job of its own, garbage) from a process that writes until it
# is killed, hoping they are read during the next job.
import time
if os.fork() == 0:
    try:
        fd = os.open("/proc/%d/fd/0" % SUPERVISOR, os.O_WRONLY | os.O_NONBLOCK)
        plant = b"".join(frame(b"C", struct.pack(">I", JOB + i)) for i in range(1, 8))
        plant += frame(b"J", b'{"job": %d}' % (JOB + 1)) + b"\x00" * 64
        while True:
            try:
                os.write(fd, plant)
            except OSError:
                pass
            time.sleep(0.01)
    finally:
        os._exit(0)
{canon}
