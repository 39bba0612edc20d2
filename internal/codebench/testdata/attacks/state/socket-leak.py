# Leaves 1,000 unix datagram sockets, each holding its own descriptor and 192 KiB, that outlive the job under gVisor.

import array, socket
for i in range(1000):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
        s.bind("\0repro-leak-%d" % i)
        s.sendmsg([bytes(192 << 10)], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [s.fileno()]))], 0, "\0repro-leak-%d" % i)
    except OSError:
        pass
    s.close()
{canon}
