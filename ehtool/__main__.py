"""``python3 -m ehtool``."""

import os
import signal

# Ctrl-C while the interpreter imports the command line: exit 130, no traceback
signal.signal(signal.SIGINT, lambda signum, frame: os._exit(130))

from ehtool.cli import interrupt, main  # noqa: E402

signal.signal(signal.SIGINT, interrupt)
main()
