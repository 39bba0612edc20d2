# Leaves a name in /dev/mqueue and a socket in TIME_WAIT on the loopback, then answers right.

import os, socket
try:
    os.close(os.open("/dev/mqueue/left-behind", os.O_CREAT | os.O_RDWR, 0o600))
except OSError:
    pass
try:
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    cli = socket.create_connection(srv.getsockname())
    conn, _ = srv.accept()
    cli.close()  # the side that closes first holds TIME_WAIT for a minute
    conn.close()
    srv.close()
except OSError:
    pass
{canon}
