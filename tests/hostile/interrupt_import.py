"""``python interrupt_import.py MODULE DELAY SIGNAL ARGS...``: run ``customops ARGS...`` and have another
process send it SIGNAL (a name: SIGINT, SIGTERM) DELAY seconds after MODULE starts being imported (from
outside: a thread of this process could not, as a compiled module holds the interpreter while it starts).
DELAY ``now``: this process sends it to itself as the import of MODULE starts, at a known moment (a
compiled module that imports MODULE while it starts gets the interrupt there). Used by test_interrupts.py."""

import os
import runpy
import signal
import subprocess
import sys

KILLER = """
import os, signal, sys, time
if sys.stdin.read(1) == "x":
    time.sleep(float(sys.argv[1]))
    os.kill(int(sys.argv[2]), signal.Signals[sys.argv[3]])
"""

target, delay, signame = sys.argv[1:4]
killer = subprocess.Popen(
    [sys.executable, "-c", KILLER, "0" if delay == "now" else delay, str(os.getpid()), signame],
    stdin=subprocess.PIPE,
)


class Trigger:
    """A finder that finds nothing: it only starts the countdown when ``target`` is looked up."""

    def find_spec(self, name, path=None, target_module=None):
        if name == target and killer.stdin is not None and not killer.stdin.closed:
            if delay == "now":
                killer.stdin.close()
                os.kill(os.getpid(), signal.Signals[signame])
            else:
                killer.stdin.write(b"x")
                killer.stdin.close()
        return None


sys.meta_path.insert(0, Trigger())
sys.argv = ["customops", *sys.argv[4:]]
try:
    runpy.run_module("customops", run_name="__main__", alter_sys=True)
finally:
    if killer.stdin is not None and not killer.stdin.closed:
        killer.stdin.close()  # the module was never imported: the killer ends without a signal
    killer.wait()
