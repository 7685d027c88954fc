"""Error types that the command line turns into one line on stderr and exit status 2.

Library code raises these for anything the user can fix (a missing file, bad
UTF-8, mismatched line counts, a vocabulary that does not fit a corpus); any
other exception is a bug and keeps its traceback.
"""


class UserError(Exception):
    """Something the user gave us is wrong; the message says what and where."""


class FormatError(UserError):
    """A file nmtkit should have written (corpus, vocabulary, checkpoint) is malformed."""
