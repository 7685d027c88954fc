"""Signals held over work that an exception at any line would break: acted on after it."""

import os
import signal

import pytest

from nmtkit.core.held_signals import signals_held


def test_held_signals_meet_their_own_handlers_in_turn_once_the_block_is_over():
    seen = []
    before = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    try:
        with pytest.raises(KeyboardInterrupt), signals_held():
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGTERM)  # twice: acted on once, as a pending signal is
            os.kill(os.getpid(), signal.SIGINT)
            sum(range(10_000))  # lines where a handler would run
            assert seen == []
        assert seen == [signal.SIGTERM]  # then Ctrl-C's KeyboardInterrupt, from Python's own handler
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        assert (
            signal.getsignal(signal.SIGTERM) is not before and signal.getsignal(signal.SIGTERM).__name__ == "<lambda>"
        )
    finally:
        signal.signal(signal.SIGTERM, before)


def test_an_ignored_signal_stays_ignored_and_the_block_s_error_wins():
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with signals_held():
            os.kill(os.getpid(), signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)
    with pytest.raises(ValueError), signals_held():
        os.kill(os.getpid(), signal.SIGINT)
        raise ValueError("the work failed")  # the exit it makes, not a KeyboardInterrupt
    assert signal.getsignal(signal.SIGINT) is before
