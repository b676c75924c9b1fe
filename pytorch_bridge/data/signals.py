"""Clean-up that runs when SIGTERM, SIGHUP or SIGINT arrives, before the signal does what it did before.

atexit is not enough: a process ended by SIGTERM or SIGHUP runs none of it. A Python handler alone is not
enough either: Python runs handlers in the main thread between bytecodes, and a training rank's main thread
lives in Lua (or in C called from Lua, e.g. a collective waiting for a dead peer), where no handler runs until
Lua returns, perhaps never. So Python's C-level handler, which runs at once, also writes the signal number
to a wake-up fd, and a daemon thread reading it (lupa releases the GIL while Lua runs) does the clean-up
and, for a signal whose disposition before ours was the default, ends the process the default way at once.
The Python-level handler does the same clean-up (whoever comes first; callbacks are idempotent), then
chains: to the previous handler (SIGINT: KeyboardInterrupt), or to the default action, re-raised.

A signal ignored before (SIG_IGN, e.g. SIGHUP under nohup) or handled from C is left alone. Forked children
(loader workers, pack pools) get the previous dispositions back, so a signal sent to a child does not clean
up or end its parent.
"""
import os
import signal
import sys
import threading

SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)

_callbacks = []   # run (from any thread) on each of SIGNALS; must be idempotent and never block for long
_prev = {}        # signal number -> disposition before ours
_mutex = threading.RLock()
_state = {"pid": None, "wakeup": None, "old_wakeup": -1}


def at_signal(fn):
    """Run fn() when one of SIGNALS arrives. Installs the handlers on first use; that needs the main thread,
    elsewhere (a Store made in a worker thread) it is left to a later call from the main thread."""
    with _mutex:
        if fn not in _callbacks:
            _callbacks.append(fn)
    _install()


def _run_callbacks():
    if not _mutex.acquire(timeout=5):   # another thread is at it and stuck: do not hang the signal
        return
    try:
        for fn in list(_callbacks):
            try:
                fn()
            except Exception:
                pass
    finally:
        _mutex.release()


def redeliver_lost_interrupts():
    """A KeyboardInterrupt raised where Python can only print and drop it (a finalizer, a callback from C)
    would lose the Ctrl-C whose handler ran there. From now on such a one is not printed but delivered
    again to the main thread, whose SIGINT handler runs at its next point that can raise. Returns the
    sys.unraisablehook it replaced, for the caller to put back."""
    previous = sys.unraisablehook

    def hook(unraisable):
        if unraisable.exc_type is None or not issubclass(unraisable.exc_type, KeyboardInterrupt):
            return previous(unraisable)
        while True:
            try:
                _redeliver_soon()
                return
            except KeyboardInterrupt:   # a SIGINT handled here, in the hook: send that one again too
                continue

    sys.unraisablehook = hook
    return previous


def _redeliver_soon():
    """SIGINT to the main thread, from another thread a moment from now: sent from here, its handler would
    run at once, still inside the hook that cannot raise. A real signal, so it also ends a wait in a
    system call the way the first one did."""
    timer = threading.Timer(0.01, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT))
    timer.daemon = True
    timer.start()


def _ours(signum):
    return signal.getsignal(signum) is _handler


def _die_by(signum):
    """End this process as `signum`'s default action does (what the parent sees is unchanged)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signum, signal.SIG_DFL)
    else:   # signal.signal() is main-thread only; Python's C handler would just catch it again
        try:
            import ctypes
            libc = ctypes.CDLL(None)
            libc.signal.restype = ctypes.c_void_p
            libc.signal.argtypes = (ctypes.c_int, ctypes.c_void_p)
            libc.signal(signum, None)   # SIG_DFL
        except (OSError, AttributeError):
            os._exit(128 + signum)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
    os.kill(os.getpid(), signum)
    os._exit(128 + signum)   # not reached unless the signal is blocked elsewhere


def _handler(signum, frame):
    _run_callbacks()
    prev = _prev.get(signum, signal.SIG_DFL)
    if callable(prev):
        return prev(signum, frame)
    _die_by(signum)


def _watch(fd):
    while True:
        try:
            data = os.read(fd, 64)
        except InterruptedError:
            continue
        except OSError:
            return
        if not data:
            return
        if _state["old_wakeup"] >= 0:   # someone's wake-up fd (asyncio) was there first: it gets them too
            try:
                os.write(_state["old_wakeup"], data)
            except OSError:
                pass
        for signum in set(data):
            # only while our handler is the one installed: a handler set after ours decides for itself
            if signum in _prev and _ours(signum) and _state["pid"] == os.getpid():
                _run_callbacks()
                if _prev[signum] is signal.SIG_DFL:   # the handler would end it too, but maybe never runs
                    _die_by(signum)


def _after_fork_in_child():
    """A forked child gets back the dispositions from before ours (and no wake-up fd of its parent)."""
    if _state["pid"] is None:
        return
    try:
        signal.set_wakeup_fd(-1)
        for signum, prev in _prev.items():
            if _ours(signum):
                signal.signal(signum, prev)
    except (ValueError, OSError):
        pass
    for fd in _state["wakeup"]:
        try:
            os.close(fd)
        except OSError:
            pass
    _state.update(pid=None, wakeup=None, old_wakeup=-1)
    _prev.clear()


def _install():
    if _state["pid"] == os.getpid() or threading.current_thread() is not threading.main_thread():
        return
    with _mutex:
        r, w = os.pipe()
        os.set_blocking(w, False)
        try:
            old = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        except ValueError:   # not the main interpreter
            os.close(r)
            os.close(w)
            return
        _state.update(pid=os.getpid(), wakeup=(r, w), old_wakeup=old)
        for signum in SIGNALS:
            prev = signal.getsignal(signum)
            if prev is signal.SIG_IGN or prev is None or prev is _handler:
                continue
            _prev[signum] = prev
            signal.signal(signum, _handler)
        threading.Thread(target=_watch, args=(r,), name="luatorch-signal-cleanup", daemon=True).start()


os.register_at_fork(after_in_child=_after_fork_in_child)
