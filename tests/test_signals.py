"""pytorch_bridge.data.signals: a Ctrl-C whose handler ran inside a finalizer is not lost."""
import gc
import sys
import time

import pytest

from pytorch_bridge.data.signals import redeliver_lost_interrupts


class _RaisesWhenFreed:
    def __del__(self):
        raise KeyboardInterrupt   # what SIGINT's default handler does when it runs inside a finalizer


def _free_one():
    obj = _RaisesWhenFreed()
    del obj
    gc.collect()


def test_without_the_hook_python_drops_it():
    """The oracle that the next test is needed: Python prints the exception and goes on."""
    seen = []
    previous, sys.unraisablehook = sys.unraisablehook, seen.append
    try:
        _free_one()
        for _ in range(100):
            pass
    finally:
        sys.unraisablehook = previous
    assert len(seen) == 1 and seen[0].exc_type is KeyboardInterrupt


def test_an_interrupt_raised_in_a_finalizer_reaches_the_main_thread(sigint_default):
    previous = redeliver_lost_interrupts()
    try:
        with pytest.raises(KeyboardInterrupt):
            _free_one()
            time.sleep(5)   # the redelivered SIGINT ends the sleep
    finally:
        sys.unraisablehook = previous


def test_other_unraisable_exceptions_still_reach_the_previous_hook():
    seen = []
    outer, sys.unraisablehook = sys.unraisablehook, seen.append
    try:
        previous = redeliver_lost_interrupts()

        class RaisesValueError:
            def __del__(self):
                raise ValueError("from a finalizer")

        obj = RaisesValueError()
        del obj
        gc.collect()
        sys.unraisablehook = previous
    finally:
        sys.unraisablehook = outer
    assert len(seen) == 1 and seen[0].exc_type is ValueError
