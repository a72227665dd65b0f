#!/usr/bin/env python3
"""The disk image as users boot it, and Secure Boot. Prints TAP.

  - build/bareperf.img, booted through OVMF as a USB stick, reads the
    bareperf.cfg on it; the shipped bareperf.cfg documents every kernel
    option (kernel/cmdline.c's table) and stream=uart;
  - make image SIGN_KEY= SIGN_CERT= signs the loader with a key made here:
    sbverify accepts it with that certificate, refuses it with another, and
    finds no signature on the unsigned loader;
  - OVMF's Secure Boot build (OVMF_CODE_4M.secboot.fd, with the Debian
    package's snakeoil PK/KEK/db in OVMF_VARS_4M.snakeoil.fd) refuses the
    unsigned image ("Access Denied") and boots one signed with the snakeoil
    key (PkKek-1-snakeoil.key, whose password the package documents).
The three boots run at once.
"""
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import time

from e2e_common import ROOT, Tap, bpqemu

BUILD = os.path.abspath(os.environ.get("BUILD", os.path.join(ROOT, "build")))
WORK = os.path.join(BUILD, "test", "bootimage")
SB_CODE = "/usr/share/OVMF/OVMF_CODE_4M.secboot.fd"
SB_VARS = "/usr/share/OVMF/OVMF_VARS_4M.snakeoil.fd"
SNAKEOIL_KEY = "/usr/share/ovmf/PkKek-1-snakeoil.key"
SNAKEOIL_CERT = "/usr/share/ovmf/PkKek-1-snakeoil.pem"
TIMEOUT = 150
CFG = "app=test_boot -- source=uefi mem=256 marker=from-cfg"

TAP = Tap()
check = TAP.check


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, **kw)


def img_file(img, path, data=None):
    """Read (or replace) a file on the image's FAT partition (1 MiB in)."""
    if data is None:
        return run(["mtype", "-i", f"{img}@@1M", "::" + path]).stdout
    src = os.path.join(WORK, "put.tmp")
    with open(src, "w") as f:
        f.write(data)
    p = run(["mcopy", "-o", "-i", f"{img}@@1M", src, "::" + path])
    if p.returncode:
        raise RuntimeError(f"mcopy into {img}: {p.stderr}")


def make_image(img, key, cert):
    p = run(["make", "-s", f"BUILD={BUILD}", f"IMG={img}", f"IMG_FAT={img}.fat",
             f"SIGN_KEY={key}", f"SIGN_CERT={cert}", img], cwd=ROOT)
    return p.returncode == 0 and os.path.exists(img), p.stdout + p.stderr


def boot(name, img, secure, stop_rx=None):
    """Boot img as a USB stick; returns (kernel exit code or None, console text)."""
    cmd = bpqemu.qemu_command(BUILD, uefi=True, disk=img,
                              vars_file=os.path.join(WORK, name + "-vars.fd"),
                              ovmf_code=SB_CODE if secure else bpqemu.OVMF_CODE,
                              ovmf_vars=SB_VARS if secure else bpqemu.OVMF_VARS)
    if secure:	# the Secure Boot build needs SMM and a secure flash
        cmd[cmd.index("q35")] = "q35,smm=on"
        cmd += ["-global", "driver=cfi.pflash01,property=secure,value=on"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL)
    os.set_blocking(p.stdout.fileno(), False)
    out, t0, stopped = b"", time.monotonic(), False
    while p.poll() is None:
        out += p.stdout.read() or b""
        if stop_rx and re.search(stop_rx, out.decode(errors="replace")):
            stopped = True
            break
        if time.monotonic() - t0 > TIMEOUT:
            break
        time.sleep(0.05)
    if p.poll() is None:
        p.kill()
    p.wait()
    out += p.stdout.read() or b""
    text = out.decode(errors="replace").replace("\r", "")
    with open(os.path.join(WORK, name + ".log"), "w") as f:
        f.write(text)
    if not stopped and p.returncode is not None and p.returncode < 0:
        text += f"\n(killed after {time.monotonic() - t0:.0f} s)"
    return (None if stopped else bpqemu.kernel_status(p.returncode)), text


def shipped_cfg_checks(img):
    cfg = img_file(img, "/bareperf.cfg")
    with open(os.path.join(ROOT, "boot", "bareperf.cfg.example")) as f:
        check(cfg.replace("\r", "") == f.read(), "the image holds boot/bareperf.cfg.example")
    with open(os.path.join(ROOT, "kernel", "cmdline.c")) as f:
        names = re.findall(r'^\t\{ "([a-z_]+)", "', f.read(), re.M)
    missing = [o for o in names if not re.search(rf"^#\s+{o}=", cfg, re.M)]
    check(len(names) >= 10 and not missing,
          f"the shipped bareperf.cfg documents all {len(names)} kernel options", f"missing {missing}")
    check(re.search(r"^#\s+stream=uart\b", cfg, re.M) is not None,
          "the shipped bareperf.cfg documents stream=uart")
    check(not [l for l in cfg.splitlines() if l.strip() and not l.lstrip().startswith("#")],
          "the shipped bareperf.cfg sets nothing (comments only)")


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    img = os.path.join(BUILD, "bareperf.img")
    if not check(os.path.exists(img), "build/bareperf.img exists (make image)"):
        return TAP.done()
    shipped_cfg_checks(img)

    # The image as a user's USB stick, with a bareperf.cfg of ours.
    stick = os.path.join(WORK, "stick.img")
    shutil.copy(img, stick)
    img_file(stick, "/bareperf.cfg", "# a user's bareperf.cfg\n" + CFG + "\n")
    unsigned = os.path.join(WORK, "unsigned.img")
    shutil.copy(stick, unsigned)

    # A key made here: make image signs, sbverify checks.
    key, cert = os.path.join(WORK, "test.key"), os.path.join(WORK, "test.crt")
    other_key, other = os.path.join(WORK, "other.key"), os.path.join(WORK, "other.crt")
    for k, c in ((key, cert), (other_key, other)):
        p = run(["openssl", "req", "-new", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                 "-subj", "/CN=bareperf test key/", "-keyout", k, "-out", c])
        check(p.returncode == 0, f"openssl made a test key {os.path.basename(k)}", p.stderr[-200:])
    signed_test = os.path.join(WORK, "signed-test.img")
    ok, log = make_image(signed_test, key, cert)
    check(ok, "make image SIGN_KEY=test.key SIGN_CERT=test.crt", log[-300:])
    loader = os.path.join(WORK, "BOOTX64.EFI")
    run(["mcopy", "-o", "-i", f"{signed_test}@@1M", "::/EFI/BOOT/BOOTX64.EFI", loader])
    p = run(["sbverify", "--cert", cert, loader])
    check(p.returncode == 0 and "Signature verification OK" in p.stdout + p.stderr,
          "sbverify accepts the signed loader with the test certificate", p.stdout + p.stderr)
    p = run(["sbverify", "--cert", other, loader])
    check(p.returncode != 0, "sbverify refuses it with another certificate")
    p = run(["sbverify", "--list", os.path.join(BUILD, "boot", "BOOTX64.EFI")])
    check("No signature table present" in p.stdout + p.stderr,
          "the unsigned loader has no signature", p.stdout + p.stderr)

    # Signed with the key OVMF's snakeoil variable store trusts.
    snake = os.path.join(WORK, "snakeoil.key")
    p = run(["openssl", "pkey", "-in", SNAKEOIL_KEY, "-passin", "pass:snakeoil", "-out", snake])
    signed = os.path.join(WORK, "signed-snakeoil.img")
    ok, log = make_image(signed, snake, SNAKEOIL_CERT)
    check(p.returncode == 0 and ok, "make image signed with the snakeoil key", log[-300:])
    img_file(signed, "/bareperf.cfg", CFG + "\n")

    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        plain = pool.submit(boot, "stick", stick, False)
        sb_ok = pool.submit(boot, "sb-signed", signed, True)
        sb_no = pool.submit(boot, "sb-unsigned", unsigned, True,
                            r"Access Denied|No bootable option|bareperf-boot:")
    code, text = plain.result()
    check(code == 0 and f'bareperf-boot: cmdline: "{CFG}"' in text and
          re.search(r"^ok \d+ - command line carried marker=from-cfg$", text, re.M) is not None,
          "the image boots from a USB stick and reads its bareperf.cfg", text[-600:])
    code, text = sb_ok.result()
    check(code == 0 and "bareperf-boot: exiting boot services" in text and
          re.search(r"^ok \d+ - command line carried marker=from-cfg$", text, re.M) is not None,
          "Secure Boot on: the loader signed with an enrolled key boots", text[-600:])
    code, text = sb_no.result()
    check("Access Denied" in text and "bareperf-boot:" not in text,
          "Secure Boot on: the unsigned loader is refused (Access Denied)", text[-600:])
    return TAP.done()


if __name__ == "__main__":
    sys.exit(main())
