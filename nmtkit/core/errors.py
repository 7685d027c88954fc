"""Error types that the command line turns into one line on stderr and exit status 2.

Library code raises these for anything the user can fix (a missing file, bad
UTF-8, mismatched line counts, a vocabulary that does not fit a corpus); any
other exception is a bug and keeps its traceback, but :class:`JobFailed`: a
failure outside this process (one line and status 1).
"""


class UserError(Exception):
    """Something the user gave us is wrong; the message says what and where."""


class FormatError(UserError):
    """A file nmtkit should have written (corpus, vocabulary, checkpoint) is malformed."""


class JobFailed(Exception):
    """Work this process cannot go on with for a reason outside it and outside what the user gave
    (another process of the same torchrun job killed): one line on stderr, exit status 1."""

    where: str | None = None  # the command it came from (``nmtkit train``), once the command line knows


class Interrupted(Exception):
    """Work stopped by a signal after saving what it had (``nmtkit train`` on Ctrl-C or SIGTERM):
    the command exits 128 + the signal's number, as a shell reports a killed command, so that a
    script or a Makefile does not go on as if it had finished."""

    def __init__(self, signum: int, abandon: bool = False):
        super().__init__(f"stopped by signal {signum}")
        # the command's threads may still work (serve's model thread, in a search): not waited for
        self.signum, self.abandon = signum, abandon
