"""``python -m nmtkit`` is the ``nmtkit`` command, and :func:`run` its console script."""

import atexit
import os
import sys


def run() -> None:
    """The nmtkit command. Ctrl-C while its libraries load (click and rich, a tenth of a second)
    ends it as a Ctrl-C anywhere else does, before the command's own guard is there to: one line
    and status 130, not a traceback."""
    parent = os.getppid()  # before the imports: a launcher that ends meanwhile is seen to have ended
    try:
        from .cli import main
        from .core.stops import ended, last_at_exit, own_process
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(130)
    atexit.register(last_at_exit)  # before the commands' libraries register theirs: it runs after them
    own_process(parent)
    try:
        main()
    except SystemExit as done:
        ended(done.code)
        raise


if __name__ == "__main__":
    run()
