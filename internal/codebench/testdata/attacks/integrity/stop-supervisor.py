# Stops the supervisor with SIGSTOP, then answers right.
import signal
os.kill(SUPERVISOR, signal.SIGSTOP)
{canon}
