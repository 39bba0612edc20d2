# Leaves SysV shared memory, a semaphore set and a message queue behind for later jobs.

import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
for _ in range(8):
    sid = libc.shmget(0, 64 << 20, 0o1666)
    if sid >= 0:
        a = libc.shmat(sid, None, 0)
        if a not in (None, ctypes.c_void_p(-1).value):
            ctypes.memset(a, 1, 64 << 20)
libc.semget(0x5eed, 4, 0o1666)
libc.msgget(0x5eed, 0o1666)
{canon}
