"""OpenMP's threads sleep between parallel regions unless the user says otherwise: set before libgomp loads
(it reads the setting once, when it is loaded), so that OpenBLAS's threads get the cores between our
OpenMP regions (pytorch_bridge/native.py says what was measured)."""
import os
import subprocess
import sys

PROBE = """
import os
def gomp_loaded():
    with open('/proc/self/maps') as f:
        return any('libgomp' in line for line in f)
before = gomp_loaded()
import pytorch_bridge.native
print(before, gomp_loaded(), os.environ.get('OMP_WAIT_POLICY'))
"""


def probe(**env):
    base = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    r = subprocess.run([sys.executable, "-c", PROBE], env={**base, **env}, capture_output=True, text=True,
                       timeout=120, cwd="/")
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_passive_by_default_and_set_before_libgomp_loads():
    before, after, policy = probe()
    assert before == "False" and after == "True"   # the library that reads it was not loaded yet
    assert policy == "PASSIVE"


def test_the_users_setting_wins():
    assert probe(OMP_WAIT_POLICY="ACTIVE")[2] == "ACTIVE"
