"""Kafka emission controls: ``EmitStrategy`` and ``Suppressed``.

Example:
    >>> import kstreamlike as ks
    >>> ks.EmitStrategy.on_window_close()
    EmitStrategy(on_close=True)
    >>> ks.Suppressed.until_window_closes()
    Suppressed.until_window_closes()
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["EmitStrategy", "Suppressed"]


@dataclass(frozen=True)
class EmitStrategy:
    """When a windowed aggregation forwards results (Kafka ``EmitStrategy``).

    ``on_window_update()`` (the default) forwards every change of every window, a changelog.
    ``on_window_close()`` forwards each window once, when stream time passes its end plus the
    grace period.

    Example:
        >>> import kstreamlike as ks
        >>> ks.EmitStrategy.on_window_update().on_close
        False
    """

    on_close: bool

    @classmethod
    def on_window_update(cls) -> EmitStrategy:
        """Forward every update (Kafka ``EmitStrategy.onWindowUpdate()``).

        Example:
            >>> import kstreamlike as ks
            >>> ks.EmitStrategy.on_window_update()
            EmitStrategy(on_close=False)
        """
        return cls(False)

    @classmethod
    def on_window_close(cls) -> EmitStrategy:
        """Forward each window once, when it closes (Kafka ``EmitStrategy.onWindowClose()``).

        Example:
            >>> import kstreamlike as ks
            >>> ks.EmitStrategy.on_window_close()
            EmitStrategy(on_close=True)
        """
        return cls(True)


@dataclass(frozen=True, repr=False)
class Suppressed:
    """Suppression of a windowed table's changelog (Kafka ``Suppressed``).

    Only ``until_window_closes()`` with an unbounded buffer exists here: with a replayed
    frame there is no memory pressure, so the buffer never emits early.

    Example:
        >>> import kstreamlike as ks
        >>> ks.Suppressed.until_window_closes()
        Suppressed.until_window_closes()
    """

    @classmethod
    def until_window_closes(cls) -> Suppressed:
        """Hold every window's updates and emit its final value once it closes.

        Example:
            >>> import kstreamlike as ks
            >>> isinstance(ks.Suppressed.until_window_closes(), ks.Suppressed)
            True
        """
        return cls()

    def __repr__(self) -> str:
        return "Suppressed.until_window_closes()"
