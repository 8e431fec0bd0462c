"""``python -m cardtable``: the same as the ``cardtable`` command."""

from cardtable.cli import main

main()
