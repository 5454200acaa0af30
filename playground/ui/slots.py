"""The app's run slots: how many runs are in flight, in all, and per visitor.

Every entry point that sends work to a server or holds the page's stage -- the stage's Run, a
replay, a ladder, the `/compare` API -- takes a slot before any work is done and gives it back
when the run ends: at most `limit` runs in the process, and a fair share (a quarter of it) per
visitor (ui/context.visitor_of: the client's address, or the one a trusted proxy names).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Slots:
    limit: int = 16  # runs in flight in this process (all sessions)
    running: int = 0
    by_visitor: dict[str, int] = field(default_factory=dict)  # runs in flight per visitor

    @property
    def share(self) -> int:
        """The most runs one visitor (one address) may have in flight: a fair share."""
        return max(1, self.limit // 4)

    def take(self, who: str) -> str:
        """Take a slot for `who`; "" when taken, else why it is busy (for the visitor)."""
        mine = self.by_visitor.get(who, 0)
        if mine >= self.share:
            return (f"you have {mine} runs in flight (other tabs, sessions or API "
                    f"calls); one visitor may run {self.share} at once -- wait for one to end")
        if self.running >= self.limit:
            return (f"{self.running} runs are in flight on this app (the limit is "
                    f"{self.limit}); try again in a moment")
        self.running += 1
        self.by_visitor[who] = mine + 1
        return ""

    def give(self, who: str) -> None:
        self.running -= 1
        self.by_visitor[who] -= 1
        if not self.by_visitor[who]:
            del self.by_visitor[who]
