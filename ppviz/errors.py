"""Errors that name the input they belong to.

Every surface shows an input error beside its own control: the CLI names the flag, the page puts
it under the control, the API caller reads ``err.field``. The field is the input's name as the
core spells it (``devices``, ``microbatches``, ``p2p``, a schedule parameter such as ``chunks``, an
estimate input such as ``tp`` or ``hidden``); ``None`` means the input as a whole (the schedule or
the uploaded order). No surface parses the message to find where it belongs.
"""

from __future__ import annotations


class InputError(ValueError):
    """A value ppviz cannot use; the message says what to change, ``field`` says which input."""

    def __init__(self, message: str, *, field: str | None = None):
        super().__init__(message)
        self.field = field
