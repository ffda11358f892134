"""The record of what one installation changed, and the one rule that undoes it.

Every patch, route and redirect ``install()`` makes goes through a
:class:`Changes`: an attribute replaced or added, or any other change with the
callable that reverts it. ``undo()`` reverts them **last first**, whatever
their kind, so a change made on top of another (a hook wrapping a routed
``__init__``, a second install()'s warning policy stacked on the first) is
peeled off before the one below it.

A change offered after ``undo()`` (an import the router served while
``uninstall()`` ran, a Keras package loaded in that moment) is not made: the
record is closed, and nothing outlives it.
"""

import threading

__all__ = ["Changes"]


class Changes:
    """What install() changed, so uninstall() can undo exactly that."""

    def __init__(self):
        self._undo = []  # callables, in the order the changes were made
        self._lock = threading.RLock()
        self.closed = False

    def replace(self, owner, attribute, new):
        """Sets ``owner.attribute`` to ``new``; undone by putting the value back."""
        with self._lock:
            if self.closed:
                return False
            original = getattr(owner, attribute)
            setattr(owner, attribute, new)
            self._undo.append(lambda: setattr(owner, attribute, original))
            return True

    def add(self, owner, attribute, new):
        """Adds ``owner.attribute``; undone by deleting it (or, if ``owner``
        itself had one, by putting that back)."""
        with self._lock:
            if attribute in vars(owner):
                return self.replace(owner, attribute, new)
            if self.closed:
                return False
            setattr(owner, attribute, new)
            self._undo.append(lambda: delattr(owner, attribute))
            return True

    def on_undo(self, action):
        """Records a change made by the caller; ``action()`` reverts it."""
        with self._lock:
            if self.closed:
                action()  # too late to keep it: revert at once
                return False
            self._undo.append(action)
            return True

    def undo(self):
        """Reverts every recorded change, last first, and closes the record."""
        with self._lock:
            self.closed = True
            while self._undo:
                self._undo.pop()()
