"""cpu_time.py OUT ERR CMD...: run CMD with stdout to OUT and stderr to ERR;
print "SECONDS PEAK_KIB": the CPU time (user + system) CMD and its threads
took, from the child's rusage, and its peak resident set. Exits 1 if CMD
fails (127 if it cannot be run)."""
import os
import sys


def main():
    out = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    err = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    pid = os.fork()
    if pid == 0:
        os.dup2(out, 1)
        os.dup2(err, 2)
        try:
            os.execvp(sys.argv[3], sys.argv[3:])
        finally:
            os._exit(127)
    _, status, ru = os.wait4(pid, 0)
    print("%.6f %d" % (ru.ru_utime + ru.ru_stime, ru.ru_maxrss))
    sys.exit(os.waitstatus_to_exitcode(status) != 0)


main()
