"""What a path given on the command line is, for one clear error line.

``os.path.isfile`` is False for a directory, a FIFO or ``/dev/zero`` just as
for a missing path; saying "no such file" about a path that exists misleads.
"""

import os
import stat

__all__ = ["not_a_regular_file"]

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def not_a_regular_file(path, or_directory=False):
    """Why ``path`` is not a regular file (nor, with ``or_directory``, a
    directory), as ``PATH: ...``; None when it is one."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return f"{path}: no such file" + (" or directory" if or_directory else "")
    except OSError as error:
        return f"{path}: {error.strerror or error}"
    if stat.S_ISREG(mode) or (or_directory and stat.S_ISDIR(mode)):
        return None
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    wanted = "a file or directory" if or_directory else "a file"
    return f"{path}: not {wanted} that can be read as a script ({kind})"
