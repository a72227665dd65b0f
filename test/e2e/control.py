#!/usr/bin/env python3
"""End-to-end test of the control channel (apps/control.c): boot with
control=1 stream=uart, then over the serial line list apps and events, run
an app twice in one boot, and send requests that must be refused. Prints
TAP. An independent encoder of the wire format (include/uapi/wire.h): COBS
and CRC32C (test/e2e/e2e_common.py), the frame header and wire_ctl_msg,
written from the header's text.
It sends version 1 frames (which the kernel still reads) and reads the
kernel's version 2 replies.
"""
import os
import struct
import sys
import time

from e2e_common import Progress, Tap, boot, cobs_decode, cobs_encode, crc32c

CH_CONSOLE, CH_CONTROL, CPU_HOST = 0, 3, 0xFFFF
LIST_APPS, LIST_EVENTS, START_RUN = 1, 2, 3
OK, ERROR, ITEM = 0x8001, 0x8002, 0x8003
RUN_APP, RUN_EVENT, RUN_PERIOD, RUN_FREQ, RUN_ARG = 1, 2, 3, 4, 6
RUN_COUNT, RUN_MAX_RATE, RUN_TRACE = 8, 9, 10

seq = 0


def frame(payload):
    global seq
    hdr = struct.pack("<BBHI", 1 << 4 | CH_CONTROL, 1 if seq == 0 else 0, CPU_HOST, seq)
    seq += 1
    body = hdr + payload
    return b"\0" + cobs_encode(body + struct.pack("<I", crc32c(body))) + b"\0"


def msg(kind, value=b""):
    return frame(struct.pack("<HH", kind, len(value)) + value)


def param(kind, value):
    return struct.pack("<HH", kind, len(value)) + value


class NoReply(Exception):
    """The kernel did not answer in time: what it printed last says why."""


class Link:
    def __init__(self, proc):
        self.p, self.buf, self.console = proc, b"", b""
        os.set_blocking(proc.stdout.fileno(), False)

    def replies(self, timeout=30):
        """CONTROL messages from the kernel until OK or ERROR; NoReply,
        with the console's last lines, if none comes within timeout s
        (of the machine's progress: e2e_common.Progress)."""
        out, wait = [], Progress(self.p, timeout)
        while not (late := wait.over()):
            chunk = self.p.stdout.read() or b""
            if chunk:
                wait.output()
            self.buf += chunk
            while b"\0" in self.buf:
                raw, self.buf = self.buf.split(b"\0", 1)
                f = cobs_decode(raw) if raw else None
                if not f or len(f) < 12 or crc32c(f[:-4]) != struct.unpack("<I", f[-4:])[0]:
                    self.console = (self.console + raw)[-4096:]  # text before the stream
                    continue
                # Version 2 frames carry the sender's boot after seq.
                hs = 8 if f[0] >> 4 == 1 else 12
                if f[0] & 0xF == CH_CONSOLE:
                    self.console = (self.console + f[hs:-4])[-4096:]
                if f[0] & 0xF != CH_CONTROL:
                    continue
                kind, n = struct.unpack("<HH", f[hs:hs + 4])
                out.append((kind, f[hs + 4:hs + 4 + n].decode(errors="replace")))
                if kind in (OK, ERROR):
                    return out
            if not chunk:
                if self.p.poll() is not None:
                    break
                time.sleep(0.02)
        state = (f"QEMU exited with status {self.p.returncode}" if self.p.poll() is not None
                 else f"no reply within {late}")
        tail = self.console.decode(errors="replace").replace("\r", "").splitlines()[-12:]
        raise NoReply(state + "; the kernel's last lines:\n" + "\n".join(tail))

    def send(self, data):
        self.p.stdin.write(data)
        self.p.stdin.flush()


def main():
    p = boot("control=1 stream=uart events=none")
    link, T = Link(p), Tap()
    check = T.check

    try:
        link.send(msg(LIST_APPS))
        # The first answer waits for the boot too: QEMU's start, then the
        # kernel's, which on a loaded 2-core host take tens of seconds.
        r = link.replies(timeout=150)
        items = [v for k, v in r if k == ITEM]
        check(r[-1][0] == OK and any(i.startswith("loopnest\t") for i in items)
              and not any(i.startswith("test_") for i in items),
              f"LIST_APPS: {len(items)} apps, loopnest among them, no test apps")
        link.send(msg(LIST_EVENTS))
        r = link.replies()
        check(r[-1][0] == OK and any(v.startswith("cpu-clock\t") for k, v in r if k == ITEM),
              "LIST_EVENTS lists cpu-clock")
        for i in range(2):
            link.send(msg(START_RUN, param(RUN_APP, b"loopnest")
                          + param(RUN_EVENT, b"cpu-clock")
                          + param(RUN_PERIOD, struct.pack("<Q", 100000))))
            r = link.replies(timeout=60)
            check(r[-1] == (OK, "exit 0"), f"START_RUN loopnest, run {i + 1} of one boot: {r[-1]}")
        # A run's other settings: counting events, the rate limit, tracing.
        link.send(msg(START_RUN, param(RUN_APP, b"loopnest") + param(RUN_COUNT, b"tsc")
                      + param(RUN_COUNT, b"task-clock") + param(RUN_MAX_RATE, struct.pack("<Q", 0))
                      + param(RUN_TRACE, b"sieve")))
        # Single-stepping loopnest under TCG (every instruction a #DB trap,
        # sieve's recorded): about 25 s of QEMU's CPU time. Its wall time is
        # that over the share of a core QEMU gets: 80 s and more with both
        # cores busy, past 300 s at load 17; the wait counts the CPU time.
        r = link.replies(timeout=120)
        check(r[-1] == (OK, "exit 0"), f"START_RUN loopnest counting tsc,task-clock, no rate limit, "
              f"tracing sieve: {r[-1]}")
        cases = [
            (msg(0x77), "unknown request type 0x77"),
            (msg(START_RUN, param(RUN_APP, b"nosuchapp")), "no app named 'nosuchapp'"),
            # Running code the host sends is opt-in: code=1 (this boot has not).
            (msg(4, param(1, b"\x90")), "RUN_CODE needs code=1 on the kernel command line"),
            (msg(START_RUN, param(99, b"x")), "unknown parameter 99"),
            (msg(START_RUN, struct.pack("<HH", RUN_APP, 200) + b"loop"), "runs past the message"),
            (msg(START_RUN, param(RUN_PERIOD, b"\1\2\3")), "parameter 3 is malformed"),
            (frame(struct.pack("<HH", LIST_APPS, 9)), "says 9 bytes of value"),
            (msg(START_RUN, param(RUN_APP, b"loopnest") + param(RUN_EVENT, b"cyclez")),
             "cyclez"),
            # Guest tests fault and panic on purpose: never runnable here.
            (msg(START_RUN, param(RUN_APP, b"test_fault") + param(RUN_ARG, b"panic")),
             "'test_fault' is a guest test, not a runnable app"),
            (msg(START_RUN, param(RUN_APP, b"test_smp")), "'test_smp' is a guest test"),
            # Periods and rates go through the kernel's one check.
            (msg(START_RUN, param(RUN_APP, b"loopnest")
                 + param(RUN_PERIOD, struct.pack("<Q", 100000))
                 + param(RUN_FREQ, struct.pack("<Q", 1000))),
             "period=100000 and freq=1000 together"),
            (msg(START_RUN, param(RUN_APP, b"loopnest")
                 + param(RUN_FREQ, struct.pack("<Q", 2**64 - 1))),
             f"freq={2**64 - 1} is above max_rate=100000"),
            (msg(START_RUN, param(RUN_APP, b"loopnest")
                 + param(RUN_PERIOD, struct.pack("<Q", 184467440738))),
             "period=184467440738 ns is longer than the HPET's longest"),
            (msg(START_RUN, param(RUN_APP, b"loopnest")
                 + param(RUN_PERIOD, struct.pack("<Q", 1))),
             "period=1 ns is below the soft PMU's shortest period"),
            (msg(START_RUN, param(RUN_APP, b"loopnest")
                 + param(RUN_PERIOD, struct.pack("<Q", 0))),
             "PERIOD 0 is out of range"),
            # The request's rate limit is the one the check holds FREQ to.
            (msg(START_RUN, param(RUN_APP, b"loopnest")
                 + param(RUN_MAX_RATE, struct.pack("<Q", 500))
                 + param(RUN_FREQ, struct.pack("<Q", 1000))),
             "freq=1000 is above max_rate=500"),
            (msg(START_RUN, param(RUN_APP, b"loopnest")
                 + param(RUN_MAX_RATE, struct.pack("<Q", 2**40))),
             "MAX_RATE 1099511627776 is out of range"),
            (msg(START_RUN, param(RUN_APP, b"loopnest") + param(RUN_COUNT, b"cyclez")),
             "cyclez"),
            # Tracing goes through the same check, before the run starts:
            # no Intel PT under TCG; a function this kernel does not have.
            (msg(START_RUN, param(RUN_APP, b"loopnest") + param(RUN_TRACE, b"pt:all")),
             "trace: pt:all: Intel PT is not available"),
            (msg(START_RUN, param(RUN_APP, b"loopnest") + param(RUN_TRACE, b"nosuchfn")),
             "trace: no function 'nosuchfn' in this kernel"),
        ]
        for data, want in cases:
            link.send(data)
            r = link.replies()
            check(r[-1][0] == ERROR and want in r[-1][1], f"refused: {r[-1][1]!r}")
        # A damaged frame is ignored (no reply); the next request still works.
        bad = bytearray(msg(LIST_APPS))
        bad[5] ^= 0x40
        link.send(bytes(bad) + msg(LIST_EVENTS))
        r = link.replies()
        check(r[-1][0] == OK and any(v.startswith("cpu-clock") for k, v in r if k == ITEM)
              and not any(v.startswith("loopnest") for k, v in r if k == ITEM),
              "a frame with a bad CRC is ignored; the next request is answered")
    except NoReply as e:
        # One request unanswered: the rest would each wait in vain.
        check(False, "the kernel answers every request", str(e))
    finally:
        p.kill()
        p.wait()
    return T.done()


if __name__ == "__main__":
    sys.exit(main())
