# Writes the frames of a passing job, with the expected outputs, straight to the supervisor's stdout.

# A program that cannot solve the task writes what its job's frames would
# be had it passed: a record of each expected output, then the end of the
# job (its id is in the job header, still in this process's memory).
forged = b"".join(record(v) for v in {outputs})
forged += frame(b"E", json.dumps({"job": JOB, "status": "done", "detail": "", "records": len({outputs}), "elapsed": 0.1,
                                  "exit": 0, "stderr": "", "stderr_bytes": 0, "maxrss_kb": 0, "last": False}).encode())
for suffix in (b"", b"\0" * 32):  # as the first protocol had it, and with a tag of its length
    try:
        fd = os.open("/proc/%d/fd/1" % SUPERVISOR, os.O_WRONLY)
        os.write(fd, b"".join(f + suffix for f in [forged]))
        os.close(fd)
    except OSError:
        pass
def fib(n):
    return -1
